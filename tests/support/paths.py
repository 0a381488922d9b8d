"""Where the tests find the repository's files, wherever under ``tests/`` they live."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root: ``trajwatch.toml``, ``fixtures/``, ``notebooks/`` are in it."""
