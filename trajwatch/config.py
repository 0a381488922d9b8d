"""The TOML config: detector parameters and the policies they enforce.

```toml
[detectors.runaway_loop]        # constructor parameters of one detector
warn_repeats = 2
[detectors.budget_overrun]
enabled = false                 # leave a detector out

[policies]
paths = ["fixtures/policies"]   # policy files (*.toml) or folders of them
default = "coding-default-v2"   # for sessions that name no policy
derived = "warn"                # sessions no policy names: rules from their own instructions,
                                # "warn" until confirmed (default), "enforce", or "off"
[policies.agents]               # agent or workflow name → policy id, for plain-OTLP sessions
codewright = "coding-strict-v1"
```

Relative paths are resolved against the config file's folder. Detectors that take
``policies``/``agent_policies``/``default_policy``/``derived_policies`` parameters receive
them from the ``[policies]`` table (``derived`` is ``derived_policies``). Every parameter
left out keeps its documented default.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detectors.registry import REGISTRY, DetectorSet, load_builtin, parameters
from ingest.errors import ConfigError


def load_config(path: Path | None) -> dict[str, Any]:
    """The parsed config (empty when ``path`` is None). Raises ConfigError, one line naming
    the file (and for a syntax error its line and column), when it cannot be read."""
    if path is None:
        return {}
    config = _read_toml(path, "config file")
    for table in ("detectors", "policies"):
        if not isinstance(config.get(table, {}), dict):
            raise ConfigError(f"config file {path}: `{table}` must be a table; write [{table}]")
    for name, values in config.get("detectors", {}).items():
        if not isinstance(values, dict):
            raise ConfigError(
                f"config file {path}: `detectors.{name}` must be a table of parameters; "
                f"write [detectors.{name}] followed by name = value lines"
            )
    config["_base"] = str(path.parent)
    config["_path"] = str(path)
    return config


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    """``path`` parsed as TOML; a ConfigError says which file and where it is wrong."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} {path} does not exist; check the path") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}; check the path") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path} is not UTF-8 text; save it as UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {_toml_position(path, exc)}; fix the TOML there") from exc


_AT = re.compile(r"^(?P<what>.*) \(at line (?P<line>\d+), column (?P<column>\d+)\)$")


def _toml_position(path: Path, exc: tomllib.TOMLDecodeError) -> str:
    """``FILE, line L, column C: what is wrong``: tomllib gives the position as attributes
    from Python 3.14 and, before that, only in the message ("... (at line 3, column 5)")."""
    message = str(exc)
    line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    what = getattr(exc, "msg", None) or message
    if line is None and (match := _AT.match(message)):
        what, line, column = match["what"], match["line"], match["column"]
    what = what[:1].lower() + what[1:]
    if line is None:
        return f"{path}: invalid TOML: {what}"
    return f"{path}, line {line}, column {column}: invalid TOML: {what}"


def load_policies(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """policy id → raw policy mapping, from the files and folders in ``[policies] paths``."""
    table = config.get("policies", {})
    base = Path(config.get("_base", "."))
    paths = table.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(entry, str) for entry in paths):
        raise ConfigError(
            f"[policies] paths in {config.get('_path', 'the config')} must be a list of "
            'paths; write paths = ["policies"]'
        )
    policies: dict[str, dict[str, Any]] = {}
    for entry in paths:
        path = (base / entry) if not Path(entry).is_absolute() else Path(entry)
        files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
        if not path.exists():
            raise ConfigError(
                f"policy path {path} does not exist (from [policies] paths); "
                "fix the path or remove it"
            )
        for file in files:
            policy = _read_toml(file, "policy file")
            policy_id = str(policy.get("policy_id") or file.stem)
            if policy_id in policies:
                raise ConfigError(
                    f"two policy files define {policy_id!r} (second: {file}); "
                    "give each a distinct policy_id"
                )
            policies[policy_id] = policy
    return policies


def detector_set(config: Mapping[str, Any]) -> DetectorSet:
    """Every registered detector, with its parameters and policies from ``config``."""
    load_builtin()
    params: dict[str, dict[str, Any]] = {
        name: dict(values) for name, values in config.get("detectors", {}).items()
    }
    table = config.get("policies", {})
    if not isinstance(table.get("agents", {}), dict):
        raise ConfigError(
            f"[policies] agents in {config.get('_path', 'the config')} must be a table; "
            'write [policies.agents] followed by agent = "policy-id" lines'
        )
    injected = {
        "policies": load_policies(config),
        "agent_policies": dict(table.get("agents", {})),
        "default_policy": table.get("default"),
    }
    if "derived" in table:
        injected["derived_policies"] = table["derived"]
    for name, cls in REGISTRY.items():
        accepted = parameters(cls)
        for key, value in injected.items():
            if key in accepted and key not in params.get(name, {}):
                params.setdefault(name, {})[key] = value
    try:
        return DetectorSet.from_config(params, origin=config.get("_path", ""))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


_INJECTED = ("policies", "agent_policies", "default_policy", "derived_policies")


def defaults_toml() -> str:
    """Every registered detector's parameters and defaults, as a config file one can
    copy and edit (``trajwatch defaults``; kept as ``detectors/defaults.toml``)."""
    load_builtin()
    lines = [
        "# Every detector parameter and its default, generated by `trajwatch defaults`.",
        "# Copy what you change into your trajwatch.toml; the rest keeps these values.",
        "# Parameters shown commented out are unset (None) by default. The policies",
        "# parameters come from the [policies] table (see trajwatch/config.py).",
    ]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        lines += ["", f"# {summary}", f"[detectors.{name}]"]
        for key, value in cls().get_params().items():
            if key in _INJECTED:
                continue
            if value is None:
                lines.append(f"# {key} = (unset)")
            else:
                lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple | frozenset | set):
        items = sorted(value) if isinstance(value, frozenset | set) else list(value)
        return "[" + ", ".join(_toml(v) for v in items) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
