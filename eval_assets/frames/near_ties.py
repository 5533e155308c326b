"""Quality windows exactly as dimOS draws them: near-ties re-checked at full resolution.

The scan scores every candidate from a reduced-size JPEG decode (a few percent of a full one);
those scores differ from dimOS's ``Image.sharpness``/``Image.brightness`` (full decode) by up to
about 0.002 (measured on a 1280x720 rig recording: 0.0023 sharpness, 0.0005 brightness). That
is enough to flip the winner of a window whose two sharpest frames are closer than that, or a
frame whose brightness sits at the floor. So every frame that could decide differently is scored
again as dimOS does: each frame within :data:`BRIGHTNESS_MARGIN` of ``min_brightness``, then in
each window every frame within :data:`SHARPNESS_MARGIN` of the window's best. The margins are
about ten times the largest difference measured; the rest of the frames cannot win.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from eval_assets.frames.quality import FrameQuality

SHARPNESS_MARGIN = 0.02
BRIGHTNESS_MARGIN = 0.01


def window_groups(ts: np.ndarray, candidates: Sequence[int],
                  quality: Mapping[int, FrameQuality],
                  min_brightness: float | None, window: float) -> Iterator[list[int]]:
    """dimOS ``QualityWindow``'s windows: the candidates brighter than the floor, grouped.

    A window opens at its first candidate; the first candidate at least ``window`` s after that
    opens the next one. Frames without a score (bad) are no candidates.
    """
    floor = float("-inf") if min_brightness is None else min_brightness
    group: list[int] = []
    start: float | None = None
    for i in candidates:
        if i not in quality or not quality[i].brightness > floor:
            continue
        t = float(ts[i])
        if start is not None and t - start >= window:
            yield group
            group, start = [], None
        if start is None:
            start = t
        group.append(i)
    if group:
        yield group


def refine_near_ties(ts: np.ndarray, candidates: Sequence[int],
                     quality: Mapping[int, FrameQuality], window: float,
                     min_brightness: float | None,
                     rescore: Callable[[int], FrameQuality | None]) -> dict[int, FrameQuality]:
    """``quality`` with every frame that could change the choice scored by ``rescore`` (the
    full-resolution, dimOS way; None: keep the scan's score)."""
    scores = dict(quality)
    done: set[int] = set()

    def recheck(indices: Sequence[int]) -> None:
        for i in indices:
            if i not in done:
                done.add(i)
                exact = rescore(i)
                if exact is not None:
                    scores[i] = exact

    if min_brightness is not None:
        recheck([i for i in candidates if i in scores
                 and abs(scores[i].brightness - min_brightness) <= BRIGHTNESS_MARGIN])
    for group in window_groups(ts, candidates, scores, min_brightness, window):
        best = max(scores[i].sharpness for i in group)
        recheck([i for i in group if scores[i].sharpness >= best - SHARPNESS_MARGIN])
    return scores
