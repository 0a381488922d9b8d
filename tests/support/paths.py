"""Where the tests find the repository's files, wherever under ``tests/`` they live."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root: ``trajwatch.toml``, ``fixtures/``, ``notebooks/`` are in it."""

CORPUS = Path(os.environ.get("TRAJWATCH_CORPUS") or ROOT.parent / "shared" / "corpus")
"""The real, externally written inputs (``../shared/corpus`` beside the repository, as CI
lays it; ``TRAJWATCH_CORPUS`` names another place, e.g. from a git worktree). Absent from
a bare clone: tests that read it skip."""
