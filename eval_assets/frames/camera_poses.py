"""The recording's camera poses over time, from its TF: what the tracks, the motion families and
the frozen-camera check read.

TF is sampled; :class:`CameraPoses` interpolates between the two samples of the moving edges
around an image's stamp (position linearly, rotation by slerp).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from eval_assets.frames.pointclouds import TF_TOLERANCE
from eval_assets.geometry.transforms import TransformGraph
from eval_assets.recording import Recording, RecordingError
from eval_assets.recording.messages import TFMessage
from eval_assets.recording.names import TF_STREAM
from eval_assets.schemas.frames import RectifiedFrame

__all__ = ["CameraPoses", "root_of", "unrectify_matrix"]


def root_of(frame: str, parents: dict[str, str]) -> str:
    """The top of ``frame``'s TF tree: its parent's parent's ... until one has no parent."""
    seen = {frame}
    while frame in parents and parents[frame] not in seen:
        frame = parents[frame]
        seen.add(frame)
    return frame


class CameraPoses:
    """The recording's rectified camera poses in the TF world frame at any time.

    TF is sampled (the simulator's ``world -> base_link`` at 10 Hz): the nearest sample to an
    image can be 50 ms away, which a turning robot turns into centimetres at the object (and
    smears an object's points fused over frames). Between the two samples of the moving edges
    that bracket ``t`` the pose is interpolated (position linearly, rotation by slerp); at a
    sample, or without a bracketing pair within :data:`TF_TOLERANCE` of ``t``, it is the
    nearest sample's, as :meth:`TransformGraph.lookup` gives.
    """

    def __init__(self, messages: Iterable[TFMessage], ok: bool = True) -> None:
        self.graph = TransformGraph()
        self.parents: dict[str, str] = {}
        self.ok = ok
        samples: dict[str, list[tuple[float, np.ndarray]]] = {}
        for msg in messages:
            for tf in msg.transforms:
                self.graph.add(tf)
                self.parents[tf.child_frame_id] = tf.header.frame_id
                samples.setdefault(tf.child_frame_id, []).append(
                    (float(tf.header.stamp), tf.transform.matrix()))
        # Stamps of the edges that move (a static mount's samples are all alike), per child.
        self._moving: dict[str, np.ndarray] = {
            child: np.unique([t for t, _ in rows]) for child, rows in samples.items()
            if any(not np.allclose(m, rows[0][1], atol=1e-9) for _, m in rows)}

    @classmethod
    def of(cls, recording: Recording) -> CameraPoses:
        """The poses from the recording's TF stream (``ok`` False without one)."""
        if TF_STREAM not in recording.streams:
            return cls((), ok=False)
        errors: list[RecordingError] = []
        return cls((msg for _, msg in recording.iter_messages(TF_STREAM, errors)))

    def world_of(self, frame_id: str) -> str:
        """The root of ``frame_id``'s TF tree (``world``, ``map``, ...)."""
        return root_of(frame_id, self.parents)

    def _stamps(self, world: str, frame_id: str) -> np.ndarray:
        chain: list[np.ndarray] = []
        node, seen = frame_id, {frame_id}
        while node != world and node in self.parents and self.parents[node] not in seen:
            if node in self._moving:
                chain.append(self._moving[node])
            node = self.parents[node]
            seen.add(node)
        return np.unique(np.concatenate(chain)) if chain else np.empty(0)

    def at(self, world: str, frame_id: str, t: float) -> np.ndarray:
        """``world_from_frame`` at ``t``; raises :class:`TransformUnavailable` as the graph's
        lookup does."""
        nearest = self.graph.lookup(world, frame_id, t, tolerance=TF_TOLERANCE)
        stamps = self._stamps(world, frame_id)
        i = int(np.searchsorted(stamps, t, side="right"))
        if i == 0 or i == len(stamps):
            return nearest
        a, b = float(stamps[i - 1]), float(stamps[i])
        if a == t or t - a > TF_TOLERANCE or b - t > TF_TOLERANCE:
            return nearest
        first = self.graph.lookup(world, frame_id, a, tolerance=TF_TOLERANCE)
        last = self.graph.lookup(world, frame_id, b, tolerance=TF_TOLERANCE)
        w = (t - a) / (b - a)
        # scipy here, not at the top: this module loads with every Dagster process (the dataset
        # families import it), and scipy.spatial is a sixth of a second of each one's start.
        from scipy.spatial.transform import Rotation, Slerp

        out = np.eye(4)
        out[:3, :3] = Slerp([0.0, 1.0], Rotation.from_matrix(
            np.stack([first[:3, :3], last[:3, :3]])))(w).as_matrix()
        out[:3, 3] = (1.0 - w) * first[:3, 3] + w * last[:3, 3]
        return out

    def rectified(self, world: str, frame: RectifiedFrame, t: float) -> np.ndarray:
        """``world_from_camera`` of ``frame``'s RECTIFIED camera (the one the point clouds are
        stored in) at ``t``: the recorded camera pose turned back by ``R_rect``."""
        return self.at(world, frame.camera_frame_id, t) @ unrectify_matrix(frame)


def unrectify_matrix(frame: RectifiedFrame) -> np.ndarray:
    """``camera_from_rectified`` of ``frame`` (4 x 4): its ``R_rect`` turned back."""
    unrectify = np.eye(4)
    unrectify[:3, :3] = np.asarray(frame.R_rect, dtype=np.float64).reshape(3, 3).T
    return unrectify
