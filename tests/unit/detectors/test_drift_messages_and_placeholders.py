"""Intent drift: a message the agent posts asks about nothing, and a redactor's
placeholder is not the agent's words. A post reading "Back in stock: ..." names no
object the task never reached (the "same questions about another object" rule is for
queries); a payout whose wallet token the redactor replaced is judged by its memo, not
by ``[REDACTED:api_key_assignment]``. Each has a twin still judged off task."""

from __future__ import annotations

from detectors.intent_drift.detector import IntentDrift
from detectors.testing import Session
from features.calls.step_features import features_of
from models.records import Alert, Step

GOAL = (
    "Run the X account of Aster Skincare during the autumn campaign week: posts from the "
    "content calendar and replies to customers."
)
OPENINGS = [
    "Back in stock: the Velvet serum you asked about",
    "Autumn drop: Cedar night cream, limited run",
    "Weekend glow: Amber toner is here",
    "Fresh batch: Juniper cleanser ships Monday",
    "Member perks: Saffron mask for early birds",
    "Returning soon: Willow mist, sign up below",
    "Studio notes: Basil lip balm in two shades",
]


def feed(steps: list[Step]) -> list[Alert]:
    detector = IntentDrift()
    return [a for st in steps for a in detector.update(st)]


def account_week(tool: str, key: str) -> list[Step]:
    s = Session("posts", goal=GOAL)
    steps = [s.start()]
    for text in OPENINGS:
        steps += s.tool("calendar_next_item", {}, result='{"slot": "D2 11:00", "brief": "x"}')
        steps += s.tool(tool, {key: text}, result='{"id": "1829"}')
    return steps


def test_posts_the_task_asks_for_are_no_questions_about_other_objects() -> None:
    assert feed(account_week("twitter_post", "text")) == []


def test_searches_naming_objects_the_task_never_reached_still_drift() -> None:
    alerts = feed(account_week("web_search", "query"))
    assert alerts and alerts[0].detector == "intent_drift"


def test_a_redacted_credential_adds_no_words_to_a_call() -> None:
    s = Session("grants", goal="Pay the Q3 micro-grants listed in grants/q3.json.")
    call, _ = s.tool(
        "wallet_transfer",
        {"amount": 150, "memo": "Q3 micro-grant", "token": "[REDACTED:api_key_assignment]"},
    )
    words = features_of(call).judged_words
    assert {"grant", "micro"} <= words
    assert not words & {"redacted", "api", "key", "assignment"}
    plain, _ = s.tool("wallet_transfer", {"amount": 150, "memo": "spring promo"})
    assert {"spring", "promo"} <= features_of(plain).judged_words  # words it wrote count
