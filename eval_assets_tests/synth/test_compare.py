"""The sample comparison's LiDAR point matching, on made-up scans."""

from __future__ import annotations

import numpy as np

from eval_assets_tests.synth.compare import Tolerances, unmatched_points


def _scan(n: int = 2000) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.column_stack([rng.uniform(-5.0, 5.0, (n, 3)), rng.uniform(0.0, 255.0, n)])


def test_a_vanished_point_costs_one_match_not_every_later_one() -> None:
    tol = Tolerances()
    scan = _scan()
    other = np.delete(scan, 700, axis=0)  # a grazing ray that misses on the other CPU
    # Last-bit drift of every coordinate, well inside the tolerance.
    other[:, :3] += np.random.default_rng(1).uniform(-2e-5, 2e-5, other[:, :3].shape)
    assert unmatched_points(scan, other, tol)[0] == 1
    missing, xyz_drift, intensity_drift = unmatched_points(other, scan, tol)
    assert missing == 0 and xyz_drift < 4e-5 and intensity_drift == 0.0


def test_moved_or_recoloured_points_are_unmatched() -> None:
    tol = Tolerances()
    scan = _scan()
    moved, recoloured = scan.copy(), scan.copy()
    moved[:50, 0] += 2e-3
    recoloured[100:110, 3] += 0.3  # one level of red albedo: intensity 0.07-0.3 off
    assert unmatched_points(scan, moved, tol)[0] == 50
    assert unmatched_points(scan, recoloured, tol)[0] == 10
    assert unmatched_points(scan, scan[:0], tol)[0] == len(scan)
