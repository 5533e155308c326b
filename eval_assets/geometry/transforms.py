"""A time-indexed TF graph built from recorded ``TransformStamped`` samples.

Each recorded transform is one edge sample ``parent <- child`` (it maps child-frame points into the
parent frame) stamped with its header time. A lookup finds a chain of frames by breadth-first
search, using edges in either direction, and takes on every edge the sample nearest in time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from eval_assets.recording.messages import TFMessage, TransformStamped


class TransformUnavailable(LookupError):
    """No transform between two frames at the requested time; the message says which edge, why."""


def invert_rigid(m: np.ndarray) -> np.ndarray:
    """Inverse of a 4×4 rigid transform (rotation transposed, translation rotated back)."""
    inv = np.eye(4)
    rot_t = m[:3, :3].T
    inv[:3, :3] = rot_t
    inv[:3, 3] = -rot_t @ m[:3, 3]
    return inv


@dataclass
class _EdgeSamples:
    """Samples of one edge ``parent <- child``, sorted by stamp lazily (first lookup after adds)."""

    parent: str
    child: str
    stamps: list[float] = field(default_factory=list)
    matrices: list[np.ndarray] = field(default_factory=list)
    _sorted: tuple[np.ndarray, np.ndarray] | None = None

    def append(self, stamp: float, matrix: np.ndarray) -> None:
        self.stamps.append(stamp)
        self.matrices.append(matrix)
        self._sorted = None

    def sorted_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._sorted is None:
            stamps = np.asarray(self.stamps, dtype=np.float64)
            # Stable, so samples sharing a stamp keep insertion order and the choice is repeatable.
            order = np.argsort(stamps, kind="stable")
            self._sorted = (stamps[order], np.stack(self.matrices)[order])
        return self._sorted

    def nearest(self, t: float) -> tuple[float, np.ndarray]:
        """``(|dt|, parent_from_child)`` of the sample nearest to ``t``; ties go to the earlier."""
        stamps, mats = self.sorted_arrays()
        i = int(np.searchsorted(stamps, t))
        lo, hi = max(i - 1, 0), min(i, len(stamps) - 1)
        d_lo, d_hi = abs(t - stamps[lo]), abs(stamps[hi] - t)
        j = lo if d_lo <= d_hi else hi
        return float(min(d_lo, d_hi)), mats[j]


class TransformGraph:
    """Recorded transforms between named frames, queryable at any time within a tolerance."""

    def __init__(self) -> None:
        self._edges: dict[tuple[str, str], _EdgeSamples] = {}
        self._neighbours: dict[str, set[str]] = {}

    @classmethod
    def from_messages(cls, msgs: Iterable[TFMessage]) -> TransformGraph:
        """A graph holding every transform of every message."""
        graph = cls()
        for msg in msgs:
            for tf in msg.transforms:
                graph.add(tf)
        return graph

    @property
    def frames(self) -> list[str]:
        """Every frame named by a recorded transform, sorted."""
        return sorted(self._neighbours)

    def add(self, tf: TransformStamped) -> None:
        """Record one sample of the edge ``header.frame_id <- child_frame_id``."""
        parent, child = tf.header.frame_id, tf.child_frame_id
        if not parent or not child or parent == child:
            raise ValueError(
                f"tf transform at t={tf.header.stamp:.6f} has parent {parent!r} and child "
                f"{child!r}; both must be non-empty and different"
            )
        matrix = tf.transform.matrix()
        if not np.all(np.isfinite(matrix)):
            raise ValueError(f"tf transform {parent!r} <- {child!r} at t={tf.header.stamp:.6f} "
                             "has non-finite values")
        if (child, parent) in self._edges:
            # The same pair recorded the other way round: keep one edge, stored one way.
            self._edges[(child, parent)].append(tf.header.stamp, invert_rigid(matrix))
        else:
            edge = self._edges.get((parent, child))
            if edge is None:
                edge = self._edges[(parent, child)] = _EdgeSamples(parent, child)
            edge.append(tf.header.stamp, matrix)
        self._neighbours.setdefault(parent, set()).add(child)
        self._neighbours.setdefault(child, set()).add(parent)

    def _step(self, a: str, b: str, t: float) -> tuple[float, np.ndarray, _EdgeSamples]:
        """``(|dt|, b_from_a, edge)`` for adjacent frames ``a`` and ``b``."""
        edge = self._edges.get((b, a))
        if edge is not None:
            dt, m = edge.nearest(t)
            return dt, m, edge
        edge = self._edges[(a, b)]
        dt, m = edge.nearest(t)
        return dt, invert_rigid(m), edge

    def _bfs(self, source: str, target: str, t: float, tolerance: float | None) -> list[str] | None:
        """Frames from ``source`` to ``target``; only edges usable at ``t`` unless no tolerance."""
        previous: dict[str, str] = {source: source}
        queue = deque([source])
        while queue:
            a = queue.popleft()
            if a == target:
                path = [a]
                while path[-1] != source:
                    path.append(previous[path[-1]])
                return path[::-1]
            for b in sorted(self._neighbours[a]):  # sorted: the same path every run
                if b in previous:
                    continue
                if tolerance is not None and self._step(a, b, t)[0] > tolerance:
                    continue
                previous[b] = a
                queue.append(b)
        return None

    def lookup(self, target: str, source: str, t: float, tolerance: float = 0.1) -> np.ndarray:
        """The 4×4 matrix mapping points in ``source`` into ``target`` at time ``t``.

        Every edge of the chain uses its sample nearest to ``t`` by header stamp, which must lie
        within ``tolerance`` seconds. Raises :class:`TransformUnavailable` naming the unknown frame,
        the disconnected frames or the edge without a recent enough sample.
        """
        if target == source:
            return np.eye(4)
        for name, role in ((source, "source"), (target, "target")):
            if name not in self._neighbours:
                raise TransformUnavailable(
                    f"{role} frame {name!r} does not appear in the tf stream; recorded frames: "
                    f"{', '.join(self.frames) or '(none)'}"
                )
        path = self._bfs(source, target, t, tolerance)
        if path is None:
            raise TransformUnavailable(self._explain(target, source, t, tolerance))
        result = np.eye(4)
        for a, b in pairwise(path):
            result = self._step(a, b, t)[1] @ result
        return result

    def chain_stamps(self, target: str, source: str) -> np.ndarray:
        """Sorted distinct stamps of every sample on the edges chaining ``source`` to ``target``
        (empty when they are not connected): the times at which the chain's pose changes."""
        if target not in self._neighbours or source not in self._neighbours:
            return np.empty(0)
        path = self._bfs(source, target, 0.0, None)
        if path is None or len(path) < 2:
            return np.empty(0)
        stamps = [self._step(a, b, 0.0)[2].sorted_arrays()[0] for a, b in pairwise(path)]
        return np.unique(np.concatenate(stamps))

    def _explain(self, target: str, source: str, t: float, tolerance: float) -> str:
        structural = self._bfs(source, target, t, None)
        if structural is None:
            return (
                f"no tf chain connects {source!r} to {target!r}: they are in separate trees "
                f"(frames reachable from {source!r}: {', '.join(sorted(self._component(source)))})"
            )
        stale = []
        for a, b in pairwise(structural):
            dt, _, edge = self._step(a, b, t)
            if dt > tolerance:
                stamps = edge.sorted_arrays()[0]
                stale.append(
                    f"edge {edge.parent!r} <- {edge.child!r} has no sample within {tolerance:g} s "
                    f"of t={t:.6f} (nearest is {dt:.3f} s away; {len(stamps)} samples from "
                    f"{stamps[0]:.6f} to {stamps[-1]:.6f})"
                )
        return f"tf chain {' -> '.join(structural)} unavailable at t={t:.6f}: " + "; ".join(stale)

    def _component(self, start: str) -> set[str]:
        seen = {start}
        queue = deque([start])
        while queue:
            for b in self._neighbours[queue.popleft()]:
                if b not in seen:
                    seen.add(b)
                    queue.append(b)
        return seen
