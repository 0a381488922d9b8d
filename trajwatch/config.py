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

[actions]                       # the action policy (see trajwatch/actions/policy.py)
shadow = false                  # record what would fire without sending
cooldown_s = 300                # per session: no action as strong again within 5 min
explorer_url = "https://trajwatch.example.com"
allow_private = false           # the SSRF guard (TRAJWATCH_WEBHOOK_ALLOW_PRIVATE=1)
allow_addresses = []            # exact addresses allowed whatever their class (…_ALLOW_ADDRESSES)
[actions.retry]
max_attempts = 12               # then the delivery is dead
backoff_s = 2.0
[[actions.rules]]               # first match wins; no rules: each alert's own action
detector = "egress_gaming"      # omit for any detector
severity = "critical"           # this severity or above
agents = ["codewright"]         # omit for any agent
action = "kill"                 # notify | kill | rollback | resume | recommended | none
[actions.agents.codewright]
shadow = true                   # shadow mode for one agent
[webhooks.breaker]              # endpoints by name; the secrets come from the environment
url = "https://breaker.example.com/trajwatch"
secret_env = "BREAKER_WEBHOOK_SECRET"   # or a list of variables

[prices]                        # list prices, $ per million tokens, for model calls that
"my-finetune" = { input = 3.0, output = 12.0 }  # report no cost (features/prices/)

