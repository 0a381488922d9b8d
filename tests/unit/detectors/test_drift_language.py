"""Intent drift against a goal written in another language than the calls: words not
shared with it are weaker evidence (:data:`detectors.intent_drift.weigh.
CROSS_LANGUAGE_FACTOR`), so an English call carrying out a Portuguese request is not
off the task for want of shared words, while a long tangent still fires."""

from __future__ import annotations

from detectors.intent_drift.detector import IntentDrift
from detectors.intent_drift.language import written_in_english
from detectors.testing import Session
from models.records import Alert, Step

ENGLISH = "Check the figures of our 2023 fact-check and cite the newer checks by other newsrooms."
PORTUGUESE = (
    "Verifique de novo os números da nossa checagem de 2023 e cite as checagens mais "
    "recentes de outras redações."
)
TANGENT = [
    "medieval castle architecture Bavaria",
    "Neuschwanstein tower construction history",
    "Neuschwanstein castle tours tickets",
    "Bavarian palace gardens opening",
    "King Ludwig palace builders",
    "alpine castle restoration costs",
]


def run(goal: str, queries: list[str]) -> list[Alert]:
    s = Session("l", goal=goal)
    steps: list[Step] = [s.start()]
    steps += s.tool("read_file", {"path": "factcheck.md"}, result="the claim and its sources")
    for q in queries:
        steps += s.tool("web_search", {"query": q})
    detector = IntentDrift()
    return [a for st in steps for a in detector.update(st)]


def test_the_goals_language_is_told_apart() -> None:
    assert written_in_english(ENGLISH)
    assert not written_in_english(PORTUGUESE)


def test_four_unshared_queries_are_drift_against_an_english_goal_only() -> None:
    assert run(ENGLISH, TANGENT[:4])
    assert not run(PORTUGUESE, TANGENT[:4])


def test_a_longer_tangent_still_fires_against_a_goal_in_another_language() -> None:
    alerts = run(PORTUGUESE, TANGENT)
    assert alerts and alerts[0].severity.value == "warn"
