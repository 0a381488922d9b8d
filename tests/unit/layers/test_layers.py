"""The layering of STYLE.md, kept by parsing imports: models ← features ← detectors ← ingest
← trajwatch (the composition root: it may import everything, nothing imports it),
and features/detectors do no I/O and never read the wall clock."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import ROOT

LAYERS = ["models", "features", "detectors", "ingest", "trajwatch"]
"""Each package may import only the packages before it (and itself)."""
FORBIDDEN_IN_PURE = {"os", "socket", "requests", "urllib.request", "sqlalchemy", "kafka", "time"}
"""Modules that mean I/O or the wall clock; ``features`` and ``detectors`` must not use them."""


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", LAYERS)
def test_packages_import_only_lower_layers(package: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(package) + 1])
    bad = []
    for path in modules(package):
        for name in imports(path):
            top = name.split(".")[0]
            if top in LAYERS and top not in allowed:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


@pytest.mark.parametrize("package", ["features", "detectors"])
def test_pure_layers_do_no_io_and_read_no_clock(package: str) -> None:
    bad = []
    for path in modules(package):
        for name in imports(path):
            if name in FORBIDDEN_IN_PURE or name.split(".")[0] in FORBIDDEN_IN_PURE:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
            if name == "datetime" or name.startswith("datetime"):
                text = path.read_text()
                if ".now(" in text or "utcnow(" in text or ".today(" in text:
                    bad.append(f"{path.relative_to(ROOT)} reads the wall clock")
    assert bad == []
