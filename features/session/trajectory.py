"""Per-session trajectory features assigned online to every tool call.

:class:`TrajectoryFeatures` combines :class:`~features.session.clusters.ActionClusters` (what
*kind* of action this is) and :class:`~features.session.subgoals.SubgoalGraph` (segments of
related actions, transitions between them, and how much of the recent work was new).
It reads each call's shared :class:`~features.calls.step_features.StepFeatures` (its action
vector and paths). The pipeline calls :meth:`TrajectoryFeatures.observe` on each placed
step and records the result in the step's ``detail`` (``cluster``, ``progress``), so
detectors, the explorer and the tuning notebooks see the same figures live and in
replay. Memory is bounded by the two parts' caps; no I/O, no clock.

>>> from detectors.testing import Session
>>> s, f = Session(), TrajectoryFeatures()
>>> for path in ["src/a.py", "src/b.py", "src/a.py", "src/a.py"]:
...     call, _ = s.tool("read_file", {"path": path})
...     print(f.observe(call))
{'cluster': 0, 'progress': 1.0}
{'cluster': 0, 'progress': 1.0}
{'cluster': 0, 'progress': 0.667}
{'cluster': 0, 'progress': 0.5}
"""

from __future__ import annotations

from typing import Any

from features.calls.step_features import StepFeatures, features_of
from features.session.clusters import ActionClusters
from features.session.subgoals import SubgoalGraph
from models.records import Step, StepKind

__all__ = ["TrajectoryFeatures"]


class TrajectoryFeatures:
    """Action cluster and sub-goal progress of every tool call of one session."""

    def __init__(
        self,
        *,
        threshold: float = 0.45,
        max_clusters: int = 24,
        max_nodes: int = 32,
        window: int = 10,
    ) -> None:
        self.threshold = threshold
        self.max_clusters = max_clusters
        self.max_nodes = max_nodes
        self.window = window
        self.clusters = ActionClusters(threshold=threshold, max_clusters=max_clusters)
        self.subgoals = SubgoalGraph(max_nodes=max_nodes, window=window)

    def observe(
        self, step: Step, *, seq: int | None = None, features: StepFeatures | None = None
    ) -> dict[str, Any]:
        """The trajectory features of ``step`` (empty for anything but a tool call);
        ``seq`` is its position when the step itself is not sequenced yet; ``features``
        its text features when the caller has them (else those of :func:`features_of`)."""
        if step.kind != StepKind.TOOL_CALL:
            return {}
        features = features or features_of(step)
        cluster = self.clusters.learn_one(features.action_vector)
        self.subgoals.update(cluster, features.terms.paths, seq=step.seq if seq is None else seq)
        return {"cluster": cluster, "progress": round(self.subgoals.progress, 3)}
