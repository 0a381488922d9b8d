"""Intent drift: the agent has left the task it was given.

What it looks for
-----------------
An agent drifts when its actions stop being about its task: it refactors modules the
task never named, clones an unrelated repository, follows a tangent found on a web page,
or obeys instructions planted in a tool result (a successful prompt injection is a goal
hijack). Each tool call is compared with two anchors:

- the **goal**: the start step's task text (plus its ``system_instructions`` at a lower
  weight), else the first model call's ``detail["user_message"]``;
- the **footprint** of the first ``warmup_calls`` tool calls: the files, directories,
  hosts and repositories they touched (and the paths their results listed: a search's
  hits are part of the task's neighbourhood), and their vocabulary. The workspace and
  repository of the start step belong to it too. Later on-task actions widen it, so
  exploring a repository never looks like leaving it.

Per tool call two distances in [0, 1] are computed:

- *scope*: a path outside the workspace, a repository other than the task's, a host not
  seen in the goal or the footprint, a directory the task never came near;
  package-manager traffic (``pip install``, ``npm view``) is tooling and never counts;
- *topic*: 1 − cosine similarity of the action's content words (identifiers split,
  tooling words dropped) to the goal and footprint vocabulary, standardised by the
  similarity the on-task start had.

An action is *off-task* when it is off-topic and either off-scope or carries no scope
terms at all (a search query), or when it is far out of scope on its own (a foreign
repository, a path outside the workspace). Repeats of a recent identical action are
neutral (polling is not drift; loops are another detector's business). The mean of the
two distances is standardised against the warm-up and fed to a river ``PageHinkley``
(mode ``up``); an alert needs the change detector to have fired during the current
off-task episode *and* the drift weights of the last ``window`` scored actions to reach
``alarm_weight`` (foreign repository 2; off-topic and off-scope 1; off-topic search or
page on a known site 0.5, or 1 when its terms came from a tool result).

Alerts: ``warn`` / ``notify`` when it first fires, ``critical`` when the drift is
sustained (weights reach ``critical_weight``), recommending a
rollback to the last checkpoint before the onset (kill when there is none). The onset is
the first off-task action of the episode; the evidence, the off-task actions (≤ 20);
the reason names the directories, hosts and repositories the agent moved to and, for an
injection, the tool result in which they first appeared.

>>> from detectors.testing import Session
>>> s = Session("demo", goal="Fix the date parser in src/dates/parse.py and add a test",
...             workspace="/work/dates")
>>> steps = [s.start()]
>>> for path in ["src/dates/parse.py", "tests/test_parse.py", "src/dates/util.py",
...              "src/dates/parse.py", "tests/conftest.py", "src/dates/format.py"]:
...     steps += s.tool("read_file", {"path": path})
>>> steps += s.tool("bash", {"command": "git clone https://github.com/other/payments /tmp/pay"})
>>> for path in ["/tmp/pay/billing/invoice.go", "/tmp/pay/billing/tax.go", "/tmp/pay/README.md"]:
...     steps += s.tool("read_file", {"path": path})
>>> d = IntentDrift()
>>> [(a.severity.value, a.onset_seq, a.raised_seq) for st in steps for a in d.update(st)]
[('warn', 13, 13), ('critical', 13, 17)]
"""

from __future__ import annotations

import json
import posixpath
from collections import deque
from collections.abc import Mapping
from typing import Any

from river.drift import PageHinkley

from detectors.base import Checkpoints, Detector, make_alert
from detectors.registry import register
from features.text_vectors import (
    CONTENT_DROP,
    SparseVector,
    StepTerms,
    add_into,
    cosine,
    directory_of,
    goal_text,
    hash_vector,
    repo_of,
    step_terms,
    tokenize,
)
from models.records import Action, Alert, Severity, Step, StepKind

_MAX_FILES = 256
_MAX_DIRS = 128
_MAX_HOSTS = 64
_MAX_REPOS = 16
_MAX_VEC = 768
_MAX_RESULT_TERMS = 192
_RESULT_CHARS = 1_500


