"""The policy keys of workflow.yaml (``defaults:``, ``agents:`` entries as mappings,
``budget:``): read, merged per agent, written back, checked with located errors, and kept
out of the fingerprint, so a workflow without them reads and fingerprints as before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from haytham.errors import DocumentError
from haytham.format.policy import AgentPolicy, Budget, PolicyKeys, RetryPolicy, resolve_policy
from haytham.format.workflow import IDEA_VALIDATION, canonical_data, dump_workflow, load_workflow

PLAIN = """\
name: pipeline
modes:
  all: [1, 2]
phases:
  - {number: 1, name: Draft, agents: [writer]}
  - {number: 2, name: Check, agents: [checker, critic]}
agents:
  writer: my_agents:write
  checker: my_agents:check
"""

WITH_POLICIES = """\
name: pipeline
defaults:
  retry: {max_attempts: 4, initial_interval: 0.5, backoff: 2.0, max_interval: 30, jitter: true}
  on_exhausted: fail
budget: {tokens: 200000, cost: 5.00}
modes:
  all: [1, 2]
phases:
  - {number: 1, name: Draft, agents: [writer], budget: {cost: 1.00}}
  - {number: 2, name: Check, agents: [checker, critic]}
agents:
  writer: {call: my_agents:write, retry: {max_attempts: 6}, timeout: 120, on_exhausted: await_review,
    side_effects: true}
  checker: my_agents:check
  critic: {timeout: 2.5, retry_on: my_agents:is_transient}
