"""A per-session sub-goal graph: what the agent has been working on, and whether it
is still getting somewhere.

Consecutive related actions form a *segment* (same action cluster, or touching a path the
segment already touched); each segment is a node of a ``networkx.DiGraph`` keyed by its
cluster, and a move from one segment to the next is an edge (its weight counts the
moves). Coming back to a cluster already in the graph is a *revisit*; a new cluster, a new
file or a new check is *progress*. :attr:`SubgoalGraph.progress` is the share of the last
``window`` actions that brought something new: near 1 while exploring or building, near 0
while going round in circles. The graph is capped at ``max_nodes`` (the least recently
visited node is dropped), so memory does not grow with the session.

>>> g = SubgoalGraph(window=6)
>>> for cluster, paths in [(0, ["src/a.py"]), (0, ["src/b.py"]), (1, []), (0, ["src/a.py"]),
...                         (1, []), (0, ["src/a.py"])]:
...     _ = g.update(cluster, paths, seq=len(g.graph))
>>> sorted(g.graph.edges), round(g.progress, 2)
([(0, 1), (1, 0)], 0.5)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import networkx as nx

__all__ = ["SubgoalGraph"]


class SubgoalGraph:
    """Segments of related consecutive actions as nodes, transitions as edges."""

    def __init__(self, *, max_nodes: int = 32, window: int = 10, max_paths: int = 256) -> None:
        if max_nodes < 2:
            raise ValueError(f"max_nodes must be >= 2, got {max_nodes}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if max_paths < 1:
            raise ValueError(f"max_paths must be >= 1, got {max_paths}")
        self.max_nodes = max_nodes
        self.window = window
        self.max_paths = max_paths
        self._reset()

    def _reset(self) -> None:
        self.graph: nx.DiGraph = nx.DiGraph()
        self.current: int | None = None
        self.current_paths: set[str] = set()
        self.seen_paths: dict[str, None] = {}
        self.recent: deque[int] = deque(maxlen=self.window)
        self.segments = 0
        self.revisits = 0

    def update(self, cluster: int, paths: Iterable[str] = (), *, seq: int = 0) -> bool:
        """Add one action (its cluster id and the paths it touched) at step ``seq``.
        Returns True when the action brought something new (a new node or path)."""
        paths = list(paths)
        new_paths = [p for p in paths if p not in self.seen_paths]
        for p in new_paths:
            self.seen_paths[p] = None
        while len(self.seen_paths) > self.max_paths:
            del self.seen_paths[next(iter(self.seen_paths))]
        same_segment = cluster == self.current or bool(self.current_paths.intersection(paths))
        new_node = False
        if not same_segment:
            node = cluster
            if node in self.graph:
                self.revisits += 1
            else:
                new_node = True
                self.graph.add_node(node, first_seq=seq, actions=0, paths=0)
            if self.current is not None and self.current in self.graph:
                w = self.graph.get_edge_data(self.current, node, {"weight": 0})["weight"]
                self.graph.add_edge(self.current, node, weight=w + 1)
            self.current = node
            self.current_paths = set()
            self.segments += 1
        assert self.current is not None
        data = self.graph.nodes[self.current]
        data["actions"] += 1
        data["paths"] += len(new_paths)
        data["last_seq"] = seq
        self.current_paths.update(paths)
        if len(self.current_paths) > 64:
            self.current_paths = set(paths)
        self._cap()
        novel = new_node or bool(new_paths)
        self.recent.append(1 if novel else 0)
        return novel

    def _cap(self) -> None:
        while self.graph.number_of_nodes() > self.max_nodes:
            oldest = min(
                (n for n in self.graph.nodes if n != self.current),
                key=lambda n: (self.graph.nodes[n].get("last_seq", -1), n),
            )
            self.graph.remove_node(oldest)

    @property
    def progress(self) -> float:
        """Share of the last ``window`` actions that brought a new node or path (1.0
        before any action)."""
        return sum(self.recent) / len(self.recent) if self.recent else 1.0