def _remember(table: dict[str, Any], key: str, value: Any, cap: int) -> None:
    """Insert ``key`` (refreshing its recency) into an insertion-ordered bounded table."""
    table.pop(key, None)
    table[key] = value
    while len(table) > cap:
        del table[next(iter(table))]


def _is_mutation(arguments: str | None) -> bool:
    """Whether a call's arguments look like a change to a file: content besides the
    target (two or more free strings, or a multi-line one). Judged from the shape of the
    arguments, so it holds whatever the tool is called (``edit``, ``apply_patch``,
    ``str_replace``, ``write``); a shell command is one string and does not count."""
    if not arguments or not arguments.startswith("{"):
        return False
    try:
        value = json.loads(arguments)
    except ValueError:
        return False
    if not isinstance(value, dict):
        return False
    texts = [v for v in value.values() if isinstance(v, str)]
    if len(texts) >= 3 or any("\n" in v.strip() for v in texts):
        return True
    return len(texts) == 2 and any(len(v) >= 24 and " " in v for v in texts)


def _light_step(ref: Mapping[str, Any], session_id: str) -> Step:
    """A stand-in Step holding only what alerts need (id, seq, source ref): state keeps
    these small references, never whole steps."""
    return Step(
        step_id=str(ref["step_id"]),
        session_id=session_id,
        kind=StepKind.TOOL_CALL,
        ts=int(ref.get("ts", 0)),
        seq=int(ref["seq"]),
        source_ref=str(ref.get("source_ref", "")),
    )


