"""Case cards of the spatial families (``spatial_cases.jsonl``): the frame strip, in time order,
with the evidence drawn.

A card shows the question and the gold answer (with its unit), then every frame the case shows,
each with the detection boxes of the objects the label names (the detections the object tracks
were fused from) drawn by the report's overlay renderer, the reference frame marked, and the
evidence's world-frame track centres listed; then each model's reply. Built from the public case,
its audit label (:class:`eval_assets.schemas.spatial.SpatialLabel`), the images and the boxes, so
a card can be rendered from any source of these (:func:`spatial_card`);
:func:`load_spatial_cards` reads them from a dataset folder and a detections folder.

With ``files`` (a dict the caller writes beside the page, :mod:`eval_assets.report.frame_files`)
each strip image becomes a content-named file linked from the card and loaded on demand, instead
of a ``data:`` URI: inlined, the strips (up to 24 cards per recording, several frames each) were
the part of the page that grew with every recording.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path

import cv2
import numpy as np

from eval_assets.jsonio import read_jsonl
from eval_assets.layout import DATASET_AUDIT
from eval_assets.perception.evidence_io import read_detections
from eval_assets.report.frame_files import frame_src
from eval_assets.report.markup import esc, section
from eval_assets.report.overlays import BoxLabel, encode_jpeg, render_overlay, resize_to_width
from eval_assets.schemas.spatial import (
    AUDIT_SPATIAL_LABELS,
    SPATIAL_CASES,
    SpatialCase,
    SpatialLabel,
)

__all__ = ["STRIP_WIDTH", "frame_indices", "load_spatial_cards", "spatial_card",
           "spatial_cards_section"]

STRIP_WIDTH = 260  # pixels per frame of the strip


def frame_indices(case: SpatialCase, label: SpatialLabel) -> list[int | None]:
    """The frame index of each image of ``case`` (None when the label does not say)."""
    if label.frame_indices and len(label.frame_indices) == len(case.images):
        return list(label.frame_indices)
    if label.frame_index is not None and len(case.images) == 1:
        return [label.frame_index]
    return [None] * len(case.images)


@functools.lru_cache(maxsize=16)
def _decoded_rgb(png: bytes) -> np.ndarray | None:
    """The RGB pixels of ``png`` (None: not decodable), decoded once for every card that shows
    the frame: a recording's multi-frame cases share a few frames, and decoding each full-size
    PNG again per card was the largest per-recording cost of the report (409 decodes, 5.9 s of
    36 s at 10 recordings x 5 models). Read-only: callers draw on copies."""
    bgr = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        return None
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    rgb.flags.writeable = False
    return rgb


def _frame_html(png: bytes | None, boxes: Sequence[BoxLabel], caption: str,
                reference: bool, files: dict[str, bytes] | None = None) -> str:
    if png is None:
        return f'<figure class="strip-frame"><p class="empty">image missing</p>' \
               f"<figcaption>{esc(caption)}</figcaption></figure>"
    rgb = _decoded_rgb(png)
    if rgb is None:
        raise ValueError(f"{caption}: the image is not a decodable PNG")
    drawn = render_overlay(rgb, boxes, [])  # a new array: the cached one stays as decoded
    small, _ = resize_to_width(drawn, STRIP_WIDTH)
    jpeg = encode_jpeg(small)
    if files is None:
        src = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")
    else:
        src = frame_src(jpeg)
        files[src] = jpeg
    cls = "strip-frame reference" if reference else "strip-frame"
    mark = ' <span class="flag">reference</span>' if reference else ""
    lazy = "" if files is None else ' loading="lazy"'
    return (f'<figure class="{cls}"><img alt="{esc(caption)}"{lazy} '
            f'src="{esc(src)}"><figcaption>{esc(caption)}{mark}'
            "</figcaption></figure>")


def _tracks_html(label: SpatialLabel) -> str:
    items = []
    for track in label.evidence.get("tracks", []):
        centre = track.get("center_world") if isinstance(track, Mapping) else None
        name = track.get("name", "?") if isinstance(track, Mapping) else "?"
        where = ("" if not isinstance(centre, Sequence) or len(centre) != 3 else
                 " at (" + ", ".join(f"{float(v):.2f}" for v in centre) + ") m")
        items.append(f"<li>{esc(name)}{esc(where)}</li>")
    return f'<ul class="tracks">{"".join(items)}</ul>' if items else ""


def spatial_card(case: SpatialCase, label: SpatialLabel, images: Mapping[str, bytes],
                 boxes: Mapping[int, Sequence[BoxLabel]] | None = None,
                 replies: Mapping[str, str | None] | None = None,
                 files: dict[str, bytes] | None = None) -> str:
    """One card: question, gold answer, the frame strip with ``boxes`` (by frame index) drawn,
    the evidence's tracks and each model's reply (None: the call failed). With ``files``, each
    strip image is added to it (relative path -> JPEG) and linked, not inlined."""
    if case.id != label.id:
        raise ValueError(f"case {case.id!r} and label {label.id!r} are not the same case")
    answer = label.answer + (f" {label.unit}" if label.unit else "")
    frames = []
    for image, index in zip(case.images, frame_indices(case, label), strict=True):
        caption = image.rsplit("/", 1)[-1] if index is None else f"frame {index}"
        frames.append(_frame_html(images.get(image), (boxes or {}).get(index, ())
                                  if index is not None else (), caption,
                                  index is not None and index == label.reference_frame,
                                  files))
    reply_items = "".join(
        f'<li><span class="model">{esc(m)}</span>: '
        + ('<span class="na">failed call</span>' if r is None else esc(r)) + "</li>"
        for m, r in sorted((replies or {}).items()))
    return (f'<article class="card spatial-card" id="spatial-{esc(case.id)}">'
            f'<p class="meta"><b>{esc(label.family.replace("_", " "))}</b> · '
            f"{len(case.images)} frame{'s' if len(case.images) != 1 else ''} · "
            f"{esc(case.id)}</p><p><b>{esc(case.question)}</b></p>"
            f"<p>Gold: <b>{esc(answer)}</b> · objects: {esc(', '.join(label.object_names))}</p>"
            f'<div class="strip">{"".join(frames)}</div>{_tracks_html(label)}'
            + (f'<ul class="replies">{reply_items}</ul>' if reply_items else "")
            + "</article>")


def _boxes_by_frame(detections_dir: Path | None, names: set[str]
                    ) -> dict[int, list[BoxLabel]]:
    if detections_dir is None or not (Path(detections_dir)).is_dir():
        return {}
    try:
        stored = read_detections(detections_dir)
    except FileNotFoundError:
        return {}
    return {f.frame_index: [(d.box_xyxy, d.name) for d in f.detections if d.name in names]
            for f in stored}


def load_spatial_cards(dataset_dir: Path, detections_dir: Path | None = None,
                       replies: Mapping[str, Mapping[str, str | None]] | None = None,
                       limit: int | None = None,
                       files: dict[str, bytes] | None = None) -> list[str]:
    """The cards of a dataset's spatial cases with more than one frame (file order, at most
    ``limit``); ``replies`` is model -> case id -> reply. Empty when the dataset has none.
    ``files``: see :func:`spatial_card`."""
    dataset_dir = Path(dataset_dir)
    cases_path = dataset_dir / SPATIAL_CASES
    labels_path = dataset_dir / DATASET_AUDIT / AUDIT_SPATIAL_LABELS
    if not cases_path.is_file() or not labels_path.is_file():
        return []
    labels = {x.id: x for x in read_jsonl(labels_path, SpatialLabel)}
    cases = [c for c in read_jsonl(cases_path, SpatialCase) if len(c.images) > 1
             and c.id in labels][:limit]
    names = {n for c in cases for n in labels[c.id].object_names}
    boxes = _boxes_by_frame(detections_dir, names)
    cards = []
    for case in cases:
        label = labels[case.id]
        wanted = set(label.object_names)
        mine = {i: [b for b in bs if b[1] in wanted] for i, bs in boxes.items()}
        images = {img: (dataset_dir / img).read_bytes() for img in case.images
                  if (dataset_dir / img).is_file()}
        cards.append(spatial_card(case, label, images, mine,
                                  {m: r.get(case.id) for m, r in (replies or {}).items()
                                   if case.id in r}, files))
    return cards


def spatial_cards_section(cards: Sequence[str]) -> str:
    """The section of the multi-frame cards ('' without any)."""
    if not cards:
        return ""
    lead = ("Questions across several frames, each card with its frames in time order, the "
            "detection boxes of the objects the answer rests on, the reference frame marked "
            "(directions are asked from its camera) and the world-frame centres (metres) the "
            "gold answer was computed from.")
    return section("spatial-cards", "Multi-frame cases", lead, "".join(cards))
