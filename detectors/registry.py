"""Which detectors run, by name. The pipeline asks the registry for a fresh set
per session; later issues register the detectors and read their parameters
from the TOML config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from detectors.base import Detector

REGISTRY: dict[str, type[Detector]] = {}


def register(cls: type[Detector]) -> type[Detector]:
    """Class decorator: make a detector available by its ``name``."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"two detectors are named {cls.name!r}")
    REGISTRY[cls.name] = cls
    return cls


class DetectorSet:
    """Prototypes built once from config; ``for_session`` clones them per session."""

    def __init__(self, prototypes: list[Detector]) -> None:
        self.prototypes = prototypes

    @classmethod
    def from_config(cls, config: Mapping[str, Mapping[str, Any]] | None = None) -> DetectorSet:
        """One prototype per registered detector, with parameters from ``config[name]``.
        A detector whose config has ``enabled = false`` is left out; unknown names fail."""
        config = config or {}
        unknown = sorted(set(config) - set(REGISTRY))
        if unknown:
            raise ValueError(f"config names unknown detectors {unknown}; known: {sorted(REGISTRY)}")
        prototypes = []
        for name in sorted(REGISTRY):
            params = dict(config.get(name, {}))
            if not params.pop("enabled", True):
                continue
            prototypes.append(REGISTRY[name](**params))
        return cls(prototypes)

    def for_session(self) -> list[Detector]:
        return [p.clone() for p in self.prototypes]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.prototypes]


def load_builtin() -> None:
    """Import every detector module of this package, so their ``@register`` runs."""
    import importlib
    import pkgutil

    import detectors

    for module in pkgutil.iter_modules(detectors.__path__):
        if module.name not in ("base", "registry", "testing"):
            importlib.import_module(f"detectors.{module.name}")
