"""Per-case cards (a model's answer with the case's gold and evidence) and per-frame overlays.

Inputs are the published dataset folder (public cases, private labels and audit), the models'
answer records, their scored VQA rows, and optionally the perception and point-cloud stage
folders and the LLM judge's per-row results. Boxes and masks come from the audit's evidence
(masks from its run-length encoding, else from the detections folder); LiDAR points are projected
with the audit's rectified intrinsics exactly as the range statistics were.

Cards carry no image: each frame's overlay is built once (``build_frame_images``) and every case
of that frame refers to it, which keeps a report of every case small. By default every case is
carded, in dataset order; with a limit, cases are chosen the same for every model, so a reader can
compare models on one frame: failures (any model incorrect, unparsed or failed) before
all-correct cases, round-robin over families.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from eval_assets.frames import PointCloudFrame, load_points, read_pointcloud_frames
from eval_assets.jsonio import read_json, read_jsonl, read_model
from eval_assets.metrics.vqa import VqaRowResult
from eval_assets.perception.evidence_io import load_mask, read_detections
from eval_assets.report.overlays import (
    BoxLabel,
    encode_jpeg,
    project_points,
    render_overlay,
    resize_to_width,
)
from eval_assets.schemas.perception import Detection
from eval_assets.schemas.predictions import AnswerRecord
from eval_assets.schemas.report import CaseCard, FrameImage, GoldCorrection, JudgeNote
from eval_assets.schemas.vqa import (
    AUDIT_FRAME_EVIDENCE,
    DATASET_CASES,
    Case,
    DetectionAudit,
    EvidenceAudit,
    FrameAudit,
    Label,
    asset_relpath,
    audit_frame_relpath,
)
from eval_assets.vqa.bias import CaseBias, read_bias_cases
from eval_assets.vqa.declarations import family_names
from eval_assets.vqa.labels import read_labels
from eval_assets.vqa.overrides import OverrideResolution

__all__ = [
    "DEFAULT_JPEG_QUALITY",
    "DEFAULT_MAX_WIDTH",
    "build_case_cards",
    "build_frame_images",
    "decode_rle",
    "select_cases",
]

DEFAULT_MAX_WIDTH = 640
DEFAULT_JPEG_QUALITY = 70
_FAILURE_STATUSES = {"incorrect", "parse_failure", "failed_call"}
_FRAME_ID = re.compile(r"^frame-(\d{6})$")


def decode_rle(rle: Mapping[str, Sequence[int]]) -> np.ndarray:
    """The boolean mask of a row-major run-length encoding (first run: False), as the audit has."""
    h, w = (int(x) for x in rle["size"])
    counts = np.asarray(rle["counts"], dtype=np.int64)
    if counts.sum() != h * w:
        raise ValueError(
            f"mask RLE counts sum to {int(counts.sum())} but size is {h}x{w} = {h * w}; the audit "
            "is corrupt: regenerate the dataset")
    values = np.arange(len(counts)) % 2 == 1
    return np.repeat(values, counts).reshape(h, w)


@dataclass(frozen=True)
class _Frame:
    """What a frame's overlay is drawn from."""

    image: np.ndarray
    detections: list[DetectionAudit]
    masks: list[np.ndarray | None]
    points_uv: np.ndarray | None
    ranges: np.ndarray | None
    note: str


def _read_json_model(path: Path, model: type[FrameAudit] | type[EvidenceAudit]
                     ) -> FrameAudit | EvidenceAudit | None:
    """The audit record, or None when absent or written by dimOS (its ``frame.json`` has only
    dimOS's keys: no calibration to check, no detections to draw)."""
    if not path.is_file():
        return None
    try:
        return read_model(path, model, fix="regenerate the dataset")
    except ValueError:
        if model is FrameAudit and "width" not in read_json(path):
            return None
        raise


