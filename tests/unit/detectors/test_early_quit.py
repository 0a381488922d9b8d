"""early_quit (issue 29): a wrap-up far from the context limit with work left is raised
once at the end, with the headroom; a harness's progress note mid-work, a hand-off at a
real limit, a note the task asks for and a stale plan stay quiet."""

from __future__ import annotations

from detectors.early_quit.detector import EarlyQuit
from detectors.testing import Session
from models.records import Alert, Step

SONNET = "claude-sonnet-4-5-20250929"  # 200,000 tokens


def feed(steps: list[Step]) -> list[Alert]:
    detector = EarlyQuit()
    return [a for step in steps for a in detector.update(step)]


def work(s: Session, tokens: int, *, tests_pass: bool = False) -> list[Step]:
    steps = [s.start(), s.model(tokens_in=tokens - 2000, model=SONNET)]
    steps += s.tool("edit_file", {"path": "src/pay.py", "old": "a", "new": "b"})
    steps += s.tool("bash", {"command": "pytest -q"}, ok=tests_pass, error="2 failed")
    steps.append(s.model(tokens_in=tokens, model=SONNET))
    return steps


def note(s: Session, path: str = "PROGRESS.md", content: str = "- [ ] tests") -> list[Step]:
    return [*s.tool("write_file", {"path": path, "content": content})]


def end(s: Session, tokens: int) -> list[Step]:
    return [s.model(tokens_in=tokens, model=SONNET, text="Saved; stopping here."), s.end()]


def test_a_progress_note_far_from_the_limit_with_failing_tests_is_raised() -> None:
    s = Session("quit", goal="Implement partial captures")
    steps = work(s, 60_000)
    wrote = note(s)
    alerts = feed([*steps, *wrote, *end(s, 61_000)])
    assert len(alerts) == 1
    assert alerts[0].onset_step_id == wrote[0].step_id
    assert "tokens of headroom" in alerts[0].reason and "failed" in alerts[0].reason


def test_the_headroom_is_in_the_reason() -> None:
    s = Session("quit", goal="Implement partial captures")
    alerts = feed([*work(s, 60_000), *note(s), *end(s, 60_000)])
    # the last prompt: 60,000 in + 200 out of 200,000
    assert "at 60,200 of 200,000 tokens (30% of its window" in alerts[0].reason
    assert "139,800 tokens of headroom" in alerts[0].reason


def test_a_note_at_a_real_limit_is_quiet() -> None:
    s = Session("full", goal="Implement partial captures")
    assert feed([*work(s, 188_000), *note(s), *end(s, 188_500)]) == []


def test_the_runtimes_compaction_size_is_the_limit() -> None:
    s = Session("compacted", goal="Implement partial captures")
    steps = [*work(s, 60_000), s.compaction(before=90_000, after=20_000)]
    steps.append(s.model(tokens_in=70_000, model=SONNET))  # 78% of where it compacts
    assert feed([*steps, *note(s), *end(s, 70_000)]) == []


def test_a_progress_note_mid_work_is_quiet() -> None:
    s = Session("harness", goal="Work through feature_list.json until every item passes")
    steps = [*work(s, 40_000), *note(s)]
    steps += s.tool("edit_file", {"path": "src/next.py", "old": "a", "new": "b"})
    steps += s.tool("bash", {"command": "pytest -q"})
    assert feed([*steps, *end(s, 41_000)]) == []


def test_a_note_the_task_asks_for_is_quiet() -> None:
    s = Session("asked", goal="Fix the bug and write a short SUMMARY.md for the reviewer")
    steps = [*work(s, 20_000), *note(s, "SUMMARY.md", "# Summary")]
    assert feed([*steps, *end(s, 20_000)]) == []


def test_finished_work_with_a_note_is_quiet() -> None:
    s = Session("done", goal="Implement partial captures")
    steps = [*work(s, 30_000, tests_pass=True), *note(s, content="all done")]
    assert feed([*steps, *end(s, 30_000)]) == []


def test_a_final_answer_over_a_fresh_open_plan_is_raised_and_a_stale_plan_is_not() -> None:
    plan = {"plan": [{"step": "a", "status": "completed"}, {"step": "b", "status": "pending"}]}
    s = Session("plan", goal="Paginate every endpoint")
    fresh = [*work(s, 50_000), *s.tool("update_plan", plan), *end(s, 50_000)]
    assert len(feed(fresh)) == 1
    s = Session("stale", goal="Paginate every endpoint")
    stale = [s.start(), *s.tool("update_plan", plan), *work(s, 50_000)[1:], *end(s, 50_000)]
    assert feed(stale) == []


def test_an_unknown_model_is_quiet() -> None:
    s = Session("unknown", goal="Implement partial captures")
    steps = [s.start(), s.model(tokens_in=1_000, model="house-model-7")]
    steps += note(s)
    steps += [s.model(tokens_in=1_000, model="house-model-7"), s.end()]
    assert feed(steps) == []
