"""What every page needs: the settings, the store (opened read-only once per URL) and the
detector set of the config, cached across reruns; errors become one clear message."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from dashboards.store_view import open_store
from detectors.registry import DetectorSet
from models.errors import UserError
from models.open_errors import shown
from models.store import Store
from trajwatch.config import detector_set, load_config
from trajwatch.settings import Settings


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    store: Store
    detectors: DetectorSet
    config_path: Path | None

    @property
    def shown_url(self) -> str:
        return shown(self.settings.db_url)


def config_path(settings: Settings) -> Path | None:
    """The config the other commands use: ``$TRAJWATCH_CONFIG``, else ``./trajwatch.toml``
    when present (``trajwatch ui --config`` sets the variable)."""
    if settings.config_path:
        return Path(settings.config_path)
    default = Path("trajwatch.toml")
    return default if default.exists() else None


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return open_store(url)


@st.cache_resource(show_spinner=False)
def _detectors(path: str | None) -> DetectorSet:
    return detector_set(load_config(Path(path) if path else None))


def load() -> Context:
    """The context, or a one-line error shown in place of the page (``st.stop``)."""
    try:
        settings = Settings.from_env()
        path = config_path(settings)
        store = _store(settings.db_url)
        detectors = _detectors(str(path) if path else None)
    except UserError as error:
        st.error(f"trajwatch explorer: {error}")
        st.stop()
        raise  # unreachable: st.stop ends the run
    return Context(settings, store, detectors, path)