class _FrameLoader:
    """Loads and caches each frame's image, evidence and projected LiDAR points."""

    def __init__(self, dataset_dir: Path, detections_dir: Path | None,
                 pointcloud_dir: Path | None) -> None:
        self.dataset_dir = dataset_dir
        self.detections_dir = detections_dir
        self.pointcloud_dir = pointcloud_dir
        self._clouds: dict[int, PointCloudFrame] | None = None
        self._stored: dict[int, list[Detection]] | None = None
        self._cache: dict[int, _Frame] = {}

    def clouds(self) -> dict[int, PointCloudFrame]:
        if self._clouds is None:
            self._clouds = ({} if self.pointcloud_dir is None else
                            {c.frame_index: c for c in read_pointcloud_frames(self.pointcloud_dir)})
        return self._clouds

    def stored_detections(self) -> dict[int, list[Detection]]:
        if self._stored is None:
            self._stored = ({} if self.detections_dir is None else
                            {f.frame_index: list(f.detections)
                             for f in read_detections(self.detections_dir)})
        return self._stored

    def _mask(self, frame_index: int, i: int, det: DetectionAudit) -> np.ndarray | None:
        if det.mask_rle is not None:
            return decode_rle(det.mask_rle)
        if det.mask_source is None or self.detections_dir is None:
            return None
        for stored in self.stored_detections().get(frame_index, []):
            if stored.mask_path == det.mask_source:
                return load_mask(self.detections_dir, stored)
        raise ValueError(
            f"{self.detections_dir}: no stored detection of frame {frame_index} has mask_path "
            f"{det.mask_source!r} (audit detection {i}, {det.name!r}); pass the detections folder "
            "the dataset was generated from")

    def _points(self, frame_index: int, audit: FrameAudit | None
                ) -> tuple[np.ndarray | None, np.ndarray | None, str]:
        if self.pointcloud_dir is None:
            return None, None, "no point-cloud folder given"
        cloud = self.clouds().get(frame_index)
        if cloud is None:
            return None, None, "frame absent from the point-cloud table"
        if cloud.status != "ok":
            return None, None, f"image only: {cloud.reason}"
        if audit is None:
            return None, None, "no audit frame.json (rectified intrinsics unknown)"
        uv, rng = project_points(
            load_points(self.pointcloud_dir, cloud),
            np.asarray(cloud.camera_from_cloud, dtype=np.float64).reshape(4, 4),
            np.asarray(audit.K_rect, dtype=np.float64).reshape(3, 3), audit.width, audit.height)
        return uv, rng, f"{len(rng):,} LiDAR points (z-buffered), coloured by range"

    def frame(self, frame_index: int) -> _Frame:
        if frame_index in self._cache:
            return self._cache[frame_index]
        path = self.dataset_dir / asset_relpath(frame_index)
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            raise FileNotFoundError(
                f"{path} is missing or unreadable; the dataset's frame asset is needed for the "
                "report: regenerate the dataset")
        image = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        folder = self.dataset_dir / audit_frame_relpath(frame_index)
        audit = _read_json_model(folder / "frame.json", FrameAudit)
        truth = _read_json_model(folder / AUDIT_FRAME_EVIDENCE, EvidenceAudit)
        detections = list(truth.detections) if isinstance(truth, EvidenceAudit) else []
        masks = [self._mask(frame_index, i, d) for i, d in enumerate(detections)]
        uv, rng, note = self._points(frame_index,
                                     audit if isinstance(audit, FrameAudit) else None)
        if isinstance(audit, FrameAudit) and (audit.width, audit.height) != image.shape[1::-1]:
            raise ValueError(
                f"{path} is {image.shape[1]}x{image.shape[0]} but {folder}/frame.json says "
                f"{audit.width}x{audit.height}; regenerate the dataset")
        built = _Frame(image, detections, masks, uv, rng, note)
        self._cache[frame_index] = built
        return built


def _normal(name: str) -> str:
    return " ".join(name.lower().split())


def _box_label(det: DetectionAudit) -> str:
    if det.range is not None:
        return f"{det.name} {det.range.median:.2f} m"
    return f"{det.name} (score {det.score:.2f})"


