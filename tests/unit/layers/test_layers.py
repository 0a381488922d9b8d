"""The layering of STYLE.md and DESIGN.md ("Folders"), kept by parsing imports:
models ← features ← detectors ← ingest ← trajwatch (the composition root: it may import
everything, nothing imports it); inside ``features`` its packages in one order (redact ←
text ← egress ← calls ← session ← policy); no import circle between any two modules; and
features/detectors do no I/O and never read the wall clock."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
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


FEATURE_PACKAGES = ["redact", "text", "egress", "calls", "session", "policy", "prices"]
"""``features``' packages in import order: each may import only those before it (and itself)."""


def test_feature_packages_import_only_earlier_ones() -> None:
    bad = []
    for package in FEATURE_PACKAGES:
        allowed = set(FEATURE_PACKAGES[: FEATURE_PACKAGES.index(package) + 1])
        for path in modules(f"features/{package}"):
            for name in imports(path):
                parts = name.split(".")
                if parts[0] == "features" and len(parts) > 1 and parts[1] not in allowed:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_every_feature_module_lives_in_a_package_of_the_order() -> None:
    top = sorted(p.name for p in (ROOT / "features").iterdir() if p.suffix == ".py")
    folders = sorted(p.name for p in (ROOT / "features").iterdir() if (p / "__init__.py").exists())
    assert top == ["__init__.py"] and folders == sorted(FEATURE_PACKAGES)


def module_graph() -> nx.DiGraph:
    """Module → the project modules it imports (anywhere in it, lazily too). ``from pkg
    import sub`` of a submodule is an edge to the submodule, not to ``pkg``."""
    names = {}
    for package in [*LAYERS, "dashboards"]:
        for path in modules(package):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            names[name.removesuffix(".__init__")] = path
    graph = nx.DiGraph()
    for name, path in names.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                subs = [s for s in subs if s in names]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            graph.add_edges_from((name, t) for t in targets if t in names and t != name)
    return graph


def test_no_import_circle() -> None:
    assert list(nx.simple_cycles(module_graph())) == []


def test_the_circle_check_sees_a_circle() -> None:
    graph = module_graph()
    graph.add_edge("models.records", "trajwatch.cli.main")  # a made-up upward import
    assert list(nx.simple_cycles(graph)) != []


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
