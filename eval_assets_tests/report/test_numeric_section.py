"""The numeric families' scatter (log axes) and MRA by distance, from synthetic per-case rows."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.report.numeric_section import (
    NumericCaseRow,
    mra_by_distance,
    numeric_family_chart,
    numeric_section,
)


def _rows() -> list[NumericCaseRow]:
    rows = []
    for i in range(12):
        target = 0.5 + i * 0.4
        distance = 0.5 + i * 0.5  # 0.5 .. 6.0 m
        rows.append(NumericCaseRow("good", f"c{i}", "camera_distance_m", target, target * 1.04,
                                   "m", distance))
        rows.append(NumericCaseRow("bad", f"c{i}", "camera_distance_m", target,
                                   None if i % 4 == 0 else target * 3, "m", distance))
    rows.append(NumericCaseRow("good", "s0", "object_size_cm", 40.0, 50.0, "cm", None))
    return rows


def test_mra_by_distance_buckets_and_unknown() -> None:
    good = [r for r in _rows() if r.model == "good"]
    buckets = {b.label: b for b in mra_by_distance(good)}
    assert list(buckets) == ["0-1 m", "1-2 m", "2-4 m", ">= 4 m", "unknown"]
    assert buckets["0-1 m"].n == 1 and buckets["1-2 m"].n == 2
    assert buckets["2-4 m"].n == 4 and buckets[">= 4 m"].n == 5
    assert buckets["0-1 m"].mra == pytest.approx(mean_relative_accuracy(0.5 * 1.04, 0.5))
    assert buckets["unknown"].n == 1
    bad = [r for r in _rows() if r.model == "bad"]
    assert all(b.mra == 0.0 for b in mra_by_distance(bad))  # unparseable and 3x off: 0
    assert mra_by_distance([])[0].mra is None  # an empty bucket is n/a, never 0


def test_chart_is_a_deterministic_png_and_the_section_lists_families() -> None:
    rows = _rows()
    png = numeric_family_chart(rows, "camera_distance_m")
    assert png == numeric_family_chart(rows, "camera_distance_m")
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[1] > 600
    with pytest.raises(ValueError, match="no numeric rows"):
        numeric_family_chart(rows, "pair_distance_m")
    html = numeric_section(rows)
    assert html.count("<h3>") == 2 and "camera distance m" in html and "object size cm" in html
    assert html.count('class="chart"') == 2
    assert "unparseable" in html.lower() and ">3<" in html  # bad: 3 unparseable replies
    assert numeric_section([]) == ""


def test_the_report_shows_the_section_only_with_numeric_results() -> None:
    from eval_assets.report.html import render_report
    from eval_assets.report.leaderboard import build_leaderboard
    from eval_assets.schemas.results import CellScores
    from eval_assets.scoring.numeric import NUMERIC, NumericRow, NumericScores
    from eval_assets_tests.report.builders import result, row

    results = [result("r", "good", [row("p", "presence", "yes", "yes", "r")])]
    plain = render_report(build_leaderboard(results), results, [], "t")
    assert "numeric-families" not in plain
    # The section is NUMERIC's extra section, drawn from the cells' per-case numeric rows.
    rows = [NumericRow(case_id=r.case_id, family=r.family, unit=r.unit, target=r.target,
                       predicted=r.prediction, mra=1.0) for r in _rows() if r.model == "good"]
    scores = NumericScores(n=len(rows), unparseable=0, mean_relative_accuracy=1.0,
                           mean_absolute_relative_error=0.0, rows=rows)
    # A new cell, not model_copy: a copy shares the parsed-scores cache of the original.
    numeric = [CellScores.model_validate({**c.model_dump(mode="json"), "scores": {
        **c.scores, NUMERIC.name: scores.model_dump(mode="json")}}) for c in results]
    text = render_report(build_leaderboard(numeric), numeric, [], "t")
    assert 'href="#numeric-families"' in text and '<section id="numeric-families">' in text
    # In the navigation's Spatial group, after the families and their baselines.
    assert text.index('id="baselines"') < text.index('id="g-spatial"') < text.index(
        'id="numeric-families"')


def test_a_rows_score_from_the_metric_wins_and_angles_draw_on_linear_axes(
        recwarn: pytest.WarningsRecorder) -> None:
    # An angle scored by mean angular accuracy: the report shows the metric's score, not an MRA
    # recomputed from the values (which would be 0 for 350 against -10).
    angle = NumericCaseRow("m", "a", "egocentric_direction_deg", -10.0, 350.0, "deg", score=1.0)
    assert angle.mra == 1.0
    assert NumericCaseRow("m", "a", "x", -10.0, None, "deg", score=1.0).mra == 0.0
    rows = [angle, NumericCaseRow("m", "b", "egocentric_direction_deg", 90.0, -80.0, "deg",
                                  score=0.0),
            NumericCaseRow("m", "c", "camera_displacement_m", 0.0, 0.2, "m", score=1.0),
            NumericCaseRow("m", "d", "camera_displacement_m", 1.0, 0.9, "m", score=0.8)]
    for family in ("egocentric_direction_deg", "camera_displacement_m"):
        png = numeric_family_chart(rows, family)
        assert cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR) is not None
    # Log axes with a truth of 0 or a negative angle would warn and draw nothing.
    assert not [w for w in recwarn if "log-scaled" in str(w.message)]