"""


def test_each_agent_gets_its_own_keys_over_the_defaults(tmp_path: Path) -> None:
    workflow = load_workflow(_write(tmp_path, WITH_POLICIES))
    assert workflow.policy_of("writer") == AgentPolicy(
        retry=RetryPolicy(max_attempts=6, initial_interval=0.5, backoff=2.0, max_interval=30, jitter=True),
        timeout=120,
        on_exhausted="await_review",
        side_effects=True,
    )
    assert workflow.policy_of("checker") == AgentPolicy(
        retry=RetryPolicy(max_attempts=4, initial_interval=0.5, backoff=2.0, max_interval=30, jitter=True)
    )
    critic = workflow.policy_of("critic")
    assert (critic.timeout, critic.retry_on, critic.retry.max_attempts) == (2.5, "my_agents:is_transient", 4)
    assert workflow.callables == {"writer": "my_agents:write", "checker": "my_agents:check"}
    assert workflow.budget == Budget(tokens=200000, cost=5.0)
    assert [p.budget for p in workflow.phases] == [Budget(cost=1.0), None]


def test_without_the_keys_every_agent_makes_one_try_and_fails_as_before(tmp_path: Path) -> None:
    workflow = load_workflow(_write(tmp_path, PLAIN))
    assert workflow.policy_of("writer") == AgentPolicy() == IDEA_VALIDATION.policy_of("concept_expansion")
    assert AgentPolicy().retry.max_attempts == 1 and AgentPolicy().on_exhausted == "fail"
    assert workflow.budget is None and all(p.budget is None for p in workflow.phases)


def test_policies_and_budgets_are_not_part_of_the_fingerprint(tmp_path: Path) -> None:
    plain = load_workflow(_write(tmp_path, PLAIN, "plain.yaml"))
    tuned = load_workflow(_write(tmp_path, WITH_POLICIES, "tuned.yaml"))
    assert plain != tuned
    assert plain.fingerprint() == tuned.fingerprint()


def test_a_workflow_without_the_keys_is_written_and_read_as_before() -> None:
    text = dump_workflow(IDEA_VALIDATION)
    assert "defaults" not in text and "budget" not in text
    assert canonical_data(text) is not None  # still read without PyYAML


def test_the_keys_are_written_back_and_read_the_same(tmp_path: Path) -> None:
    workflow = load_workflow(_write(tmp_path, WITH_POLICIES))
    text = dump_workflow(workflow)
    assert canonical_data(text) is None  # PyYAML reads the policy keys
    again = load_workflow(_write(tmp_path, text, "again.yaml"))
    assert again == workflow
    assert dump_workflow(again) == text


def test_merging_is_key_by_key_and_retry_field_by_field() -> None:
    defaults = PolicyKeys(retry={"max_attempts": 4, "backoff": 3.0}, timeout=10.0)
    own = PolicyKeys(retry={"max_attempts": 6}, on_exhausted="await_review")
    policy = resolve_policy(defaults, own)
    assert policy.retry == RetryPolicy(max_attempts=6, backoff=3.0)
    assert (policy.timeout, policy.on_exhausted, policy.side_effects) == (10.0, "await_review", False)


def test_the_computed_interval_grows_by_the_backoff_up_to_the_cap() -> None:
    retry = RetryPolicy(initial_interval=0.5, backoff=2.0, max_interval=3.0)
    assert [retry.interval(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


@pytest.mark.parametrize(
    ("edit", "line", "field", "message"),
    [
        (
            ("max_attempts: 6", "max_attempts: 0"),
            12,
            "agents.writer.retry.max_attempts",
            "below the minimum 1",
        ),
        (
            ("max_attempts: 4", "max_attempts: many"),
            3,
            "defaults.retry.max_attempts",
            "'many' is not a whole",
        ),
        (("backoff: 2.0", "backoff: 0.5"), 3, "defaults.retry.backoff", "below the minimum 1"),
        (("jitter: true", "jitter: 3"), 3, "defaults.retry.jitter", "3 is not a boolean"),
        (
            ("timeout: 120", "timeout: 0"),
            12,
            "agents.writer.timeout",
            "0 is less than or equal to the minimum of 0",
        ),
        (("on_exhausted: fail", "on_exhausted: retry"), 4, "defaults.on_exhausted", "'retry' is not one of"),
        (("side_effects: true", "side_effects: maybe"), 13, "agents.writer.side_effects", "not a boolean"),
        (("call: my_agents:write", "call: my_agents.write"), 12, "agents.writer.call", "not module:function"),
        (("retry_on: my_agents:is_transient", "retry_on: oops"), 15, "agents.critic.retry_on", "not module:"),
        (("timeout: 2.5", "tiemout: 2.5"), 15, "agents.critic", "'tiemout' was unexpected"),
        (("budget: {cost: 1.00}", "budget: {cost: -1}"), 9, "phases.0.budget.cost", "below the minimum 0"),
        (("budget: {cost: 1.00}", "budget: {}"), 9, "phases.0.budget", "{} is empty"),
        (("tokens: 200000", "tokens: 1.5"), 5, "budget.tokens", "1.5 is not a whole number"),
        (("budget: {tokens", "budget: {dollars: 3, tokens"), 5, "budget", "'dollars' was unexpected"),
        (("checker: my_agents:check", "checker: 3"), 14, "agents.checker", "3 is not a string or a mapping"),
        (("critic: {", "critik: {"), 15, "agents.critik", "'critik', which no phase runs"),
        (("max_interval: 30", "max_interval: 0.1"), 3, "defaults.retry.initial_interval", "longer than"),
    ],
)
def test_mistakes_name_the_file_line_and_key(
    tmp_path: Path, edit: tuple[str, str], line: int, field: str, message: str
) -> None:
    assert edit[0] in WITH_POLICIES
    path = _write(tmp_path, WITH_POLICIES.replace(*edit, 1))
    with pytest.raises(DocumentError) as raised:
        load_workflow(path)
    assert (raised.value.path, raised.value.line, raised.value.field) == (path, line, field), str(
        raised.value
    )
    assert message in str(raised.value)


def _write(tmp_path: Path, text: str, name: str = "workflow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return path


def test_the_example_of_docs_formats_md_reads_as_it_says(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "formats.md").read_text("utf-8")
    start = text.index("- **Agent policies and budgets.**")
    block = re.search(r"```yaml\n(.*?)```", text[start:], re.S)
    assert block is not None
    example = "\n".join(line.removeprefix("  ") for line in block.group(1).splitlines()) + "\n"
    workflow = load_workflow(_write(tmp_path, example))
    assert workflow.policy_of("writer").retry == RetryPolicy(6, 0.5, 2.0, 30, True)
    assert workflow.budget == Budget(200000, 5.0) and workflow.phases[0].budget == Budget(cost=1.0)
