"""Moving between pages: the URL's query parameters say where the explorer is."""

from __future__ import annotations

import streamlit as st


def open_session(session_id: str, alert_id: str | None = None) -> None:
    """Show the session page of ``session_id`` (highlighting ``alert_id``)."""
    st.query_params.clear()
    st.query_params.update({"page": "session", "session": session_id})
    if alert_id:
        st.query_params["alert"] = alert_id
    st.rerun()
