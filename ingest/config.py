"""The TOML config: detector parameters and the policies they enforce.

```toml
[detectors.runaway_loop]        # constructor parameters of one detector
warn_repeats = 2
[detectors.budget_overrun]
enabled = false                 # leave a detector out

[policies]
paths = ["fixtures/policies"]   # policy files (*.toml) or folders of them
default = "coding-default-v2"   # for sessions that name no policy
[policies.agents]               # agent name → policy id, for plain-OTLP sessions
codewright = "coding-strict-v1"
```

Relative paths are resolved against the config file's folder. Detectors that take
``policies``/``agent_policies``/``default_policy`` parameters receive them from the
``[policies]`` table. Every parameter left out keeps its documented default.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detectors.registry import REGISTRY, DetectorSet, load_builtin
from ingest.errors import ConfigError


def load_config(path: Path | None) -> dict[str, Any]:
    """The parsed config (empty when ``path`` is None)."""
    if path is None:
        return {}
    try:
        with path.open("rb") as fh:
            config = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    config["_base"] = str(path.parent)
    return config


def load_policies(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """policy id → raw policy mapping, from the files and folders in ``[policies] paths``."""
    table = config.get("policies", {})
    base = Path(config.get("_base", "."))
    policies: dict[str, dict[str, Any]] = {}
    for entry in table.get("paths", []):
        path = (base / entry) if not Path(entry).is_absolute() else Path(entry)
        files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
        if not path.exists():
            raise ConfigError(f"policy path {path} does not exist (from [policies] paths)")
        for file in files:
            try:
                with file.open("rb") as fh:
                    policy = tomllib.load(fh)
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"policy file {file} is not valid TOML: {exc}") from exc
            policy_id = str(policy.get("policy_id") or file.stem)
            if policy_id in policies:
                raise ConfigError(f"two policy files define {policy_id!r} (second: {file})")
            policies[policy_id] = policy
    return policies


def detector_set(config: Mapping[str, Any]) -> DetectorSet:
    """Every registered detector, with its parameters and policies from ``config``."""
    load_builtin()
    params: dict[str, dict[str, Any]] = {
        name: dict(values) for name, values in config.get("detectors", {}).items()
    }
    table = config.get("policies", {})
    injected = {
        "policies": load_policies(config),
        "agent_policies": dict(table.get("agents", {})),
        "default_policy": table.get("default"),
    }
    for name, cls in REGISTRY.items():
        accepted = inspect.signature(cls.__init__).parameters
        for key, value in injected.items():
            if key in accepted and key not in params.get(name, {}):
                params.setdefault(name, {})[key] = value
    try:
        return DetectorSet.from_config(params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"detector config: {exc}") from exc