@register
class IntentDrift(Detector):
    """Flags a session whose actions have moved away from its task (see module doc).

    Parameters (defaults hand-set while looking at the committed seed-7 fixtures; NOT yet
    tuned — on seed 7 they give F1 0.52, on seed 11 F1 0.37; see the tuning TODO):

    - ``warmup_calls``: tool calls that define the footprint before anything is scored.
    - ``off_threshold``: topic distance above which an action is off-topic.
    - ``scope_threshold``: scope distance above which an action is off-scope.
    - ``window``/``alarm_weight``/``critical_weight``: drift weights summed over the last
      ``window`` scored actions; ``alarm_weight`` raises warn, ``critical_weight`` critical.
    - ``ph_delta``/``ph_threshold``: river ``PageHinkley`` on the standardised distance.
    """

    name = "intent_drift"

    def __init__(
        self,
        *,
        warmup_calls: int = 6,  # fixtures seed 7: earliest drift onset is tool call 8
        off_threshold: float = 0.7,  # hand-set, untuned
        scope_threshold: float = 0.4,  # between in-workspace reads (0.3) and edits (0.45)
        window: int = 6,
        alarm_weight: float = 2.0,
        critical_weight: float = 4.0,
        ph_delta: float = 0.5,
        ph_threshold: float = 2.0,
        goal_weight: float = 1.0,
        system_weight: float = 0.3,
        n_features: int = 4096,
    ) -> None:
        if warmup_calls < 1:
            raise ValueError(f"warmup_calls must be >= 1, got {warmup_calls}")
        if not 0.0 < off_threshold <= 1.0:
            raise ValueError(f"off_threshold must be in (0, 1], got {off_threshold}")
        if not 0.0 < scope_threshold <= 1.0:
            raise ValueError(f"scope_threshold must be in (0, 1], got {scope_threshold}")
        if window < 2:
            raise ValueError(f"window must be >= 2, got {window}")
        if alarm_weight <= 0:
            raise ValueError(f"alarm_weight must be > 0, got {alarm_weight}")
        if critical_weight < alarm_weight:
            raise ValueError(
                f"critical_weight must be >= alarm_weight, got {critical_weight} < {alarm_weight}"
            )
        if ph_delta < 0:
            raise ValueError(f"ph_delta must be >= 0, got {ph_delta}")
        if ph_threshold <= 0:
            raise ValueError(f"ph_threshold must be > 0, got {ph_threshold}")
        if goal_weight <= 0 or system_weight < 0:
            raise ValueError(
                "goal_weight must be > 0 and system_weight >= 0, "
                f"got {goal_weight}, {system_weight}"
            )
        if n_features < 64:
            raise ValueError(f"n_features must be >= 64, got {n_features}")
        self.warmup_calls = warmup_calls
        self.off_threshold = off_threshold
        self.scope_threshold = scope_threshold
        self.window = window
        self.alarm_weight = alarm_weight
        self.critical_weight = critical_weight
        self.ph_delta = ph_delta
        self.ph_threshold = ph_threshold
        self.goal_weight = goal_weight
        self.system_weight = system_weight
        self.n_features = n_features
        self._reset()

    # -- state -----------------------------------------------------------------------

    def _reset(self) -> None:
        self._session_id = ""
        self._goal = ""  # short, for the reason
        self._goal_vec: SparseVector = {}
        self._goal_words: set[str] = set()
        self._workspace = ""
        self._task_repo = ""
        self._files: dict[str, None] = {}
        self._dirs: dict[str, None] = {}
        self._hosts: dict[str, None] = {}
        self._repos: dict[str, None] = {}
        self._vec: SparseVector = {}  # footprint vocabulary
        self._calls = 0
        self._warm_dist: list[float] = []  # distances of the warm-up calls (≤ warmup_calls)
        self._warm_sim: list[float] = []
        self._mu = 0.0
        self._sd = 0.2
        self._sim_ref = 0.3
        self._recent_actions: deque[str] = deque(maxlen=8)
        self._pending: dict[str, dict[str, Any]] = {}  # off-topic reads: path → ref
        self._scored: deque[tuple[float, dict[str, Any], float, float]] = deque(maxlen=self.window)
        self._result_terms: dict[str, int] = {}  # off-goal host/word → seq of the result
        self._ph = PageHinkley(
            min_instances=1, delta=self.ph_delta, threshold=self.ph_threshold, mode="up"
        )
        self._ph_fired = False
        self._episode: list[dict[str, Any]] = []  # off-task refs of the current episode
        self._episode_new: dict[str, None] = {}  # out-of-scope dirs/hosts/repos named
        self._episode_sims: list[float] = []
        self._injected_from: int | None = None
        self._warned = False
        self._critical = False
        self._quiet = 0  # consecutive on-task actions since the episode's last off-task
        self._checkpoints = Checkpoints()

    # -- anchors ---------------------------------------------------------------------

    def _set_goal(self, text: str, system: str | None) -> None:
        words = tokenize(text)
        vec = hash_vector(words, n_features=self.n_features, weight=self.goal_weight)
        if system and self.system_weight > 0:
            add_into(
                vec,
                hash_vector(
                    tokenize(system[:4_000]), n_features=self.n_features, weight=self.system_weight
                ),
                max_size=_MAX_VEC,
            )
        self._goal_vec = vec
        self._goal_words = set(words[:256])
        self._goal = " ".join(text.split())[:100]
        fake = Step(step_id="goal", session_id="", kind=StepKind.MODEL_CALL, ts=0, text=text)
        terms = step_terms(fake)
        for p in terms.paths:
            self._add_path(p)
        for h in terms.hosts:
            _remember(self._hosts, h, None, _MAX_HOSTS)
        for r in terms.repos:
            _remember(self._repos, r, None, _MAX_REPOS)

    def _on_start(self, step: Step) -> None:
        detail = step.detail if isinstance(step.detail, Mapping) else {}
        ws = detail.get("workspace")
        if isinstance(ws, str) and ws.startswith("/"):
            self._workspace = ws.rstrip("/")
        repo = detail.get("repository")
        if isinstance(repo, str) and repo:
            url = repo if "://" in repo or "@" in repo else f"https://github.com/{repo}"
            if repo.count("/") == 1 and "://" not in repo:
                self._task_repo = repo.lower()
            else:
                self._task_repo = "/".join((repo_of(url) or "").split("/")[1:])
            host = url.split("://", 1)[-1].split("/", 1)[0] if "://" in repo else ""
            if host:
                _remember(self._hosts, host.lower(), None, _MAX_HOSTS)
        system = detail.get("system_instructions")
        text = goal_text(step)
        if text:
            self._set_goal(text, system if isinstance(system, str) else None)

    # -- footprint -------------------------------------------------------------------

    def _relative(self, path: str) -> str | None:
        """``path`` relative to the workspace; None when it lies outside it."""
        if path.startswith("~") or ".." in path.split("/"):
            return None
        if not path.startswith("/"):
            return path
        if self._workspace and (path == self._workspace or path.startswith(self._workspace + "/")):
            return path[len(self._workspace) + 1 :]
        return None if self._workspace else path

    def _add_path(self, path: str) -> None:
        rel = self._relative(path)
        key = rel if rel is not None else path
        _remember(self._files, key, None, _MAX_FILES)
        d = directory_of(key)
        while d and d != "/":
            _remember(self._dirs, d, None, _MAX_DIRS)
            d = directory_of(d)

    def _learn(self, terms: StepTerms, vec: SparseVector) -> None:
        for p in terms.paths:
            self._add_path(p)
        for h in terms.hosts:
            _remember(self._hosts, h, None, _MAX_HOSTS)
        for r in terms.repos:
            _remember(self._repos, r, None, _MAX_REPOS)
        add_into(self._vec, vec, max_size=_MAX_VEC)

    # -- scoring ---------------------------------------------------------------------

    def _path_distance(self, path: str, mutating: bool) -> tuple[float, str]:
        """How far ``path`` lies from the task's scope, and the directory to name.

        Reading inside the workspace is exploration and never leaves the scope (0.3 at
        most); changing a file the task never touched does (0.45 in a known directory,
        0.6 elsewhere) unless nothing is known about the workspace's layout yet. A path
        outside the workspace is out of scope (0.7) unless the footprint holds it."""
        rel = self._relative(path)
        if rel is None:
            if path in self._files or directory_of(path) in self._dirs:
                return 0.0, ""
            return 0.7, directory_of(path) or path
        if rel in self._files:
            return 0.0, ""
        if set(tokenize(posixpath.basename(rel), drop=CONTENT_DROP)) & self._goal_words:
            return 0.0, ""
        d = directory_of(rel)
        known = not d or d in self._dirs
        if not mutating:
            return (0.1 if known else 0.3), ""
        if known:
            return 0.45, rel
        if not self._dirs:
            return 0.35, ""  # no layout known (a research task's notes): cannot judge
        return 0.6, f"{d}/"

    def _scope(self, terms: StepTerms, mutating: bool) -> tuple[float, list[str], bool]:
        """Scope distance of an action, the out-of-scope things it names, and whether it
        names a repository other than the task's."""
        worst, named, foreign = 0.0, [], False
        for p in terms.paths:
            dist, label = self._path_distance(p, mutating)
            worst = max(worst, dist)
            if dist >= self.scope_threshold and label:
                named.append(label)
        for r in terms.repos:
            if r not in self._repos and not (self._task_repo and r.endswith(self._task_repo)):
                worst, foreign = 1.0, True
                named.append(r)
        for h in terms.hosts:
            if h not in self._hosts:
                worst = max(worst, 0.6)
                named.append(h)
        return worst, named, foreign

    def _topic(self, vec: SparseVector) -> float:
        """Similarity of an action's words to the goal or to the footprint vocabulary."""
        return max(cosine(vec, self._goal_vec), cosine(vec, self._vec))

    # -- update ----------------------------------------------------------------------

    def update(self, step: Step) -> list[Alert]:
        self._session_id = step.session_id
        kind = step.kind
        if kind == StepKind.START:
            self._on_start(step)
            return []
        if kind == StepKind.CHECKPOINT:
            self._checkpoints.update(step)
            return []
        if kind == StepKind.MODEL_CALL:
            if not self._goal_vec:
                text = goal_text(step)
                if text:
                    self._set_goal(text, None)
            return []
        if kind == StepKind.TOOL_RESULT:
            self._read_result(step)
            return []
        if kind != StepKind.TOOL_CALL:
            return []
        return self._on_call(step)

    def _read_result(self, step: Step) -> None:
        """Warm-up results widen the footprint (paths a search listed); later results are
        remembered for the terms they introduce, to tell where an action came from."""
        if not step.result:
            return
        terms = step_terms(
            step.with_(arguments=None, text=None), with_result=True, result_chars=_RESULT_CHARS
        )
        if self._calls <= self.warmup_calls:
            for p in terms.paths[:32]:
                self._add_path(p)
            return
        known = self._goal_words
        for h in terms.hosts:
            if h not in self._hosts and h not in self._result_terms:
                _remember(self._result_terms, h, step.seq, _MAX_RESULT_TERMS)
        for w in set(terms.words):
            if w not in known and w not in self._result_terms:
                _remember(self._result_terms, w, step.seq, _MAX_RESULT_TERMS)

    def _on_call(self, step: Step) -> list[Alert]:
        self._calls += 1
        terms = step_terms(step)
        vec = hash_vector(terms.words, n_features=self.n_features)
        if self._calls <= self.warmup_calls:
            if vec and (self._goal_vec or self._vec):
                self._warm_sim.append(self._topic(vec))
            self._learn(terms, vec)
            if step.action:
                self._recent_actions.append(step.action)
            if self._calls == self.warmup_calls:
                self._finish_warmup()
            return []
        action = step.action or ""
        repeat = bool(action) and action in self._recent_actions
        if action:
            self._recent_actions.append(action)
        if repeat or terms.empty:
            return []  # nothing new to judge (polling, retries, bare commands)
        has_items = bool(terms.paths or terms.hosts or terms.repos)
        if not has_items and len(set(terms.words)) < 2:
            return []  # one content word says too little about topic
        mutating = _is_mutation(step.arguments)
        scope, named, foreign = self._scope(terms, mutating)
        sim = self._topic(vec) if vec else self._sim_ref
        topic = 1.0 - min(1.0, sim / self._sim_ref) if vec else 0.5
        off_topic = topic >= self.off_threshold
        injected = self._from_result(terms)
        ref = {
            "seq": step.seq,
            "step_id": step.step_id,
            "source_ref": step.source_ref,
            "ts": step.ts,
        }
        # Weight of the action as evidence of drift (0 = on task); see the module doc.
        if foreign:
            weight = 2.0
        elif off_topic and scope >= self.scope_threshold:
            new_hosts = [h for h in terms.hosts if h not in self._hosts]
            again = new_hosts and all(h in self._episode_new for h in new_hosts)
            weight = 0.5 if again and not terms.paths else 1.0
        elif off_topic and (not has_items or (terms.hosts and not terms.paths)):
            weight = 1.0 if injected is not None else 0.5
        else:
            weight = 0.0
        distance = 0.5 * scope + 0.5 * topic if has_items else topic
        self._ph.update((distance - self._mu) / self._sd)
        if self._ph.drift_detected:
            self._ph_fired = True
        self._scored.append((weight, ref, distance, sim))
        if weight == 0.0:
            if not mutating and scope >= 0.3 and off_topic:
                for p in terms.paths[:4]:  # an off-topic read: the onset if it is changed next
                    _remember(self._pending, p, ref, 8)
            self._quiet += 1
            if distance < 0.3:
                self._learn(terms, vec)  # on-task exploration widens the footprint
            if self._quiet >= self.window - 1 and self._episode:
                self._end_episode()
            return []
        self._quiet = 0
        if not self._episode:
            earlier = [self._pending[p] for p in terms.paths if p in self._pending]
            if earlier:
                self._episode.append(min(earlier, key=lambda r: r["seq"]))
        if len(self._episode) < 20:
            self._episode.append(ref)
        for label in named:
            _remember(self._episode_new, label, None, 8)
        self._episode_sims.append(round(sim, 3))
        del self._episode_sims[:-20]
        if self._injected_from is None and injected is not None and len(self._episode) <= 2:
            self._injected_from = injected
        return self._maybe_alert(step)

    def _from_result(self, terms: StepTerms) -> int | None:
        """Seq of the earliest tool result that introduced one of the action's hosts or
        content words (absent from the goal and the footprint), or None."""
        sources = [
            self._result_terms[t] for t in (*terms.hosts, *terms.words) if t in self._result_terms
        ]
        return min(sources) if sources else None

    def _finish_warmup(self) -> None:
        if self._warm_sim:
            ordered = sorted(self._warm_sim)
            median = ordered[len(ordered) // 2]
            # hand-set (seed 7 warm-up medians fall in 0.2–0.5); the clamp keeps one
            # odd warm-up from making everything look on- or off-topic.
            self._sim_ref = min(0.5, max(0.15, median))
        # The standardisation of the change detector: a hand-set on-task distance 0.25±0.2
        # (untuned); warm-up calls are too few and too alike to estimate it.
        self._mu, self._sd = 0.25, 0.2
        for _ in range(self.warmup_calls):
            self._ph.update(0.0)  # the warm-up is the on-task baseline, by definition
        self._warm_sim = []

    def _end_episode(self) -> None:
        self._episode = []
        self._episode_new = {}
        self._episode_sims = []
        self._pending = {}
        self._injected_from = None
        self._ph_fired = False
        self._warned = False
        self._critical = False

    def _maybe_alert(self, step: Step) -> list[Alert]:
        weight = sum(w for w, *_ in self._scored)
        n_off = sum(1 for w, *_ in self._scored if w > 0)
        if not self._ph_fired or weight < self.alarm_weight:
            return []
        severity = None
        if not self._warned:
            severity = Severity.WARN
            self._warned = True
        if not self._critical and weight >= self.critical_weight:
            severity = Severity.CRITICAL
            self._critical = self._warned = True
        if severity is None:
            return []
        # The onset is the first off-task action of the run that tipped the window (an
        # isolated off-task action long before belongs to no drift), or the off-topic
        # read of the file whose change started it.
        first = min(r["seq"] for w, r, *_ in self._scored if w > 0)
        refs = [r for r in self._episode if r["seq"] >= first]
        earlier = [r for r in self._episode if r["seq"] < first]
        if (
            earlier
            and len(self._episode) > 1
            and earlier[-1] is self._episode[0]
            and (self._episode[1]["seq"] == first)
        ):
            refs.insert(0, earlier[-1])  # the pending read that preceded the first change
        onset = _light_step(refs[0], self._session_id)
        evidence = [_light_step(r, self._session_id) for r in refs]
        checkpoint = self._checkpoints.before(onset.seq)
        if severity == Severity.CRITICAL:
            action = Action.ROLLBACK if checkpoint else Action.KILL
        else:
            action, checkpoint = Action.NOTIFY, None
        score = min(1.0, weight / (2 * self.critical_weight))
        return [
            make_alert(
                self.name,
                onset=onset,
                raised=step,
                evidence=evidence,
                score=score,
                severity=severity,
                reason=self._reason(onset.seq, n_off),
                action=action,
                checkpoint_id=checkpoint,
            )
        ]

    def _reason(self, onset_seq: int, n_off: int) -> str:
        where = ", ".join(f"`{x}`" for x in list(self._episode_new)[:4])
        head = f"since step {onset_seq} the agent "
        head += (
            f"works on {where}, outside the task's scope"
            if where
            else ("works on topics unrelated to the task")
        )
        goal = f" ({self._goal})" if self._goal else ""
        sims = self._episode_sims[-n_off:] or [0.0]
        tail = (
            f": {n_off} of the last {len(self._scored)} actions are off-task "
            f"(similarity to the task {sum(sims) / len(sims):.2f} vs {self._sim_ref:.2f} "
            "at the start)"
        )
        inj = ""
        if self._injected_from is not None:
            inj = (
                f"; the new target first appeared in the tool result at step "
                f"{self._injected_from}, not in the task (possible prompt injection)"
            )
        return head + goal.replace("(", "(task: ", 1) + tail + inj
