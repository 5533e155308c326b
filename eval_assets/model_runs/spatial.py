"""Spatial cases in a model run: loading ``spatial_cases.jsonl``, the prompt, and the frames sent.

A spatial case (:class:`~eval_assets.schemas.spatial.SpatialCase`) shows one or more frames in
time order. They are sent as separate image parts, in order, before the question text; an
endpoint whose capability preflight (``endpoint.json`` ``max_images``) took fewer images per
request than a case shows gets them as one labelled mosaic instead (frames tiled left to right,
top to bottom, in time order, each labelled with its number, 1 first), and the answer record says
which (:class:`~eval_assets.schemas.predictions.SpatialAsked`).

The question text: a ``choice`` case is written exactly as dimOS's runner writes a case
(:func:`~eval_assets.schemas.vqa_prompt.question_text`); a ``number`` case asks for a single
number in the stated unit. Several frames are introduced by one line saying how many there are
and how they are laid out. Only ``spatial_cases.jsonl`` and the PNGs it names are read, never
``spatial_labels.jsonl`` or the audit.

Identity: a spatial answer is reused only for the same content hash, which covers the system
prompt, the question text as sent, the layout (with the mosaic's recipe version) and every
frame's bytes, in order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_assets.hashing import bytes_sha256, text_sha256
from eval_assets.jsonio import parse_model
from eval_assets.layout import SPATIAL_CASES
from eval_assets.model_runs.prompts import SYSTEM_PROMPT, image_data_url, read_png
from eval_assets.schemas.chat import Message
from eval_assets.schemas.predictions import ImageLayout, SpatialAsked, SpatialRunSummary
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa_prompt import question_text

MOSAIC_VERSION = "mosaic-v1"
"""Recipe of :func:`mosaic_png`; part of the content hash: change it when the mosaic changes."""

UNIT_WORDS = {"cm": "centimetres (cm)", "m": "metres (m)", "m2": "square metres (m²)",
               "deg": "degrees"}
_SPATIAL_LINE = ("each line must be a JSON object with id, images (a list of PNG paths in "
                 "assets/, in time order), question, answer_type ('choice' or 'number'), and "
                 "choices (choice) or unit (number: cm, m, m2, deg or null); regenerate the "
                 "dataset")


def load_spatial_cases(dataset_dir: Path, taken_ids: set[str],
                       check_image: Callable[[Path, str, str], Path]) -> list[SpatialCase]:
    """The spatial cases of a public dataset in file order; none when the file is absent.

    Ids must be unique and differ from the ``cases.jsonl`` ids (``taken_ids``): both kinds of
    answer share ``answers.jsonl``. Every image is checked by ``check_image`` (the runner's: a
    PNG inside ``assets/`` that exists).
    """
    path = Path(dataset_dir) / SPATIAL_CASES
    if not path.is_file():
        return []
    cases: list[SpatialCase] = []
    seen = set(taken_ids)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        case = parse_model(line, SpatialCase, where, fix=_SPATIAL_LINE)
        if case.id in seen:
            raise ValueError(f"{where}: field 'id' repeats {case.id!r} (a case of this file or "
                             f"of cases.jsonl); case ids must be unique, regenerate the dataset")
        seen.add(case.id)
        for image in case.images:
            check_image(dataset_dir, image, where)
        cases.append(case)
    return cases


def layout_for(case: SpatialCase, max_images: int | None) -> ImageLayout:
    """``parts`` when the endpoint takes the case's frames in one request (or was not probed),
    else ``mosaic``."""
    if max_images is None or len(case.images) <= max_images or len(case.images) == 1:
        return "parts"
    return "mosaic"


def plain_body(case: SpatialCase, question: str) -> str:
    """``question`` (the case's own, or another template's wording of it) with the case's
    answer line: its choices line (a choice case), or a single number in its unit."""
    if case.answer_type == "choice":
        assert case.choices is not None  # the schema requires them
        return question_text(question, case.choices)
    if case.unit is None:
        return f"{question}\nAnswer with a single number."
    return f"{question}\nAnswer with a single number in {UNIT_WORDS[case.unit]}."


def spatial_text(case: SpatialCase, layout: ImageLayout, body: str | None = None) -> str:
    """The user text of a spatial case as sent, for the frames laid out as ``layout``;
    ``body`` replaces the question and its answer line (another template of the prompt
    controls: :mod:`eval_assets.model_runs.prompt_controls`)."""
    if body is None:
        body = plain_body(case, case.question)
    n = len(case.images)
    if n == 1:
        return body
    if layout == "mosaic":
        intro = (f"These are {n} frames of one recording, tiled in one image in time order "
                 f"(left to right, top to bottom), each labelled with its number; frame 1 is "
                 f"the first.")
    else:
        intro = f"These are {n} frames of one recording, in time order; frame 1 is the first."
    return f"{intro}\n{body}"


def spatial_messages(pngs: Sequence[bytes], text: str) -> list[Message]:
    """System prompt, then every image (in order) followed by the question text."""
    parts: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": image_data_url(png)}} for png in pngs]
    parts.append({"type": "text", "text": text})
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": parts}]


def spatial_content_sha256(image_sha256s: Sequence[str], text: str, layout: ImageLayout) -> str:
    """Identity of what a model is shown for a spatial case: prompt, text, layout, frames."""
    document = json.dumps({"system": SYSTEM_PROMPT, "image_sha256s": list(image_sha256s),
                           "layout": MOSAIC_VERSION if layout == "mosaic" else layout,
                           "text": text}, sort_keys=True, ensure_ascii=False)
    return text_sha256(document)


def mosaic_png(pngs: Sequence[bytes]) -> bytes:
    """The frames tiled in one PNG in order (a grid of ceil(sqrt(n)) columns, each cell the
    largest frame's size, frames at their own scale, top-left), each labelled 1, 2, ... in its
    top-left corner (white on black). Deterministic: the same frames give the same bytes."""
    import cv2  # only a run that makes a mosaic pays for the import
    import numpy as np

    frames = []
    from eval_assets.recording.image_size import check_decode_size

    for i, png in enumerate(pngs, start=1):
        check_decode_size(png, f"frame {i} of a mosaic")  # a bomb is refused before decoding
        image = cv2.imdecode(np.frombuffer(png, dtype=np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"frame {i} of a mosaic is not a readable PNG")
        frames.append(image)
    cols = math.ceil(math.sqrt(len(frames)))
    rows = math.ceil(len(frames) / cols)
    cell_h = max(f.shape[0] for f in frames)
    cell_w = max(f.shape[1] for f in frames)
    canvas = np.zeros((rows * cell_h, cols * cell_w, 3), dtype=np.uint8)
    scale = max(0.4, cell_h / 400)
    thickness = max(1, round(scale * 2))
    for i, frame in enumerate(frames):
        y, x = (i // cols) * cell_h, (i % cols) * cell_w
        canvas[y:y + frame.shape[0], x:x + frame.shape[1]] = frame
        label = str(i + 1)
        (w, h), base = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
        pad = max(2, h // 3)
        cv2.rectangle(canvas, (x, y), (x + w + 2 * pad, y + h + base + 2 * pad), (0, 0, 0), -1)
        cv2.putText(canvas, label, (x + pad, y + pad + h), cv2.FONT_HERSHEY_SIMPLEX, scale,
                    (255, 255, 255), thickness, cv2.LINE_AA)
    ok, encoded = cv2.imencode(".png", canvas)
    if not ok:
        raise ValueError("the mosaic could not be encoded as PNG")
    return bytes(encoded.tobytes())


@dataclass(frozen=True)
class SpatialAsk:
    """One spatial case as it will be asked: its layout, its text and its content hash."""

    case: SpatialCase
    layout: ImageLayout
    text: str
    content_sha256: str

    @property
    def asked(self) -> SpatialAsked:
        """What its answer record says about how it was asked."""
        return SpatialAsked(answer_type=self.case.answer_type, images=len(self.case.images),
                            layout=self.layout)

    def pngs(self, dataset_dir: Path) -> list[bytes]:
        """The images sent: every frame in order, or the one mosaic of them."""
        frames = [read_png(dataset_dir / image) for image in self.case.images]
        return [mosaic_png(frames)] if self.layout == "mosaic" else frames

    def messages(self, dataset_dir: Path) -> list[Message]:
        """The chat request's messages."""
        return spatial_messages(self.pngs(dataset_dir), self.text)


def plan_spatial(dataset_dir: Path, cases: Sequence[SpatialCase],
                 max_images: int | None) -> dict[str, SpatialAsk]:
    """Every spatial case as it will be asked of an endpoint taking ``max_images`` per request
    (None: not probed), by case id. Each frame is read once, here: what is reused is decided by
    the bytes a model would be sent now."""
    image_sha = {image: bytes_sha256(read_png(dataset_dir / image))
                 for image in sorted({i for c in cases for i in c.images})}
    plans = {}
    for case in cases:
        layout = layout_for(case, max_images)
        text = spatial_text(case, layout)
        plans[case.id] = SpatialAsk(case, layout, text, spatial_content_sha256(
            [image_sha[i] for i in case.images], text, layout))
    return plans


def most_images(cases: Sequence[SpatialCase]) -> int:
    """The most frames one case shows (0 without cases)."""
    return max((len(c.images) for c in cases), default=0)


def spatial_summary(cases: Sequence[SpatialCase], max_images: int | None,
                    layouts: Mapping[str, int]) -> SpatialRunSummary | None:
    """The run summary's spatial part; None without spatial cases."""
    if not cases:
        return None
    return SpatialRunSummary(cases=len(cases), most_images_per_case=most_images(cases),
                             endpoint_max_images=max_images, layouts=dict(sorted(layouts.items())))


def spatial_line(spatial: SpatialRunSummary) -> str:
    """How the spatial cases were sent, saying so when some went as a labelled mosaic."""
    line = (f"spatial: {spatial.cases} cases of up to {spatial.most_images_per_case} frames; "
            f"{spatial.layouts.get('parts', 0)} sent as image parts in order")
    mosaics = spatial.layouts.get("mosaic", 0)
    if mosaics:
        line += (f", {mosaics} as one labelled mosaic each: the endpoint takes at most "
                 f"{spatial.endpoint_max_images} images per request (endpoint.json)")
    return line
