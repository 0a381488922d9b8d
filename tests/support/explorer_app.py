"""Driving the explorer under Streamlit's AppTest: the app on a store, and what it shows."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.explorer_seed import CONFIG
from tests.support.paths import ROOT

APP = str(ROOT / "dashboards" / "app.py")
MARKDOWN_ELEMENTS = (
    "title", "header", "subheader", "markdown", "caption", "error", "warning", "info", "success"
)
"""The elements whose text Streamlit renders as Markdown."""


def app(monkeypatch: pytest.MonkeyPatch, url: str, **params: str) -> AppTest:
    """The explorer on the store at ``url``, run once with the query ``params``."""
    monkeypatch.setenv("TRAJWATCH_DB_URL", url)
    monkeypatch.setenv("TRAJWATCH_CONFIG", str(CONFIG))
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def markdown_shown(at: AppTest) -> list[str]:
    """The Markdown source of every element that renders Markdown."""
    return [str(e.value) for kind in MARKDOWN_ELEMENTS for e in at.get(kind)]