def _overlay(frame: _Frame, names: Sequence[str] | None, max_width: int, quality: int
             ) -> tuple[bytes, bytes, int, int, str]:
    """JPEG bytes of the frame with the detections of ``names`` (None: all) drawn on it and of
    the plain frame (both shrunk to ``max_width``), their width and height, and a caption."""
    wanted = None if names is None else {_normal(n) for n in names}
    chosen = [i for i, d in enumerate(frame.detections)
              if wanted is None or _normal(d.name) in wanted]
    image, scale = resize_to_width(frame.image, max_width)
    h, w = image.shape[:2]
    boxes: list[BoxLabel] = []
    masks: list[np.ndarray] = []
    for i in chosen:
        det = frame.detections[i]
        x0, y0, x1, y1 = (c * scale for c in det.box_xyxy)
        boxes.append(((x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)), _box_label(det)))
        mask = frame.masks[i]
        masks.append(np.zeros((h, w), dtype=bool) if mask is None else
                     cv2.resize(mask.astype(np.uint8), (w, h),
                                interpolation=cv2.INTER_NEAREST).astype(bool))
    uv = None
    if frame.points_uv is not None:
        # Pixel centres scale to pixel centres; truncation keeps them inside the smaller image.
        uv = np.floor((frame.points_uv.astype(np.float64) + 0.5) * scale).astype(np.int64)
    overlay = encode_jpeg(render_overlay(image, boxes, masks, uv, frame.ranges), quality,
                          full_chroma=False)
    shown = ", ".join(sorted({frame.detections[i].name for i in chosen})) or "none"
    what = "all detections" if names is None else f"detections of {', '.join(names)}"
    caption = f"{what}: {len(chosen)} box(es) [{shown}]; {frame.note}"
    return overlay, encode_jpeg(image, quality), w, h, caption


def select_cases(cases: Sequence[Case], labels: Mapping[str, Label],
                 rows: Mapping[str, Mapping[str, VqaRowResult]], limit: int) -> list[str]:
    """Up to ``limit`` case ids answered by some model: failures first, round-robin by family.

    ``rows[model][case_id]`` are the scored rows. Within a family, cases keep dataset order.
    """
    queues: dict[str, list[tuple[int, int, str]]] = {}
    for position, case in enumerate(cases):
        statuses = [r[case.id].status for r in rows.values() if case.id in r]
        if not statuses:
            continue
        priority = 0 if any(s in _FAILURE_STATUSES for s in statuses) else 1
        family = labels[case.id].family if case.id in labels else statuses[0]
        queues.setdefault(family, []).append((priority, position, case.id))
    known = family_names("dimos")
    order = [f for f in known if f in queues] + sorted(set(queues) - set(known))
    for family in order:
        queues[family].sort()
    chosen: list[str] = []
    depth = 0
    while len(chosen) < limit and any(depth < len(queues[f]) for f in order):
        for family in order:
            if depth < len(queues[family]) and len(chosen) < limit:
                chosen.append(queues[family][depth][2])
        depth += 1
    return chosen


def _judge_note(result: Mapping[str, Any]) -> JudgeNote:
    score = result.get("score")
    failed = bool(result.get("error")) or not score
    return JudgeNote(
        score=None if failed or score is None else int(score),
        reasoning=str(result.get("reasoning") or ""),
        error=None if not failed else str(result.get("error") or "the judge gave no score"),
        error_category=result.get("error_category") if failed else None,
        judge_model=result.get("model_used"),
    )


def _turn_text(turn: Any) -> str:
    if isinstance(turn, str):
        return turn
    if not isinstance(turn, Mapping):
        return ""
    content = turn.get("value", turn.get("content", ""))
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, Mapping) and p.get("type", "text") == "text")
    return str(content or "")


def _prompt_of(result: Mapping[str, Any]) -> str:
    """The last user turn of the judged row's conversation (the question the model answered)."""
    turns = result.get("conversation")
    if isinstance(turns, str):
        return turns
    if not isinstance(turns, list):
        return ""
    users = [t for t in turns if isinstance(t, Mapping)
             and str(t.get("from", t.get("role", ""))).lower() in ("human", "user")]
    # AVLM rows mark where the image goes with an "<image>" token; it is not part of the text.
    return _turn_text(users[-1]).replace("<image>", "").strip() if users else ""


