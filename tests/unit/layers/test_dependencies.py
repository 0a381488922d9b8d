"""Dependencies by role (pyproject.toml): every declared dependency is imported by the code
its extra serves, and a command whose extra is missing says which one to install."""

from __future__ import annotations

import ast
import re
import tomllib

import pytest

from models.errors import ConfigError
from tests.support.paths import ROOT
from trajwatch.cli.extras import require_extra

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

IMPORT_NAMES = {
    "psycopg": None,  # SQLAlchemy loads the driver named by a postgresql+psycopg:// URL
    "httptools": None,  # uvicorn picks its C HTTP parser up when installed
    "crc32c": None,  # kafka-python's CRC uses it when installed
    "ipykernel": None,  # the kernel process jupyter-client starts to run the notebooks
    "ahocorasick-rs": "ahocorasick_rs",
    "opentelemetry-proto": "opentelemetry.proto",
    "protobuf": "google.protobuf",
    "grpcio": "grpc",
    "prometheus-client": "prometheus_client",
    "kafka-python": "kafka",
    "scikit-learn": "sklearn",
    "jupyter-client": "jupyter_client",
    "langgraph-sdk": "langgraph_sdk",
    "opentelemetry-sdk": "opentelemetry.sdk",
    "opentelemetry-exporter-otlp-proto-common": "opentelemetry.exporter.otlp.proto.common",
    "opentelemetry-exporter-otlp-proto-http": "opentelemetry.exporter.otlp.proto.http",
}
"""Distribution → the module its users import; None: loaded by another library, not by
our code (the comment says which)."""

SERVED_BY = {
    "dependencies": ["trajwatch", "ingest", "features", "detectors", "models"],
    "kafka": ["ingest/sources/kafka.py", "trajwatch/service/worker.py"],
    "ui": ["dashboards"],
    "notebooks": ["trajwatch/analysis", "notebooks", "tests/support/notebook_run.py"],
    "langgraph": ["trajwatch/breaker"],
    "fixtures": ["fixtures", "trajwatch/bench/spans.py"],
}
"""What each group of dependencies serves: the code that must import them."""


def distribution(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]


def imported_modules(places: list[str]) -> set[str]:
    found: set[str] = set()
    for place in places:
        path = ROOT / place
        files = [path] if path.suffix else [*path.rglob("*.py"), *path.rglob("*.ipynb")]
        for file in files:
            text = file.read_text()
            if file.suffix == ".ipynb":
                found.update(re.findall(r"(?:from|import) ([\w.]+)", text))
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module)
    return found


def groups() -> list[tuple[str, list[str]]]:
    extras = PYPROJECT["project"]["optional-dependencies"]
    out = [("dependencies", PYPROJECT["project"]["dependencies"])]
    out += [(name, reqs) for name, reqs in extras.items() if name != "test"]
    return out


@pytest.mark.parametrize(("group", "requirements"), groups(), ids=[g for g, _ in groups()])
def test_every_declared_dependency_is_imported_by_what_it_serves(
    group: str, requirements: list[str]
) -> None:
    imported = imported_modules(SERVED_BY[group])
    unused = []
    for requirement in requirements:
        name = distribution(requirement)
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        if module is None:
            continue
        if not any(m == module or m.startswith(module + ".") for m in imported):
            unused.append(f"{name} (as {module})")
    assert unused == []


def test_the_service_needs_no_extra() -> None:
    """serve, replay and eval import nothing of an extra (the UI's, Kafka's, notebooks')."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    extra_modules = {
        IMPORT_NAMES.get(distribution(r), distribution(r).replace("-", "_"))
        for name in ("ui", "kafka", "notebooks")
        for r in extras[name]
    } - {None, "networkx"}
    places = ["trajwatch/service/serve.py", "trajwatch/service/replay.py", "trajwatch/cli"]
    places += ["trajwatch/analysis/evaluate.py", "ingest/formats", "ingest/pipeline"]
    places += ["features", "detectors", "models", "trajwatch/actions"]
    imported = imported_modules(places)
    assert sorted(m for m in imported if m.split(".")[0] in extra_modules) == []


def test_a_missing_extra_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError) as raised:
        require_extra("no_such_module_trajwatch", extra="kafka", command="worker")
    message = str(raised.value)
    assert "\n" not in message and "pip install 'trajwatch[kafka]'" in message
    with pytest.raises(ConfigError):
        require_extra("no_such_package_trajwatch.sdk", extra="fixtures", command="bench")
    require_extra("json", extra="kafka", command="worker")  # installed: no error
