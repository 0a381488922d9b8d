"""Which detectors run, by name: ``@register`` adds a detector class, :data:`BUILTIN` lists
the modules of the built-in ones, and a :class:`DetectorSet` built from the config's
``[detectors.NAME]`` tables gives the pipeline a fresh set per session."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from detectors.base import Detector
from features.prices.table import Prices
from models.errors import did_you_mean

REGISTRY: dict[str, type[Detector]] = {}


def register(cls: type[Detector]) -> type[Detector]:
    """Class decorator: make a detector available by its ``name``."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"two detectors are named {cls.name!r}")
    REGISTRY[cls.name] = cls
    return cls


class DetectorSet:
    """Prototypes built once from config; ``for_session`` clones them per session.
    ``prices``: the list prices the pipeline gives a model call that reported no cost of
    its own, before the detectors see it (the budgets read cost): the config's judgement
    travels as one object to every pipeline, live and replayed alike."""

    def __init__(self, prototypes: list[Detector], *, prices: Prices | None = None) -> None:
        self.prototypes = prototypes
        self.prices = prices if prices is not None else Prices.bundled()

    @classmethod
    def from_config(
        cls, config: Mapping[str, Mapping[str, Any]] | None = None, *, origin: str = ""
    ) -> DetectorSet:
        """One prototype per registered detector, with parameters from ``config[name]``.
        A detector whose config has ``enabled = false`` is left out.

        Raises ``ValueError`` with one line naming the detector, the parameter and
        ``origin`` (the config file) for an unknown detector or parameter (listing the
        valid ones, with the closest as a suggestion), a value of the wrong type, or a
        value the constructor refuses.
        """
        config = config or {}
        where = f" in {origin}" if origin else ""
        for name in sorted(config):
            if name not in REGISTRY:
                raise ValueError(
                    f"unknown detector `{name}`{where}; known: {', '.join(sorted(REGISTRY))}"
                    + did_you_mean(name, REGISTRY)
                )
        prototypes = []
        for name in sorted(REGISTRY):
            params = dict(config.get(name, {}))
            enabled = params.pop("enabled", True)
            if not isinstance(enabled, bool):
                raise ValueError(
                    f"parameter `enabled` of detector `{name}`{where} must be true or false, "
                    f"got {enabled!r}"
                )
            if not enabled:
                continue
            detector = REGISTRY[name]
            check_parameters(detector, params, where)
            try:
                prototypes.append(detector(**params))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"detector `{name}`{where}: {exc}") from exc
        return cls(prototypes)

    def for_session(self) -> list[Detector]:
        return [p.clone() for p in self.prototypes]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.prototypes]


def parameters(detector: type[Detector]) -> dict[str, inspect.Parameter]:
    """The keyword parameters of ``detector``'s constructor, by name."""
    return {
        name: p
        for name, p in inspect.signature(detector.__init__).parameters.items()
        if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def check_parameters(detector: type[Detector], params: Mapping[str, Any], where: str = "") -> None:
    """Raise ``ValueError`` for a name ``detector`` does not take, or a value whose type
    differs from its default's (an int for an int, a number for a float, text for text,
    true/false for a flag); other checks are the constructor's."""
    accepted = parameters(detector)
    takes_any = any(
        p.kind is p.VAR_KEYWORD for p in inspect.signature(detector.__init__).parameters.values()
    )
    valid = sorted([*accepted, "enabled"])
    for key, value in params.items():
        if key not in accepted:
            if takes_any:
                continue
            raise ValueError(
                f"unknown parameter `{key}` for detector `{detector.name}`{where}; "
                f"valid: {', '.join(valid)}" + did_you_mean(key, valid)
            )
        expected = _TYPE_OF.get(type(accepted[key].default))
        if expected is not None and not _is(value, expected[0]):
            raise ValueError(
                f"parameter `{key}` of detector `{detector.name}`{where} must be "
                f"{expected[1]}, got {value!r}"
            )


_TYPE_OF: dict[type, tuple[type, str]] = {
    bool: (bool, "true or false"),
    int: (int, "an integer"),
    float: (float, "a number"),
    str: (str, "text"),
}


def _is(value: Any, expected: type) -> bool:
    if expected is bool or isinstance(value, bool):
        return isinstance(value, bool) and expected is bool
    if expected is float:
        return isinstance(value, int | float)
    return isinstance(value, expected)


BUILTIN: tuple[str, ...] = (
    "detectors.agent_baseline.detector",
    "detectors.budget_overrun",
    "detectors.compliance.decay",
    "detectors.compliance.violation",
    "detectors.duplicate_side_effect",
    "detectors.early_quit.detector",
    "detectors.egress_gaming.detector",
    "detectors.intent_drift.detector",
    "detectors.premature_completion",
    "detectors.runaway_loop.detector",
    "detectors.stalled_run.detector",
    "detectors.workspace_conflict.detector",
)
"""The modules of the built-in detectors: importing one runs its ``@register``. A new
detector is one module (or one family package) plus one line here."""


def load_builtin() -> None:
    """Import every built-in detector module (:data:`BUILTIN`), so their ``@register`` runs."""
    import importlib

    for module in BUILTIN:
        importlib.import_module(module)
