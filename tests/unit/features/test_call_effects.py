"""What a tool's name says it does to the world (features/calls/effects.py): each effect
word is a whole word of the name, with its endings. A notebook books nothing, Postgres
posts nothing, a dropdown drops nothing; a payout pays and gmailSend sends."""

from __future__ import annotations

import pytest

from features.calls.effects import call_effect


@pytest.mark.parametrize(
    ("tool", "effect"),
    [
        ("postgres__execute_sql", None),
        ("mcp__postgres__query", None),
        ("notebook_execute_cell", None),
        ("facebook_get_page", None),
        ("storybook_build", None),
        ("dropdown_select", None),
        ("posthog_capture", None),
        ("stripe_create_payout", "money"),
        ("create_payment_intent", "money"),
        ("book_flight", "money"),
        ("sendMoney", "money"),
        ("gmailSendMessage", "send"),
        ("compose_email", "send"),
        ("facebook_post", "send"),
        ("notify_user", "send"),
        ("drop_table", "effect"),
        ("kubectl_apply", "state"),
    ],
)
def test_effect_words_are_whole_words_of_the_name(tool: str, effect: str | None) -> None:
    assert call_effect(tool, "{}")[0] == effect
