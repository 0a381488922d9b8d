"""Online action clusters: every step's action gets a small integer cluster id.

Leader clustering on the hashed text vectors of :mod:`features.calls.vectors`: a step
joins the most similar cluster when the cosine to its centroid reaches ``threshold``,
otherwise it founds a new one. At most ``max_clusters`` are kept; when full, the least
recently used cluster is dropped (its id is never reused), so memory is bounded whatever
the session length. river-style: ``learn_one`` changes state, ``predict_one`` does not.

Why not ``river.cluster.DBSTREAM``/``CluStream``: they work on dense dict features with
Euclidean distance and keep micro-clusters whose count depends on the data; leader
clustering on cosine gives the same "same kind of action" grouping with a hard memory
cap and one comparison per live cluster.

>>> from features.calls.vectors import text_vector
>>> c = ActionClusters(threshold=0.5)
>>> [c.learn_one(text_vector(t)) for t in
...  ["read src/dates/parse.py", "read src/dates/format.py", "search delta works history",
...   "read src/dates/parse.py"]]
[0, 0, 1, 0]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from features.calls.vectors import SparseVector, add_into, cosine, norm

__all__ = ["ActionClusters"]


class ActionClusters:
    """Bounded leader clustering of sparse vectors (cosine similarity)."""

    def __init__(self, *, threshold: float = 0.45, max_clusters: int = 24, max_terms: int = 128):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if max_clusters < 1:
            raise ValueError(f"max_clusters must be >= 1, got {max_clusters}")
        if max_terms < 1:
            raise ValueError(f"max_terms must be >= 1, got {max_terms}")
        self.threshold = threshold
        self.max_clusters = max_clusters
        self.max_terms = max_terms
        self._reset()

    def _reset(self) -> None:
        self.centroids_: dict[int, SparseVector] = {}
        self.sizes_: dict[int, int] = {}
        self.last_used_: dict[int, int] = {}
        self.next_id_ = 0
        self.n_ = 0
        self._norms: dict[int, float] = {}  # a cache of the centroids' norms, not state

    def predict_one(self, vec: Mapping[int, float]) -> tuple[int | None, float]:
        """The nearest cluster and its cosine similarity; ``(None, 0.0)`` when none is
        similar enough (the vector would found a new cluster)."""
        best, best_sim = None, 0.0
        norms = self._norms
        vec_norm = norm(vec) if vec else 0.0
        for cid, centroid in self.centroids_.items():
            # the vector's norm once for all centroids, each centroid's until it changes
            centroid_norm = norms.get(cid)
            if centroid_norm is None:
                centroid_norm = norms[cid] = norm(centroid)
            sim = cosine(vec, centroid, a_norm=vec_norm, b_norm=centroid_norm)
            if sim > best_sim or (sim == best_sim and best is not None and cid < best):
                best, best_sim = cid, sim
        if best is None or best_sim < self.threshold:
            return None, best_sim
        return best, best_sim

    def learn_one(self, vec: Mapping[int, float]) -> int:
        """Assign ``vec`` to a cluster (updating its centroid) and return the cluster id.
        An empty vector goes to cluster ``-1`` and changes nothing."""
        if not vec:
            return -1
        self.n_ += 1
        cid, _ = self.predict_one(vec)
        if cid is None:
            if len(self.centroids_) >= self.max_clusters:
                oldest = min(self.last_used_, key=lambda k: (self.last_used_[k], k))
                del self.centroids_[oldest], self.sizes_[oldest], self.last_used_[oldest]
                self._norms.pop(oldest, None)
            cid = self.next_id_
            self.next_id_ += 1
            self.centroids_[cid] = {}
            self.sizes_[cid] = 0
        add_into(self.centroids_[cid], vec, max_size=self.max_terms)
        self._norms.pop(cid, None)
        self.sizes_[cid] += 1
        self.last_used_[cid] = self.n_
        return cid

    def state(self) -> dict[str, Any]:
        """The learned attributes as plain data (for checkpointing)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_")}
