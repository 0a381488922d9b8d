"""The TOML config: detector parameters, policies, clear errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from detectors.base import Detector
from detectors.registry import REGISTRY, register
from models.errors import ConfigError
from models.records import Alert, Step
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config, load_policies


class _Probe(Detector):
    name = "zz_config_probe"

    def __init__(
        self,
        *,
        threshold: int = 3,
        policies: dict[str, Any] | None = None,
        default_policy: str | None = None,
    ) -> None:
        if threshold < 1:
            raise ValueError(f"threshold must be >= 1, got {threshold}")
        self.threshold = threshold
        self.policies = policies
        self.default_policy = default_policy
        self._reset()

    def _reset(self) -> None:
        self.seen = 0

    def update(self, step: Step) -> list[Alert]:
        self.seen += 1
        return []


@pytest.fixture
def probe() -> Iterator[type[_Probe]]:
    register(_Probe)
    yield _Probe
    REGISTRY.pop(_Probe.name, None)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_parameters_and_policies_reach_the_detectors(tmp_path: Path, probe: type) -> None:
    write(tmp_path / "pol" / "strict.toml", 'policy_id = "strict"\nforbidden_tools = ["rm"]\n')
    config = load_config(
        write(
            tmp_path / "trajwatch.toml",
            "[detectors.zz_config_probe]\nthreshold = 7\n"
            '[policies]\npaths = ["pol"]\ndefault = "strict"\n',
        )
    )
    (built,) = [d for d in detector_set(config).prototypes if d.name == "zz_config_probe"]
    assert isinstance(built, _Probe)
    assert built.threshold == 7
    assert built.policies == {"strict": {"policy_id": "strict", "forbidden_tools": ["rm"]}}
    assert built.default_policy == "strict"


def test_bad_values_and_files_are_config_errors(tmp_path: Path, probe: type) -> None:
    bad = load_config(write(tmp_path / "a.toml", "[detectors.zz_config_probe]\nthreshold = 0\n"))
    with pytest.raises(ConfigError, match="threshold must be >= 1"):
        detector_set(bad)
    unknown = load_config(write(tmp_path / "b.toml", "[detectors.no_such]\nx = 1\n"))
    with pytest.raises(ConfigError, match="unknown detector `no_such`"):
        detector_set(unknown)
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(write(tmp_path / "c.toml", "[detectors\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_policies({"policies": {"paths": ["nowhere"]}, "_base": str(tmp_path)})


def test_the_repository_config_loads_the_fixture_policies() -> None:
    root = ROOT
    policies = load_policies(load_config(root / "trajwatch.toml"))
    assert "coding-strict-v1" in policies
    assert policies["coding-strict-v1"]["forbidden_commands"]


def test_the_documented_defaults_are_the_constructors_defaults() -> None:
    from trajwatch.config import defaults_toml

    root = ROOT
    documented = (root / "detectors" / "defaults.toml").read_text()
    assert documented == defaults_toml(), "run: trajwatch defaults > detectors/defaults.toml"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[acitons]\nshadow = true\n",
            "unknown table [acitons] (did you mean [actions]?); the tables are [detectors], ",
        ),
        ("[policy]\ndefault = 'x'\n", "unknown table [policy] (did you mean [policies]?)"),
        ("[actions]\nshadw = true\n", "unknown key `shadw` in [actions] (did you mean `shadow`?)"),
        ("[actions.retry]\nmax_attempt = 3\n", "`max_attempt` in [actions.retry] (did you mean"),
        ("[actions.agents.cw]\nshadows = true\n", "`shadows` in [actions.agents.cw] (did you"),
        ("[policies]\npath = ['p']\n", "unknown key `path` in [policies] (did you mean `paths`?)"),
        ("[webhooks.b]\nurl = 'https://a.example'\nsecret = 'X'\n", "`secret` in [webhooks.b]"),
        ("cooldown_s = 60\n", "`cooldown_s` is outside any table; put it under [actions]"),
    ],
)
def test_a_misspelt_table_or_key_is_an_error_with_a_suggestion(
    tmp_path: Path, text: str, expected: str
) -> None:
    """Issue 25, item 12: a misspelt name was silently ignored (the table's defaults ran)."""
    path = write(tmp_path / "trajwatch.toml", text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"config file {path}: ")
    assert expected in str(raised.value)


def test_the_documented_example_config_loads(tmp_path: Path) -> None:
    """The config module's docstring shows every table: each of its names is known."""
    import trajwatch.config

    text = (trajwatch.config.__doc__ or "").split("```toml\n")[1].split("```")[0]
    assert load_config(write(tmp_path / "trajwatch.toml", text))["actions"]["shadow"] is False
