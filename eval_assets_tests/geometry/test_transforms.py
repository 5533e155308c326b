"""TF graph lookups: chains, inverted edges, nearest samples and the tolerance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval_assets.geometry.transforms import TransformGraph, TransformUnavailable, invert_rigid
from eval_assets.recording.messages import Header, TFMessage, Transform, TransformStamped


def _tf(parent: str, child: str, t: float, xyz: tuple[float, float, float],
        rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> TransformStamped:
    r, p, y = (a / 2 for a in rpy)
    q = (  # roll-pitch-yaw (ZYX) to quaternion x, y, z, w
        math.sin(r) * math.cos(p) * math.cos(y) - math.cos(r) * math.sin(p) * math.sin(y),
        math.cos(r) * math.sin(p) * math.cos(y) + math.sin(r) * math.cos(p) * math.sin(y),
        math.cos(r) * math.cos(p) * math.sin(y) - math.sin(r) * math.sin(p) * math.cos(y),
        math.cos(r) * math.cos(p) * math.cos(y) + math.sin(r) * math.sin(p) * math.sin(y),
    )
    return TransformStamped(header=Header.at(t, parent), child_frame_id=child,
                            transform=Transform(translation=xyz, rotation=q))


def _m(tf: TransformStamped) -> np.ndarray:
    return tf.transform.matrix()


def test_three_edge_chain_with_one_inverted_edge() -> None:
    world_base = _tf("world", "base_link", 10.0, (1.0, 2.0, 0.0), (0.0, 0.0, 0.7))
    base_lidar = _tf("base_link", "mid360_link", 10.0, (0.2, 0.0, 0.3), (0.0, 0.3, 0.0))
    # Recorded the "wrong" way round: the camera is the parent of base_link.
    cam_base = _tf("camera_optical", "base_link", 10.0, (0.05, 0.1, -0.3), (-1.2, 0.1, -1.5))
    graph = TransformGraph.from_messages(
        [TFMessage((world_base,)), TFMessage((base_lidar,)), TFMessage((cam_base,))]
    )
    assert graph.frames == ["base_link", "camera_optical", "mid360_link", "world"]

    got = graph.lookup("camera_optical", "mid360_link", 10.0)
    np.testing.assert_allclose(got, _m(cam_base) @ _m(base_lidar), atol=1e-12)

    # Three edges, two of them walked against their recorded direction.
    got = graph.lookup("mid360_link", "world", 10.0)
    expected = np.linalg.inv(_m(base_lidar)) @ np.linalg.inv(_m(world_base))
    np.testing.assert_allclose(got, expected, atol=1e-12)
    chain = graph.lookup("camera_optical", "world", 10.0)
    np.testing.assert_allclose(chain, _m(cam_base) @ np.linalg.inv(_m(world_base)), atol=1e-12)
    np.testing.assert_allclose(graph.lookup("world", "camera_optical", 10.0),
                               np.linalg.inv(chain), atol=1e-12)
    np.testing.assert_array_equal(graph.lookup("world", "world", 10.0), np.eye(4))


def test_nearest_sample_per_edge() -> None:
    graph = TransformGraph()
    for i, t in enumerate([0.0, 0.1, 0.2, 0.3]):
        graph.add(_tf("odom", "base_link", t, (float(i), 0.0, 0.0)))
    graph.add(_tf("base_link", "camera", 0.12, (0.0, 0.0, 5.0)))

    def x_at(t: float) -> float:
        return float(graph.lookup("odom", "base_link", t)[0, 3])

    assert x_at(0.14) == 1.0
    assert x_at(0.16) == 2.0
    assert x_at(0.25) == 2.0  # a tie goes to the earlier sample
    assert x_at(-0.05) == 0.0
    assert x_at(0.39) == 3.0
    assert graph.lookup("odom", "camera", 0.21)[:3, 3].tolist() == [2.0, 0.0, 5.0]


def test_samples_added_out_of_order_are_sorted() -> None:
    graph = TransformGraph()
    for i, t in [(2, 0.2), (0, 0.0), (1, 0.1)]:
        graph.add(_tf("odom", "base_link", t, (float(i), 0.0, 0.0)))
    assert graph.lookup("odom", "base_link", 0.09)[0, 3] == 1.0
    graph.add(_tf("odom", "base_link", 0.08, (9.0, 0.0, 0.0)))
    assert graph.lookup("odom", "base_link", 0.09)[0, 3] == 9.0


def test_beyond_tolerance_names_the_edge_and_the_gap() -> None:
    graph = TransformGraph()
    graph.add(_tf("world", "base_link", 0.0, (0.0, 0.0, 0.0)))
    graph.add(_tf("world", "base_link", 1.0, (1.0, 0.0, 0.0)))
    graph.add(_tf("base_link", "camera", 0.5, (0.0, 0.0, 1.0)))
    assert graph.lookup("world", "base_link", 0.1)[0, 3] == 0.0  # exactly at the limit
    with pytest.raises(TransformUnavailable,
                       match=r"'world' <- 'base_link' has no sample within 0.1 s of t=0.500000 "
                             r"\(nearest is 0.500 s away; 2 samples"):
        graph.lookup("camera", "world", 0.5)
    assert graph.lookup("camera", "world", 0.5, tolerance=0.6)[2, 3] == -1.0


def test_unknown_and_disconnected_frames() -> None:
    graph = TransformGraph()
    graph.add(_tf("world", "base_link", 0.0, (0.0, 0.0, 0.0)))
    graph.add(_tf("map", "robot2", 0.0, (0.0, 0.0, 0.0)))
    with pytest.raises(TransformUnavailable, match=r"source frame 'lidar' does not appear"):
        graph.lookup("world", "lidar", 0.0)
    with pytest.raises(TransformUnavailable, match=r"separate trees"):
        graph.lookup("world", "robot2", 0.0)
    assert issubclass(TransformUnavailable, LookupError)


def test_search_skips_stale_edges_when_another_chain_is_fresh() -> None:
    graph = TransformGraph()
    graph.add(_tf("a", "c", 0.0, (100.0, 0.0, 0.0)))  # direct but stale at t=5
    graph.add(_tf("a", "b", 5.0, (1.0, 0.0, 0.0)))
    graph.add(_tf("b", "c", 5.0, (0.0, 2.0, 0.0)))
    assert graph.lookup("a", "c", 5.0)[:3, 3].tolist() == [1.0, 2.0, 0.0]


def test_invert_rigid_matches_matrix_inverse() -> None:
    m = _m(_tf("a", "b", 0.0, (0.3, -2.0, 1.5), (0.4, -0.2, 2.0)))
    np.testing.assert_allclose(invert_rigid(m), np.linalg.inv(m), atol=1e-12)


def test_add_rejects_malformed_transforms() -> None:
    with pytest.raises(ValueError, match="must be non-empty and different"):
        TransformGraph().add(_tf("a", "a", 0.0, (0.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match="must be non-empty"):
        TransformGraph().add(_tf("", "b", 0.0, (0.0, 0.0, 0.0)))
