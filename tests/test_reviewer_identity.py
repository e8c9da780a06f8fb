"""Who a reviewer is (issue 25, "Who and why"): one parse and one match for every place that
records, configures or assigns a reviewer (haytham/format/reviewer.py), and the order in which
the command line finds the current reviewer: --reviewer, HAYTHAM_REVIEWER, haytham.yaml's
review.reviewer, git's author (real git, real haytham.yaml in a temporary directory)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from haytham.cli.common import reviewer_option
from haytham.config import load_config
from haytham.errors import DocumentError, InvalidArgumentError
from haytham.format.reviewer import Reviewer, is_assigned, parse_reviewer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alice Smith <alice@example.com>", Reviewer("Alice Smith", "alice@example.com")),
        ("  Alice Smith   <alice@example.com> ", Reviewer("Alice Smith", "alice@example.com")),
        ("<alice@example.com>", Reviewer("", "alice@example.com")),
        ("alice@example.com", Reviewer("", "alice@example.com")),
        ("Alice", Reviewer("Alice")),
        ("Zoë Ångström", Reviewer("Zoë Ångström")),
    ],
)
def test_parse_reviewer_reads_every_documented_shape(text: str, expected: Reviewer) -> None:
    assert parse_reviewer(text) == expected
    assert parse_reviewer(str(expected)) == expected


@pytest.mark.parametrize("text", ["", "   ", "a\nb", "a <b> <c>", "x" * 201, "<>"])
def test_parse_reviewer_refuses_what_names_nobody(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        parse_reviewer(text)
    assert raised.value.field == "reviewer"


def test_an_entry_matches_by_name_or_address_whatever_the_case() -> None:
    alice = parse_reviewer("Alice Smith <Alice@Example.com>")
    assert is_assigned(alice, ["bob@example.com", "alice@example.com"])
    assert is_assigned(alice, ["alice smith"])
    assert is_assigned(alice, ["Someone Else <alice@example.com>"])  # the address decides
    assert not is_assigned(alice, ["Alice Smith <other@example.com>"])
    assert not is_assigned(alice, ["Alice", "bob@example.com"])
    assert not is_assigned(alice, [])
    assert is_assigned(parse_reviewer("alice@example.com"), ["Alice Smith <alice@example.com>"])


@click.command()
@reviewer_option
def whoami(reviewer: Reviewer | None) -> None:
    click.echo(str(reviewer))


def _git(directory: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=directory, check=True, capture_output=True)


def test_the_cli_finds_the_reviewer_option_then_variable_then_config_then_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HAYTHAM_REVIEWER", raising=False)
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no global git identity
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.name", "Git Author")
    _git(tmp_path, "config", "user.email", "git@example.com")
    runner = CliRunner()
    assert runner.invoke(whoami, []).output == "Git Author <git@example.com>\n"
    (tmp_path / "haytham.yaml").write_text("review:\n  reviewer: Configured <c@example.com>\n")
    assert runner.invoke(whoami, []).output == "Configured <c@example.com>\n"
    assert runner.invoke(whoami, [], env={"HAYTHAM_REVIEWER": "From Env"}).output == "From Env\n"
    said = runner.invoke(whoami, ["--reviewer", "o@example.com"], env={"HAYTHAM_REVIEWER": "From Env"})
    assert said.output == "<o@example.com>\n"
    refused = runner.invoke(whoami, ["--reviewer", "a\nb"])
    assert refused.exit_code == 2 and "names no reviewer" not in refused.output
    assert "one line" in refused.output


def test_a_configured_reviewer_that_names_nobody_is_an_error_at_its_line(tmp_path: Path) -> None:
    config = tmp_path / "haytham.yaml"
    config.write_text("storage:\n  base_dir: projects\nreview:\n  reviewer: '<> <>'\n")
    with pytest.raises(DocumentError) as raised:
        load_config(config)
    assert raised.value.line == 4 and raised.value.field == "review.reviewer"
    config.write_text("review:\n  reviewer: Bob\n")
    assert load_config(config).reviewer == Reviewer("Bob")
