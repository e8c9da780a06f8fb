"""A ReadCache gives back what a read without it gives, and never a stale answer.

The cache is an object its owner passes to ``read``/``read_data``/``read_path``/``load``/
``load_optional``/``parse``; without one nothing is kept anywhere.
"""

from __future__ import annotations

import threading
from pathlib import Path

from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, ReadCache
from haytham.records import UserFeedback

FEEDBACK_RECORD = UserFeedback(
    phase_name="Concept",
    reviewed=True,
    approved=True,
    timestamp="2024-11-24T10:00:00Z",
    comments="fine",
    requested_changes=(),
    action="approved",
    retry_count=0,
)


def test_a_cached_read_gives_the_same_record_without_parsing_again(tmp_path: Path) -> None:
    path = tmp_path / "user_feedback.md"
    path.write_text(FEEDBACK.render(FEEDBACK_RECORD), encoding="utf-8")
    cache = ReadCache()
    first = FEEDBACK.load(path, cache=cache)
    second = FEEDBACK.load(path, cache=cache)
    assert first == FEEDBACK_RECORD
    assert second is first  # the kept record, not a new parse
    assert len(cache) == 1


def test_without_a_cache_every_read_parses() -> None:
    text = FEEDBACK.render(FEEDBACK_RECORD)
    first = FEEDBACK.parse(text)
    assert FEEDBACK.parse(text) is not first
    assert FEEDBACK.parse(text) == first


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "user_feedback.md"
    cache = ReadCache()
    path.write_text(FEEDBACK.render(FEEDBACK_RECORD), encoding="utf-8")
    assert FEEDBACK.load(path, cache=cache).comments == "fine"
    changed = FEEDBACK_RECORD.__class__(**{**FEEDBACK_RECORD.__dict__, "comments": "redo"})
    path.write_text(FEEDBACK.render(changed), encoding="utf-8")
    assert FEEDBACK.load(path, cache=cache).comments == "redo"
    assert FEEDBACK.read(FEEDBACK.render(FEEDBACK_RECORD), path, cache=cache)[0] == FEEDBACK_RECORD


def test_the_same_text_with_other_bytes_is_the_same_record(tmp_path: Path) -> None:
    path = tmp_path / "user_feedback.md"
    text = FEEDBACK.render(FEEDBACK_RECORD)
    cache = ReadCache()
    first, _ = FEEDBACK.read_data(text.encode("utf-8"), path, cache=cache)
    second, _ = FEEDBACK.read_data(b"\xef\xbb\xbf" + text.encode("utf-8"), path, cache=cache)
    assert second is first


def test_kinds_and_paths_are_kept_apart(tmp_path: Path) -> None:
    text = FEEDBACK.render(FEEDBACK_RECORD)
    cache = ReadCache()
    FEEDBACK.read(text, tmp_path / "a.md", cache=cache)
    FEEDBACK.read(text, tmp_path / "b.md", cache=cache)
    record, issues = CHECKPOINT.read(text, tmp_path / "a.md", cache=cache)
    assert record is None and issues  # a feedback text is not a checkpoint
    assert len(cache) == 3


def test_issues_are_cached_too_and_callers_get_their_own_list() -> None:
    cache = ReadCache()
    _, issues = FEEDBACK.read("# User Feedback: X\n", Path("f.md"), cache=cache)
    assert issues
    issues.clear()
    _, again = FEEDBACK.read("# User Feedback: X\n", Path("f.md"), cache=cache)
    assert again


def test_the_cache_is_bounded() -> None:
    cache = ReadCache(max_chars=3000, max_item_chars=2000)
    text = FEEDBACK.render(FEEDBACK_RECORD)
    for index in range(50):
        FEEDBACK.read(text, Path(f"{index}.md"), cache=cache)
        assert cache.chars <= 3000
    assert 0 < len(cache) <= 3000 // len(text)
    long = text + "\n" * 2000
    FEEDBACK.read(long, Path("long.md"), cache=cache)
    assert cache.recall((type(FEEDBACK), Path, "long.md")) is None  # never kept
    cache.clear()
    assert len(cache) == 0 and cache.chars == 0


def test_a_cache_is_safe_across_threads() -> None:
    cache = ReadCache(max_chars=20_000)
    texts = [
        AGENT_OUTPUT.render(
            AGENT_OUTPUT.parse(
                "# Agent Output: a\n\n## Metadata\n- Agent: a\n- Phase: 1 - P\n- Executed: -\n"
                "- Duration: -\n- Status: completed\n\n## Output\n" + f"text {n}\n"
            )
        )
        for n in range(8)
    ]
    expected = [AGENT_OUTPUT.parse(text) for text in texts]
    assert len({record.content for record in expected}) == len(texts)
    failures: list[str] = []

    def work(worker: int) -> None:
        for round_ in range(200):
            index = (worker + round_) % len(texts)
            record = AGENT_OUTPUT.parse(texts[index], Path(f"{round_ % 5}.md"), cache=cache)
            if record != expected[index]:
                failures.append(f"{worker}/{round_}: {record.content!r}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert cache.chars <= 20_000
