"""The trajwatch explorer: ``trajwatch ui [--db URL] [--port P]`` runs this Streamlit app.

Four pages, chosen in the sidebar (or by the URL: ``?page=session&session=ID&alert=ID``,
the link each webhook carries): sessions, one session, alerts and actions, replay. The
pages lay out tables computed in :mod:`dashboards.store_view` and
:mod:`dashboards.session_view`; the store is read-only but for the two outbox actions
of the alerts page (redeliver, re-enable), which run the functions the CLI runs
(:mod:`trajwatch.actions.operations`). Every page opens with a red banner while a kill or
rollback is dead or held (:mod:`dashboards.views.banner`). Text the watched agent wrote is
shown as text, never as Markdown (:mod:`dashboards.markdown`).
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # `streamlit run dashboards/app.py` puts only dashboards/ there
    sys.path.insert(0, _ROOT)

import streamlit as st  # noqa: E402
from sqlalchemy.exc import SQLAlchemyError  # noqa: E402

from dashboards import context  # noqa: E402
from dashboards.views import alerts, banner, replay, session, sessions  # noqa: E402

PAGES = {
    "sessions": ("Sessions", sessions.render),
    "session": ("Session", session.render),
    "alerts": ("Alerts and actions", alerts.render),
    "replay": ("Replay", replay.render),
}


def main() -> None:
    st.set_page_config(page_title="trajwatch explorer", page_icon="🛰️", layout="wide")
    params = st.query_params
    wanted = params.get("page") or ("session" if params.get("session") else "sessions")
    keys = list(PAGES)
    if "page" not in st.session_state or st.session_state.get("_page_param") != wanted:
        st.session_state["page"] = wanted if wanted in PAGES else "sessions"
        st.session_state["_page_param"] = wanted
    page = st.sidebar.radio(
        "Page", keys, key="page", format_func=lambda k: PAGES[k][0], label_visibility="collapsed"
    )
    if params.get("page") != page:
        st.query_params["page"] = page
        st.session_state["_page_param"] = page
    ctx = context.load()
    st.sidebar.caption(f"store: `{ctx.shown_url}`")
    if ctx.config_path:
        st.sidebar.caption(f"config: `{ctx.config_path}`")
    try:
        banner.render(ctx)  # a kill that reached no breaker: on every page
        PAGES[page][1](ctx)
    except SQLAlchemyError as error:  # the database lost mid-run: say so, in one line
        cause = str(getattr(error, "orig", None) or error).strip().splitlines()
        st.error(
            f"trajwatch explorer: the store failed: {cause[0] if cause else 'no detail'}; "
            "check the database, then reload"
        )


main()