[calibration]                   # alert scores as probabilities (detectors/calibration.py),
warn = 0.5                      # fitted by the tuning notebooks; with warn/critical the
critical = 0.9                  # severity comes from the probability too
[calibration.runaway_loop]
method = "isotonic"
scores = [0.0, 0.54, 1.0]       # raw score knots (increasing)
probabilities = [0.0, 0.7, 0.98]
```

Relative paths are resolved against the config file's folder. Detectors that take
``policies``/``agent_policies``/``default_policy``/``derived_policies`` parameters receive
them from the ``[policies]`` table (``derived`` is ``derived_policies``). Every parameter
left out keeps its documented default.
"""

from __future__ import annotations

import inspect
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detectors.calibration import Bands, Calibration, calibrated
from detectors.registry import REGISTRY, DetectorSet, load_builtin, parameters
from features.prices.table import Prices, rates_from
from models.errors import ConfigError, did_you_mean
from models.records import Action, Severity
from trajwatch.actions import ssrf
from trajwatch.actions.endpoints import ActionsConfig, Endpoint, RetryPolicy
from trajwatch.actions.policy import RECOMMENDED, ActionPolicy, AgentSettings, Rule
from trajwatch.actions.signing import signers
from trajwatch.settings import Settings, environment_secrets


def load_config(path: Path | None) -> dict[str, Any]:
    """The parsed config (empty when ``path`` is None). Raises ConfigError, one line naming
    the file (and for a syntax error its line and column), when it cannot be read."""
    if path is None:
        return {}
    config = _read_toml(path, "config file")
    for table in SECTIONS:
        if not isinstance(config.get(table, {}), dict):
            raise ConfigError(f"config file {path}: `{table}` must be a table; write [{table}]")
    _known_names(config, f"config file {path}")
    for name, values in config.get("detectors", {}).items():
        if not isinstance(values, dict):
            raise ConfigError(
                f"config file {path}: `detectors.{name}` must be a table of parameters; "
                f"write [detectors.{name}] followed by name = value lines"
            )
    config["_base"] = str(path.parent)
    config["_path"] = str(path)
    return config


SECTIONS = ("detectors", "policies", "actions", "webhooks", "calibration", "prices", "kafka")
"""The config's tables. Names inside ``[detectors]``, ``[calibration]`` (detectors) and
``[kafka]`` are checked where they are read; ``[webhooks]`` and ``[prices]`` names are the
user's own (endpoints, models)."""

_KEYS: dict[str, tuple[str, ...]] = {
    "policies": ("paths", "default", "derived", "agents"),
    "actions": (
        "shadow", "cooldown_s", "corroborate", "confirmed_kills", "agents", "retry", "rules",
        "explorer_url", "allow_private", "allow_addresses",
    ),
    "actions.retry": ("max_attempts", "backoff_s", "max_backoff_s", "timeout_s", "lease_s"),
    "actions.agents.*": ("shadow", "cooldown_s"),
    "webhooks.*": ("url", "secret_env"),
}
"""The keys each fixed table of the config takes (``*``: any name the user chose)."""


def _known_names(config: Mapping[str, Any], origin: str) -> None:
    """Raise ConfigError for a table or key the config does not read — a misspelling would
    otherwise be silently ignored — naming it, the closest known one and all of them."""
    for name, value in config.items():
        if name not in SECTIONS and not isinstance(value, Mapping):
            homes = [f"[{t}]" for t, keys in _KEYS.items() if name in keys and "*" not in t]
            raise ConfigError(
                f"{origin}: `{name}` is outside any table; put it under "
                + (" or ".join(homes) if homes else "the table it belongs to")
                + f" (the tables are {', '.join(f'[{t}]' for t in SECTIONS)})"
            )
        if name not in SECTIONS:
            raise ConfigError(
                f"{origin}: unknown table [{name}]{did_you_mean(name, SECTIONS, form='[{}]')}; "
                f"the tables are {', '.join(f'[{t}]' for t in SECTIONS)}"
            )
    for where, keys in _KEYS.items():
        for table, values in _tables(config, where.split(".")):
            for key in values if isinstance(values, Mapping) else ():
                if key not in keys:
                    raise ConfigError(
                        f"{origin}: unknown key `{key}` in [{table}]{did_you_mean(key, keys)}; "
                        f"valid: {', '.join(keys)}"
                    )


def _tables(table: Any, parts: list[str], at: str = "") -> list[tuple[str, Any]]:
    """(dotted name, value) of each table ``parts`` reaches from ``table`` (``*``: every
    entry); a part that is absent or not a table reaches nothing (its reader says why)."""
    if not parts:
        return [(at, table)]
    if not isinstance(table, Mapping):
        return []
    head, rest = parts[0], parts[1:]
    names = list(table) if head == "*" else [head] if head in table else []
    return [
        found
        for name in names
        for found in _tables(table[name], rest, f"{at}.{name}" if at else name)
    ]


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
        detectors = DetectorSet.from_config(params, origin=config.get("_path", ""))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    fitted, bands = calibrations(config)
    return DetectorSet(
        [
            calibrated(p, fitted[p.name], bands) if p.name in fitted else p
            for p in detectors.prototypes
        ],
        prices=prices(config),
    )


def prices(config: Mapping[str, Any]) -> Prices:
    """The bundled list prices (:mod:`features.prices.table`) with the config's
    ``[prices]`` rows added or replacing theirs: ``"model" = { input = N, output = N }``,
    US dollars per million tokens. Raises ConfigError naming the row that is wrong."""
    table = config.get("prices", {})
    origin = config.get("_path", "the config")
    if not isinstance(table, Mapping):
        raise ConfigError(f"{origin}: `prices` must be a table; write [prices]")
    try:
        rows = rates_from(table, where=f"{origin}: [prices]")
    except ValueError as exc:
        raise ConfigError(f"{exc}; e.g. \"my-model\" = {{ input = 3.0, output = 15.0 }}") from None
    return Prices.bundled().overridden(rows) if rows else Prices.bundled()


def calibrations(config: Mapping[str, Any]) -> tuple[dict[str, Calibration], Bands | None]:
    """The ``[calibration]`` table: detector → its score calibration (``scores``,
    ``probabilities``, ``method``), and the severity bands (``warn``, ``critical``; None
    when neither is set). Raises ConfigError, one line naming the key, when one is wrong."""
    origin = config.get("_path", "the config")
    table = config.get("calibration", {})
    if not isinstance(table, Mapping):
        raise ConfigError(f"{origin}: `calibration` must be a table; write [calibration]")
    load_builtin()
    fitted: dict[str, Calibration] = {}
    for name, values in table.items():
        if name in ("warn", "critical"):
            continue
        where = f"{origin}: [calibration.{name}]"
        if name not in REGISTRY:
            raise ConfigError(f"{where}: unknown detector; known: {', '.join(sorted(REGISTRY))}")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{where} must be a table with scores and probabilities")
        try:
            fitted[name] = Calibration(
                scores=tuple(float(v) for v in values.get("scores", [])),
                probabilities=tuple(float(v) for v in values.get("probabilities", [])),
                method=str(values.get("method", "isotonic")),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc}; refit it with the tuning notebook") from exc
    if "warn" not in table and "critical" not in table:
        return fitted, None
    try:
        warn, critical = float(table.get("warn", 0.5)), float(table.get("critical", 0.9))
        bands = Bands(warn=warn, critical=critical)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{origin}: [calibration] warn/critical: {exc}") from exc
    return fitted, bands


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


def config_toml(
    config: Mapping[str, Any],
    *,
    header: str = "",
    comments: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """``config`` (as :func:`load_config` returns it, or built by hand) as TOML text that
    :func:`load_config` reads back equal: scalars and arrays first, then each table, then
    each array of tables; keys starting with ``_`` are left out. ``header`` becomes
    leading ``#`` lines; ``comments[table][key]`` is written after that key's value (a
    tuned number citing its source). The ``[policies] paths`` are written as given: see
    :func:`write_config` for a file in another folder.

    >>> print(config_toml({"detectors": {"runaway_loop": {"warn_cycles": 4}}},
    ...                   comments={"detectors.runaway_loop": {"warn_cycles": "swept"}}))
    [detectors.runaway_loop]
    warn_cycles = 4  # swept
    <BLANKLINE>
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    _toml_table(lines, (), config, comments or {})
    return "\n".join(lines).lstrip("\n") + "\n"


def write_config(
    path: Path,
    config: Mapping[str, Any],
    *,
    header: str = "",
    comments: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """Write ``config`` to ``path`` as :func:`config_toml` does, with each relative
    ``[policies] paths`` entry rewritten to name, from ``path``'s folder, what it named
    from ``config``'s own folder (``_base``, else the working directory) — relative when
    the two folders share more than the filesystem root, else absolute: the written
    file loads the same policies wherever it is put. Returns ``path``."""
    source = Path(config.get("_base", "."))
    table = config.get("policies", {})
    if isinstance(table, Mapping) and isinstance(table.get("paths"), list):
        target = path.resolve().parent
        moved = [_path_from(target, source / str(entry)) for entry in table["paths"]]
        config = {**config, "policies": {**table, "paths": moved}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config_toml(config, header=header, comments=comments), encoding="utf-8")
    return path


def _path_from(folder: Path, target: Path) -> str:
    """``target`` as a config in ``folder`` should name it (see :func:`write_config`)."""
    target = target.resolve()
    if os.path.commonpath([folder, target]) == folder.anchor:
        return str(target)
    return os.path.relpath(target, folder)


def _toml_table(
    lines: list[str],
    where: tuple[str, ...],
    table: Mapping[str, Any],
    comments: Mapping[str, Mapping[str, str]],
) -> None:
    name = ".".join(_toml_key(part) for part in where)
    notes = comments.get(".".join(where), {})
    items = [(str(k), v) for k, v in table.items() if not str(k).startswith("_")]
    scalars = [(k, v) for k, v in items if not _is_table(v) and not _is_table_array(v)]
    if where and (scalars or not items):
        lines += ["", f"[{name}]"]
    for key, value in scalars:
        note = notes.get(key)
        lines.append(f"{_toml_key(key)} = {_toml(value)}" + (f"  # {note}" if note else ""))
    for key, value in items:
        if _is_table(value):
            _toml_table(lines, (*where, key), value, comments)
    for key, value in items:
        if _is_table_array(value):
            for entry in value:
                lines += ["", f"[[{'.'.join(_toml_key(p) for p in (*where, key))}]]"]
                lines += [f"{_toml_key(str(k))} = {_toml(v)}" for k, v in entry.items()]


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml(key)


_ESCAPES = {
    "\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"
}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(
            _ESCAPES.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
            for c in value
        ) + '"'
    if isinstance(value, list | tuple | frozenset | set):
        items = sorted(value) if isinstance(value, frozenset | set) else list(value)
        return "[" + ", ".join(_toml(v) for v in items) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def actions_config(
    config: Mapping[str, Any], settings: Settings, environ: Mapping[str, str] | None = None
) -> ActionsConfig:
    """The action policy and webhook endpoints from ``[actions]``, ``[webhooks.NAME]`` and
    the settings (``TRAJWATCH_WEBHOOK_URL`` + ``TRAJWATCH_WEBHOOK_SECRET`` add the endpoint
    ``default``). Raises ConfigError, one line naming the key, for a value that is wrong."""
    origin = config.get("_path", "the config")
    table = config.get("actions", {})
    policy = ActionPolicy(
        rules=tuple(_rule(rule, i, origin) for i, rule in enumerate(_list(table, "rules", origin))),
        shadow=_typed(table, "shadow", bool, False, origin),
        cooldown_ns=_seconds(table, "cooldown_s", origin),
        corroborate=_typed(table, "corroborate", bool, True, origin),
        confirmed=_confirmed_kills(table, origin),
        agents={
            str(name): AgentSettings(
                shadow=_typed(values, "shadow", bool, None, origin),
                cooldown_ns=_seconds(values, "cooldown_s", origin)
                if "cooldown_s" in values
                else None,
            )
            for name, values in _table(table, "agents", origin).items()
        },
    )
    retry_table = _table(table, "retry", origin)
    defaults = RetryPolicy()
    retry = RetryPolicy(
        **{
            key: _number(retry_table, key, getattr(defaults, key), origin)
            for key in ("max_attempts", "backoff_s", "max_backoff_s", "timeout_s", "lease_s")
        }
    )
    if retry.lease_s <= retry.timeout_s:
        raise ConfigError(f"{origin}: [actions.retry] lease_s must exceed timeout_s")
    endpoints: dict[str, Endpoint] = {}
    if settings.webhook_url:
        secrets = (settings.webhook_secret or "").split()
        if not secrets:
            raise ConfigError(
                "TRAJWATCH_WEBHOOK_URL is set without TRAJWATCH_WEBHOOK_SECRET; "
                "export TRAJWATCH_WEBHOOK_SECRET=whsec_..."
            )
        endpoints["default"] = Endpoint(
            "default",
            _webhook_url(settings.webhook_url, "TRAJWATCH_WEBHOOK_URL"),
            signers(secrets, where="TRAJWATCH_WEBHOOK_SECRET"),
        )
    for name, values in config.get("webhooks", {}).items():
        where = f"{origin}: [webhooks.{name}]"
        if not isinstance(values, dict) or not isinstance(values.get("url"), str):
            raise ConfigError(f'{where} needs url = "https://..."')
        names = values.get("secret_env")
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ConfigError(f'{where} needs secret_env = "VARIABLE" (or a list of them)')
        secrets = environment_secrets(names, environ)
        url = _webhook_url(values["url"], f"{where} url")
        endpoints[str(name)] = Endpoint(str(name), url, signers(secrets, where=where))
    allowed = _list_of_str(table, "allow_addresses", origin)
    allowed += (settings.webhook_allow_addresses or "").replace(",", " ").split()
    return ActionsConfig(
        policy=policy,
        endpoints=endpoints,
        retry=retry,
        allow_private=settings.webhook_allow_private
        or _typed(table, "allow_private", bool, False, origin),
        allow_addresses=ssrf.addresses(
            allowed,
            where=f"{origin}: [actions] allow_addresses or TRAJWATCH_WEBHOOK_ALLOW_ADDRESSES",
        ),
        explorer_url=settings.explorer_url or _typed(table, "explorer_url", str, None, origin),
    )


_ACTIONS = (*[str(a) for a in Action], RECOMMENDED, "none")


def _rule(raw: Any, index: int, origin: str) -> Rule:
    where = f"{origin}: [[actions.rules]] #{index + 1}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = set(raw) - {"detector", "severity", "agents", "action"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}; use detector, "
                          "severity, agents, action")
    action = raw.get("action")
    if action not in _ACTIONS:
        raise ConfigError(f"{where}: action must be one of {', '.join(_ACTIONS)}, got {action!r}")
    severity = raw.get("severity")
    if severity is not None and severity not in [str(s) for s in Severity]:
        raise ConfigError(f"{where}: severity must be info, warn or critical, got {severity!r}")
    detector = raw.get("detector")
    if detector is not None and detector != "*":
        load_builtin()
        if detector not in REGISTRY:
            raise ConfigError(
                f"{where}: unknown detector {detector!r}; known: {', '.join(sorted(REGISTRY))}"
            )
    agents = raw.get("agents")
    if agents is not None and (
        not isinstance(agents, list) or not all(isinstance(a, str) for a in agents)
    ):
        raise ConfigError(f'{where}: agents must be a list of names, e.g. ["codewright"]')
    return Rule(
        action=None if action == "none" else (RECOMMENDED if action == RECOMMENDED
                                              else Action(action)),
        detector=None if detector in (None, "*") else detector,
        severity=None if severity is None else Severity(severity),
        agents=None if agents is None else frozenset(agents),
    )


def _table(table: Mapping[str, Any], key: str, origin: str) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: [actions] {key} must be a table; write [actions.{key}]")
    return value


def _confirmed_kills(table: Mapping[str, Any], origin: str) -> frozenset[str]:
    """``[actions] confirmed_kills``: the detectors whose recommended kills the operator
    confirmed (not gated by the kill discipline)."""
    names = table.get("confirmed_kills", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f'{origin}: actions.confirmed_kills must be a list of detector names, '
                          f'e.g. ["egress_gaming"]')
    load_builtin()
    unknown = sorted(set(names) - set(REGISTRY))
    if unknown:
        raise ConfigError(f"{origin}: actions.confirmed_kills names unknown detector "
                          f"{unknown[0]!r}; known: {', '.join(sorted(REGISTRY))}")
    return frozenset(names)


def _list(table: Mapping[str, Any], key: str, origin: str) -> list[Any]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{origin}: actions.{key} must be an array of tables; "
                          f"write [[actions.{key}]]")
    return value


def _webhook_url(url: str, where: str) -> str:
    """``url`` if the SSRF guard accepts its form (:func:`trajwatch.actions.ssrf.parse`):
    a URL refused by its form alone fails at start, not at the first kill."""
    try:
        ssrf.parse(url)
    except ConfigError as refused:
        raise ConfigError(f"{where}: {refused}") from None
    return url


def _list_of_str(table: Mapping[str, Any], key: str, origin: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f'{origin}: [actions] {key} must be a list of strings, e.g. ["127.0.0.1"]'
        )
    return list(value)


def _typed(table: Mapping[str, Any], key: str, kind: type, default: Any, origin: str) -> Any:
    value = table.get(key, default)
    if value is not None and not isinstance(value, kind):
        raise ConfigError(f"{origin}: {key} must be a {kind.__name__}, got {value!r}")
    return value


def _number(table: Mapping[str, Any], key: str, default: float, origin: str) -> Any:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{origin}: [actions.retry] {key} must be a number > 0, got {value!r}")
    return int(value) if isinstance(default, int) else float(value)


def _seconds(table: Mapping[str, Any], key: str, origin: str) -> int:
    value = table.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{origin}: {key} must be a number of seconds >= 0, got {value!r}")
    return int(value * 1_000_000_000)