def _call_error(record: AnswerRecord | None, row: VqaRowResult) -> str | None:
    """Why a call has no answer: no record of a failed call, or the record's error."""
    if record is None and row.status == "failed_call":
        return "no answer record"
    if record is not None and record.status == "failed":
        return f"{record.error_category}: {record.error_message or ''}".rstrip(": ")
    return None


def gold_corrections(resolution: OverrideResolution | None) -> dict[str, GoldCorrection]:
    """The correction behind each case's gold answer, from a recording's resolved overrides:
    the applied ones only (an orphaned, invalid or superseded override changed nothing)."""
    if resolution is None:
        return {}
    return {s.override.case_id: GoldCorrection(answer=s.override.new_answer, by=s.override.by,
                                               at=s.override.at, sensor_answer=s.gold,
                                               reason=s.override.reason)
            for s in resolution.states if s.state == "applied"}


def _vqa_card(recording: str, model: str, case: Case, label: Label | None, frame_index: int,
              row: VqaRowResult, record: AnswerRecord | None,
              judge: Mapping[str, Any] | None,
              correction: GoldCorrection | None = None,
              bias: CaseBias | None = None) -> CaseCard:
    """One model's card on one case: its scored row, its raw reply, its judge note, the
    correction of its gold answer when a human made one, and the bias audit's line."""
    return CaseCard(
        kind="vqa", recording=recording, model=model, case_id=case.id,
        frame_index=frame_index, family=row.family, question=case.question,
        choices=list(case.choices), gold=row.answer,
        raw_response=record.raw_response if record is not None else None,
        predicted_choice=row.predicted_choice, tier=row.tier, status=row.status,
        error=_call_error(record, row),
        latency_s=record.latency_s if record is not None else None,
        evidence=dict(label.evidence) if label else {},
        object_names=list(label.object_names) if label else [],
        judge=_judge_note(judge) if judge is not None else None,
        # Only when the scored gold is the corrected one: rows scored before the correction
        # carry the sensor's answer, and the card must not claim otherwise.
        correction=correction if correction is not None and row.answer == correction.answer
        else None,
        bias_score=None if bias is None else bias.bias_score,
        blind_solvable=None if bias is None else bias.flagged)


