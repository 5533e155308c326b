"""Charts: real PNG plots, byte-identical across runs, different for different data."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from eval_assets.report.charts import CHART_DPI, family_chart, headline_chart, recording_chart
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets_tests.report.builders import THIRDS, result, row


def leaderboard(flip: bool = False):
    """Two models on two recordings; ``flip`` swaps one answer (so the plot must change)."""
    first = "no" if flip else "yes"
    return build_leaderboard([
        result("rec-a", "good", [row("a1", "presence", "yes", first, "rec-a"),
                                 row("a2", "horizontal_direction", "left", "left", "rec-a",
                                     THIRDS)]),
        result("rec-b", "good", [row("b1", "presence", "no", "no", "rec-b")]),
        result("rec-a", "bad", [row("a1", "presence", "yes", "no", "rec-a"),
                                row("a2", "horizontal_direction", "left", "?", "rec-a", THIRDS)]),
    ])


@pytest.mark.parametrize("chart", [headline_chart, family_chart, recording_chart])
def test_chart_is_a_deterministic_png_that_depends_on_the_data(chart) -> None:
    png = chart(leaderboard())
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png == chart(leaderboard())
    assert png != chart(leaderboard(flip=True))
    assert b"Software" not in png and b"tIME" not in png
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    assert image.shape[1] == round(9.0 * CHART_DPI)
    # A real plot: many distinct colours, not a blank canvas.
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20


def test_charts_need_pooled_rows() -> None:
    df = leaderboard()
    with pytest.raises(ValueError, match="all recordings"):
        headline_chart(df[df.recording != "all recordings"])


@pytest.mark.parametrize("chart", [headline_chart, family_chart, recording_chart])
def test_bars_below_the_minimum_n_are_drawn_differently(chart) -> None:
    # Every bar of this small leaderboard is under 20 cases: with a minimum of 1 none is.
    marked, plain = chart(leaderboard()), chart(leaderboard(), min_n=1)
    assert marked != plain
    faded = cv2.imdecode(np.frombuffer(marked, np.uint8), cv2.IMREAD_COLOR)
    solid = cv2.imdecode(np.frombuffer(plain, np.uint8), cv2.IMREAD_COLOR)
    # The models' solid colours (Okabe-Ito blue and orange, BGR) cover fewer pixels when the
    # bars are faded and hatched; only the legend keeps them solid.
    colours = [np.array([178, 114, 0]), np.array([0, 159, 230])]

    def count(image: np.ndarray) -> int:
        return sum(int(np.all(np.abs(image.astype(int) - c) < 8, axis=2).sum())
                   for c in colours)

    assert count(faded) < count(solid) / 2
