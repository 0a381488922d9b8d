"""One feature pass per step: what a step's text says, worked out once, read by all.

:class:`StepFeatures` is a frozen, slotted record of a step's text features - its terms
(paths, hosts, URLs, repositories, content words), its tool view (commands, writes), its
egress facts, the near-duplicate key of its canonical action, the words it is judged
on. Each field is computed the first time something reads it (a detector that never
asks for a field costs nothing) and then kept for every later reader of the same step.
A policy reads a call through them too: the view under its own approval tools
(:meth:`StepFeatures.view_for`, the parse shared) and what its rules say about the call
(:meth:`StepFeatures.derived`, worked out by the first policy detector, read by the
second).

How features reach the detectors: the pipeline gives every detector the step's
*analysed view* (:func:`analysed_view`): an :class:`AnalysedStep` - a :class:`Step`
with each text field cut to :data:`features.text.clip.MAX_ANALYSED_CHARS` - that carries
its ``features``. A detector reads them with :func:`features_of` (``update(step)``
stays the contract); a plain step (a test, a doctest, a notebook) gets features made
on demand, so every detector also runs on steps no pipeline prepared.

A step's features are functions of its content (kind, tool, action, arguments,
result, text, error, status, egress host/URL, ``detail["egress"]``), never of its
identity or position, so the features worked out for a step before the pipeline placed
it (the trajectory features read them there) are the placed step's.

>>> from detectors.testing import Session
>>> call, _ = Session().tool("bash", {"command": "git clone https://github.com/o/r.git /tmp/r"})
>>> view = analysed_view(call)
>>> features_of(view) is view.features, view.features.terms.repos
(True, ('github.com/o/r',))
>>> features_of(call).terms == view.features.terms  # a plain step: made on demand
True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from functools import lru_cache
from typing import Any, TypeVar

from features.calls.action_keys import action_facts, argument_facts, numbers_crc
from features.calls.annotations import annotated, operative_fields
from features.calls.canonical import (
    arguments_value,
    decoded_action_and_json,
    decoded_arguments,
)
from features.calls.effects import call_effect
from features.calls.facts import CallFacts, call_facts, read_tool, sending_tool, target_hosts
from features.calls.tool_view import DEFAULT_APPROVAL_RE, ToolView, approval_view, parsed_view
from features.calls.unknown import arguments_unknown
from features.calls.vectors import (
    StepTerms,
    goal_text,
    instructs_agent,
    result_links,
    step_terms,
    text_vector,
)
from features.calls.words import (
    CLONE_RE,
    SEND_RE,
    authored_payload,
    judged_words,
    mutation_targets,
    tool_words,
)
from features.egress.recipients import recipients
from features.text.clip import cut_analysed
from models.records import Step, StepKind, step_copier

__all__ = ["AnalysedStep", "StepFeatures", "analysed_view", "features_of"]

_UNSET: Any = object()
_LAZY = (
    "_terms",
    "_vector",
    "_view",
    "_parsed",
    "_derived",
    "_call",
    "_targets",
    "_recipients",
    "_action",
    "_operative",
    "_value",
    "_arguments",
    "_numbers",
    "_acts",
    "_judged",
    "_tool_words",
    "_mutations",
    "_authored",
    "_clones",
    "_sends",
    "_links",
    "_instructs",
    "_goal",
    "_effect",
    "_unknown",
)


class StepFeatures:
    """The text features of one step, each computed on first read and kept.

    ``step`` is the (analysed) step they describe. Read-only: setting an attribute
    raises, as on a frozen dataclass.
    """

    # ``step`` in a slot; each lazy field in the instance's dict once worked out, the
    # class's ``_UNSET`` until then (set below): a new instance sets one attribute, not
    # 24 (~5 µs a step, one StepFeatures a step), and reads are as fast
    __slots__ = ("__dict__", "step")
    step: Step
    _terms: StepTerms
    _vector: Mapping[int, float]
    _view: ToolView | None
    _parsed: ToolView
    _derived: tuple[object, Hashable, Any]
    _call: CallFacts
    _targets: set[str]
    _recipients: tuple[tuple[str, str], ...]
    _action: tuple[int, frozenset[str], int, str]
    _operative: tuple[str, str] | None
    _value: Any
    _arguments: tuple[frozenset[str], tuple[str, ...]]
    _numbers: int
    _acts: bool
    _judged: set[str]
    _tool_words: list[str]
    _mutations: set[str]
    _authored: tuple[str, str] | None
    _clones: bool
    _sends: bool
    _links: tuple[int, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]
    _instructs: tuple[int, bool]
    _goal: str | None
    _effect: tuple[str | None, bool]
    _unknown: bool

    def __init__(self, step: Step) -> None:
        object.__setattr__(self, "step", step)  # the lazy fields: the class's _UNSET

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"StepFeatures is read-only: cannot set {name!r}")

    def __repr__(self) -> str:
        known = [n[1:] for n in _LAZY if getattr(self, n) is not _UNSET]
        return f"StepFeatures({self.step.step_id!r}, computed={known})"

    # -- what a step touches ---------------------------------------------------------

    @property
    def terms(self) -> StepTerms:
        """Paths, hosts, repositories, URLs and content words (:func:`step_terms`)."""
        if self._terms is not _UNSET:
            return self._terms
        return _keep(self, "_terms", step_terms(self.step))

    @property
    def action_vector(self) -> Mapping[int, float]:
        """The hashed word vector of the tool and its canonical action (the trajectory
        features' action clusters). Shared: read-only."""
        if self._vector is not _UNSET:
            return self._vector
        step = self.step
        vector = _action_vector(f"{step.tool or ''} {step.action or ''}")
        return _keep(self, "_vector", vector)

    @property
    def goal(self) -> str | None:
        """The task text the step carries (:func:`goal_text`)."""
        if self._goal is not _UNSET:
            return self._goal
        return _keep(self, "_goal", goal_text(self.step))

    # -- a tool call: what it runs, writes, sends ----------------------------------------

    @property
    def view(self) -> ToolView | None:
        """The tool view (:func:`features.calls.tool_view.tool_view`, the default approval
        tools); None for a step that is not a tool call."""
        if self._view is not _UNSET:
            return self._view
        step = self.step
        view = self.view_for(DEFAULT_APPROVAL_RE) if step.kind == StepKind.TOOL_CALL else None
        return _keep(self, "_view", view)

    def view_for(self, approval_tools: re.Pattern[str]) -> ToolView:
        """The call's view with ``approval_tools`` naming the tools that ask a human (a
        policy's own): :func:`features.calls.tool_view.view_of_call`, the parsed part worked
        out once whatever the regex."""
        tool = self.step.tool or ""
        asks = approval_view(tool, approval_tools)
        if asks is not None:
            return asks
        if self._parsed is not _UNSET:
            return self._parsed
        return _keep(self, "_parsed", parsed_view(tool, self.step.arguments))

    def derived(self, owner: object, key: Hashable, compute: Callable[[], _T]) -> _T:
        """What ``owner`` (a policy) derives from this step under ``key`` (e.g. the
        session's workspace): ``compute()`` on the first ask, then kept for every later
        reader that asks with the same owner (by identity) and key - the policy
        detectors check each call against one shared policy. One value is kept: the
        last asked."""
        kept = self._derived
        if kept is not _UNSET and kept[0] is owner and kept[1] == key:
            return kept[2]
        value = compute()
        _keep(self, "_derived", (owner, key, value))
        return value

    @property
    def call(self) -> CallFacts:
        """What the call's name and arguments say before any state (:func:`call_facts`)."""
        if self._call is not _UNSET:
            return self._call
        return _keep(self, "_call", call_facts(self.step.tool, self.step.arguments or ""))

    @property
    def target_hosts(self) -> set[str]:
        """The hosts the arguments send traffic to (:func:`target_hosts`). Shared:
        read-only."""
        if self._targets is not _UNSET:
            return self._targets
        return _keep(self, "_targets", target_hosts(self.step))

    @property
    def recipients(self) -> tuple[tuple[str, str], ...]:
        """The ``(address, kind)`` pairs the call sends data to (:func:`recipients`); none
        for an approval request (:data:`DEFAULT_APPROVAL_RE`), whoever it names."""
        if self._recipients is not _UNSET:
            return self._recipients
        tool = self.step.tool
        # asking the user about a send (the draft, to whom) sends nothing yet
        asks = bool(tool and DEFAULT_APPROVAL_RE.search(tool))
        found = () if asks else recipients(tool, self.step.arguments or "")
        return _keep(self, "_recipients", found)

    @property
    def effect(self) -> tuple[str | None, bool]:
        """(effect class, changes the workspace) of the call
        (:func:`features.calls.effects.call_effect`)."""
        if self._effect is not _UNSET:
            return self._effect
        return _keep(self, "_effect", call_effect(self.step.tool, self.step.arguments or ""))

    @property
    def sends(self) -> bool:
        """Whether the arguments read like a data-carrying request (POST, upload, ...)."""
        if self._sends is not _UNSET:
            return self._sends
        return _keep(self, "_sends", _sends(self.step.arguments or ""))

    @property
    def clones(self) -> bool:
        """Whether the arguments run a clone, fetch, pull or remote of a repository."""
        if self._clones is not _UNSET:
            return self._clones
        return _keep(self, "_clones", _clones(self.step.arguments or ""))

    # -- the canonical action, for repetition ---------------------------------------------

    @property
    def action(self) -> tuple[int, frozenset[str], int, str]:
        """(near-duplicate key, its word bag, crc of the signature, label) of the
        canonical action (or the tool name when there is none):
        :func:`features.calls.action_keys.action_facts`. Annotation arguments (the
        model's note on its call: :mod:`features.calls.annotations`) are left out: a
        call that only re-words its ``description`` is the same action."""
        if self._action is not _UNSET:
            return self._action
        step = self.step
        operative = self._operative_forms()
        action = operative[0] if operative is not None else step.action
        facts = action_facts(step.tool, action or step.tool or "")
        return _keep(self, "_action", facts)

    @property
    def operative(self) -> str | None:
        """The call's arguments without their annotation fields, as canonical JSON, or
        None when there is nothing to drop
        (:func:`features.calls.annotations.operative_arguments`)."""
        forms = self._operative_forms()
        return None if forms is None else forms[1]

    def _operative_forms(self) -> tuple[str, str] | None:
        """(canonical action, canonical JSON) of the operative arguments (:attr:`operative`),
        or None: read by :attr:`action` and :attr:`numbers`, worked out once, from the
        step's one parse (:attr:`arguments_value`) decoded once for both
        (:func:`features.calls.canonical.decoded_action_and_json`)."""
        if self._operative is not _UNSET:
            return self._operative
        step = self.step
        kept = operative_fields(self.arguments_value) if annotated(step.arguments) else None
        forms = (
            None if kept is None else decoded_action_and_json(step.tool, decoded_arguments(kept))
        )
        return _keep(self, "_operative", forms)

    @property
    def arguments_value(self) -> Any:
        """The step's ``arguments`` read back (:func:`features.calls.canonical.arguments_value`:
        the JSON value, the text itself, or None), parsed once for every reader of the
        step. Shared: read-only (a reader that changes it must copy it first)."""
        if self._value is not _UNSET:
            return self._value
        return _keep(self, "_value", arguments_value(self.step.arguments))

    @property
    def arguments_object(self) -> dict[str, Any] | None:
        """The step's ``arguments`` as a JSON object, or None
        (:func:`features.calls.canonical.arguments_object`), from the step's one parse
        (:attr:`arguments_value`). Shared: read-only."""
        text = self.step.arguments
        if not text or not text.startswith("{"):
            return None
        value = self.arguments_value
        return value if isinstance(value, dict) else None

    @property
    def unknown_arguments(self) -> bool:
        """Whether the call's arguments are unknown (not recorded, or masked): no call is
        the same as another by them (:func:`features.calls.unknown.arguments_unknown`)."""
        if self._unknown is not _UNSET:
            return self._unknown
        return _keep(self, "_unknown", arguments_unknown(self.step, lambda: self.arguments_value))

    @property
    def arguments(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """(argument names, argument values): :func:`features.calls.action_keys.argument_facts`."""
        if self._arguments is not _UNSET:
            return self._arguments
        return _keep(self, "_arguments", argument_facts(self.step.arguments))

    @property
    def numbers(self) -> int:
        """crc of the numbers in the raw arguments, annotation arguments left out
        (:mod:`features.calls.annotations`: "back off 8 s" is no new number)."""
        if self._numbers is not _UNSET:
            return self._numbers
        arguments = self.step.arguments
        operative = self.operative
        return _keep(self, "_numbers", numbers_crc(arguments if operative is None else operative))

    @property
    def reads(self) -> bool:
        """Whether the tool's name says it only reads (:func:`read_tool`, memoised)."""
        return read_tool(self.step.tool)

    @property
    def acts(self) -> bool:
        """Whether the call writes a file or sends something (its answer is then a
        receipt: ``Edited <path>: 1 replacement`` says nothing about progress)."""
        if self._acts is not _UNSET:
            return self._acts
        view = self.view
        acts = bool(view is not None and (view.writes or view.unknown_write))
        return _keep(self, "_acts", acts or sending_tool(self.step.tool))

    # -- the words a call is judged on ---------------------------------------------------

    @property
    def judged_words(self) -> set[str]:
        """The content words the call is judged on
        (:func:`features.calls.words.judged_words`). Shared: read-only."""
        if self._judged is not _UNSET:
            return self._judged
        return _keep(self, "_judged", judged_words(self.step.arguments, self.terms))

    @property
    def tool_words(self) -> list[str]:
        """The words of the tool's name and argument keys. Shared: read-only."""
        if self._tool_words is not _UNSET:
            return self._tool_words
        words = tool_words(self.step.tool, self.step.arguments)
        return _keep(self, "_tool_words", words)

    @property
    def mutation_targets(self) -> set[str]:
        """The paths the call changes (:func:`features.calls.words.mutation_targets`)."""
        if self._mutations is not _UNSET:
            return self._mutations
        targets = mutation_targets(
            self.step.arguments, self.terms.paths, lambda: self.arguments_object
        )
        return _keep(self, "_mutations", targets)

    @property
    def authored(self) -> tuple[str, str] | None:
        """(prose written into a target, the other arguments), or None."""
        if self._authored is not _UNSET:
            return self._authored
        return _keep(self, "_authored", authored_payload(self.step.arguments))

    # -- a tool result ---------------------------------------------------------------------

    def result_links(
        self, limit: int = 2_000
    ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """(paths, hosts, pages) the result's first ``limit`` characters link to
        (:func:`result_links`); kept for the last ``limit`` asked."""
        kept = self._links
        if kept is _UNSET or kept[0] != limit:
            kept = _keep(self, "_links", (limit, result_links(self.step.result, limit=limit)))
        return kept[1]

    def instructs_agent(self, limit: int = 2_000) -> bool:
        """Whether the result's first ``limit`` characters address the agent and
        override its task (:func:`instructs_agent`); kept for the last ``limit`` asked."""
        kept = self._instructs
        if kept is _UNSET or kept[0] != limit:
            kept = _keep(
                self, "_instructs", (limit, instructs_agent(self.step.result, limit=limit))
            )
        return kept[1]


for _name in _LAZY:  # not worked out yet: each property does on its first read
    setattr(StepFeatures, _name, _UNSET)
del _name

_T = TypeVar("_T")


def _keep(features: StepFeatures, name: str, value: _T) -> _T:
    """Set a lazily computed slot of ``features`` (read-only from outside)."""
    object.__setattr__(features, name, value)
    return value


_SEND_WORDS = ("post", "put", "patch", "--data", "-d", "-f", "upload", "send")
"""A piece of every match of ``SEND_RE`` (case-folded: the pattern ignores case)."""
_CLONE_WORDS = ("clone", "fetch", "pull", "submodule", "remote")
"""A piece of every match of ``CLONE_RE`` (which heeds case)."""


def _sends(arguments: str) -> bool:
    """``SEND_RE.search(arguments)``, searched only in arguments holding a piece of a
    match: ~9x cheaper on the common call that holds none (the case-insensitive pattern,
    six alternatives, is tried at every position). Each character a case-insensitive
    match holds case-folds to the pattern's own letter, so the folded text holds the piece."""
    folded = arguments.casefold()
    return any(w in folded for w in _SEND_WORDS) and bool(SEND_RE.search(arguments))


def _clones(arguments: str) -> bool:
    """``CLONE_RE.search(arguments)``, searched only in arguments holding one of its verbs."""
    return any(w in arguments for w in _CLONE_WORDS) and bool(CLONE_RE.search(arguments))


@lru_cache(maxsize=1024)
def _action_vector(text: str) -> Mapping[int, float]:
    """``text_vector(text)``, memoised: ~12 µs a tool call, and loops and retries repeat
    the same tool and action (868 distinct pairs among the fixtures' 2,254 calls).
    Shared between calls, so read-only: ``learn_one`` only reads the vector it is given
    (a new centroid is a fresh dict the vector is added into)."""
    return text_vector(text)


class AnalysedStep(Step):
    """A step as detectors see it: each text field cut to ``MAX_ANALYSED_CHARS``, with
    its :class:`StepFeatures`. Equal fields make it the same step to everything that
    reads fields; it pickles (and deep-copies) as the plain :class:`Step` it views, so
    a detector state that keeps it keeps a step."""

    __slots__ = ("features",)
    features: StepFeatures


_copy_as_view = step_copier(AnalysedStep)


def analysed_view(step: Step, features: StepFeatures | None = None) -> AnalysedStep:
    """``step`` as analyses see it (:func:`features.text.clip.analysed_step`: each text field
    cut to ``MAX_ANALYSED_CHARS``), carrying ``features`` - the features of a step with
    the same content (the pipeline works them out before it places the step) - or
    fresh ones.

    >>> from models.records import Step, StepKind
    >>> v = analysed_view(Step(step_id="s/1", session_id="s", kind=StepKind.TOOL_CALL,
    ...                        ts=1, arguments="x" * 100_000))
    >>> len(v.arguments), v.features.step is v
    (65536, True)
    """
    if type(step) is AnalysedStep and features is None:
        return step
    view = _copy_as_view(step)
    cut_analysed(view)
    object.__setattr__(view, "features", features or StepFeatures(view))
    return view


def features_of(step: Step) -> StepFeatures:
    """The features of ``step``: those its analysed view carries, else fresh ones (a
    plain step: a test's, a notebook's)."""
    if type(step) is AnalysedStep:
        return step.features
    return StepFeatures(step)
