"""3-D object tracks against the truth objects: centre and extent errors within the gate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from eval_assets.schemas.evidence_quality import TrackCheck, TrackQuality
from eval_assets.schemas.spatial import ObjectTrack
from eval_assets.vqa.spatial.truth import gate_text, match_object


def extent_error(extent_m: Sequence[float], size: Sequence[float]) -> float:
    """Largest per-axis error between a track's (length, width, height) and an object's size
    (x, y, z in its own frame): the two horizontal extents compared sorted (a track's length
    axis is whichever is longer), the heights directly."""
    track = sorted(float(v) for v in extent_m[:2])
    truth = sorted(float(v) for v in size[:2])
    return max(abs(track[0] - truth[0]), abs(track[1] - truth[1]),
               abs(float(extent_m[2]) - float(size[2])))


def _pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def track_quality(tracks: Sequence[ObjectTrack], objects: Mapping[int, Mapping[str, Any]],
                  seen: Iterable[int] = ()) -> TrackQuality:
    """Each track matched to its nearest namesake within the gate; ``seen`` are the truth ids
    visible in the checked frames (those no track matched are listed as missed)."""
    checks = []
    centre: list[float] = []
    extent: list[float] = []
    hit: set[int] = set()
    for t in tracks:
        obj, why, detail = match_object(list(objects.values()), t.name, t.center_world)
        if obj is None:
            checks.append(TrackCheck(track_id=t.track_id, name=t.name,
                                     reason=f"{why}: {detail}"))
            continue
        c = float(np.linalg.norm(np.asarray(t.center_world) - np.asarray(obj["center_world"])))
        e = extent_error(t.extent_m, obj["size"])
        centre.append(c)
        extent.append(e)
        hit.add(int(obj["id"]))
        checks.append(TrackCheck(track_id=t.track_id, name=t.name, truth_id=int(obj["id"]),
                                 centre_error_m=round(c, 4), extent_error_m=round(e, 4)))
    missed = [f"{objects[i]['name']}#{i}" for i in sorted(set(seen) - hit) if i in objects]
    return TrackQuality(
        gate=gate_text(), tracks=len(checks), matched=len(centre),
        centre_error_m_median=_pct(centre, 50), centre_error_m_p90=_pct(centre, 90),
        extent_error_m_median=_pct(extent, 50), extent_error_m_p90=_pct(extent, 90),
        checks=checks, missed=missed)