def _open_ended_cards(judged: Mapping[str, Mapping[str, Mapping[str, Any]]], recording: str,
                      limit_per_model: int | None) -> list[CaseCard]:
    """A card per judged frame description (frame ids), up to ``max(1, limit // 4)`` frames."""
    frames: dict[str, int] = {}
    for model in sorted(judged):
        for item_id in judged[model]:
            match = _FRAME_ID.match(item_id)
            if match is not None:
                frames.setdefault(item_id, int(match.group(1)))
    items = list(frames.items())
    if limit_per_model is not None:
        items = items[:max(1, limit_per_model // 4) if limit_per_model else 0]
    cards = []
    for item_id, frame_index in items:
        for model in sorted(judged):
            result = judged[model].get(item_id)
            if result is None:
                continue
            note_j = _judge_note(result)
            cards.append(CaseCard(
                kind="open_ended", recording=recording, model=model, case_id=item_id,
                frame_index=frame_index, family="description", question=_prompt_of(result),
                choices=[], gold=None if result.get("gt") is None else str(result["gt"]),
                raw_response=None if result.get("pred") is None else str(result["pred"]),
                predicted_choice=None, tier=None,
                status="judged" if note_j.score is not None else "judge_failed",
                error=note_j.error, evidence={}, judge=note_j))
    return cards


def build_case_cards(
    dataset_dir: Path,
    answers: Mapping[str, Sequence[AnswerRecord]],
    vqa_rows: Mapping[str, Sequence[VqaRowResult]],
    judge_results: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    limit_per_model: int | None = None,
    *,
    recording: str | None = None,
    corrections: Mapping[str, GoldCorrection] | None = None,
) -> list[CaseCard]:
    """Cards for every case (or up to ``limit_per_model`` per model), plus judged open items.

    ``answers`` and ``vqa_rows`` map a model name to its answer records and scored rows on this
    dataset; ``judge_results`` maps a model to the ``results`` list of its
    ``llm_judge_predictions.json``. A judge result whose ``id`` is a case id is attached to that
    case's card; one whose ``id`` is a frame id (``frame-000100``, a description) becomes an
    open-ended card (all of them, or up to ``max(1, limit_per_model // 4)`` frames); other ids
    are ignored. ``recording`` defaults to the rows' recording, else the dataset folder's name.
    ``corrections`` (:func:`gold_corrections`) by case id mark the cards whose gold answer a
    human corrected. Each card carries its case's line of the dataset's bias audit
    (``audit/bias.jsonl``: bias score and blind-solvable flag), None without the audit.
    Cards come grouped by case (dataset order, or the order of ``select_cases`` with a limit),
    models sorted by name within a case. Overlays are not built here: see
    ``build_frame_images``.
    """
    dataset_dir = Path(dataset_dir)
    if limit_per_model is not None and limit_per_model < 0:
        raise ValueError(f"limit_per_model must be >= 0 or None, got {limit_per_model}")
    cases = read_jsonl(dataset_dir / DATASET_CASES, Case)
    labels = {lab.id: lab for lab in read_labels(dataset_dir, cases)}
    case_by_id = {c.id: c for c in cases}
    rows = {m: {r.case_id: r for r in rs} for m, rs in vqa_rows.items()}
    for model, by_id in rows.items():
        unknown = sorted(set(by_id) - set(case_by_id))
        if unknown:
            raise ValueError(
                f"{dataset_dir / DATASET_CASES}: model {model!r} has scored rows for cases "
                f"{unknown[:3]} that this dataset does not contain; pass the rows of this "
                "recording's dataset")
    record_by = {m: {a.case_id: a for a in rs} for m, rs in answers.items()}
    bias = read_bias_cases(dataset_dir) or {}
    judged = {m: {str(r.get("id")): r for r in rs} for m, rs in (judge_results or {}).items()}
    if recording is None:
        recs = {r.recording for rs in rows.values() for r in rs.values()}
        recording = recs.pop() if len(recs) == 1 else dataset_dir.name
    if limit_per_model is None:
        chosen = [c.id for c in cases if any(c.id in r for r in rows.values())]
    else:
        chosen = select_cases(cases, labels, rows, limit_per_model)
    cards: list[CaseCard] = []
    for case_id in chosen:
        case, label = case_by_id[case_id], labels.get(case_id)
        row0 = next(r[case_id] for r in rows.values() if case_id in r)
        frame_index = label.frame_index if label else row0.frame_index
        for model in sorted(rows):
            row = rows[model].get(case_id)
            if row is not None:
                cards.append(_vqa_card(
                    recording, model, case, label, frame_index, row,
                    record_by.get(model, {}).get(case_id), judged.get(model, {}).get(case_id),
                    (corrections or {}).get(case_id), bias.get(case_id)))
    cards += _open_ended_cards(judged, recording, limit_per_model)
    return cards


def build_frame_images(
    dataset_dir: Path,
    frame_indices: Iterable[int],
    detections_dir: Path | None = None,
    pointcloud_dir: Path | None = None,
    *,
    recording: str,
    max_width: int = DEFAULT_MAX_WIDTH,
    quality: int = DEFAULT_JPEG_QUALITY,
) -> list[FrameImage]:
    """One record per frame (sorted, each once): the overlay (every detection's box and mask
    outline, and the LiDAR points) and the plain frame, shrunk to at most ``max_width`` pixels,
    as JPEG.

    Raises FileNotFoundError when a frame's image is missing from the dataset.
    """
    loader = _FrameLoader(Path(dataset_dir), detections_dir, pointcloud_dir)
    images = []
    for frame_index in sorted(set(frame_indices)):
        overlay, plain, width, height, note = _overlay(loader.frame(frame_index), None,
                                                       max_width, quality)
        images.append(FrameImage(recording=recording, frame_index=frame_index,
                                 overlay_jpeg=overlay, plain_jpeg=plain, width=width,
                                 height=height, note=note))
    return images
