"""FlipEval's extra calls: each left/right case asked again about its image mirrored.

A case is a left/right case when its public choices name "left" or "right" and swapping the two
words maps its set of choices onto itself (dimOS's ``horizontal_direction``: left / center /
right; the spatial ``relative_direction``: front-left ... back-right). Nothing private is read:
which cases qualify, the mirrored image and the mirrored question come from ``cases.jsonl`` and
the PNGs alone; the swapped gold answer is the scorer's business (:mod:`eval_assets.scoring.flip`).

The mirrored request: the PNG flipped horizontally (OpenCV, re-encoded as PNG with fixed
settings: the same bytes for the same input), "left" and "right" swapped as whole words in the
question and in each choice, and the choices shown in the case's own order (only the image and
the words change, so a model that answers by position cannot stay consistent). Each call is
journalled (``flips.journal.jsonl``) and resumed by its content hash, like the rotations;
``flips.jsonl`` holds the standing record of every flipped case, in case order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from eval_assets.atomic import write_text_atomic
from eval_assets.choices import flip_text, is_left_right
from eval_assets.hashing import bytes_sha256
from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.model_runs.client import VLMClient
from eval_assets.model_runs.prompts import read_png, vqa_content_sha256
from eval_assets.model_runs.scheduling import Gate, ask_each
from eval_assets.recording.image_size import check_decode_size
from eval_assets.schemas.predictions import RUN_FLIPS, RUN_FLIPS_JOURNAL, RUN_LOCK, FlipRecord
from eval_assets.schemas.vqa import Case

__all__ = ["FlipRun", "FlippedCase", "flip_choices", "flip_key", "flipped_cases", "mirror_png",
           "run_flips"]

def mirror_png(png: bytes) -> bytes:
    """The PNG flipped horizontally, re-encoded losslessly with fixed settings.

    An image whose header declares more pixels than may be decoded is refused first
    (:class:`~eval_assets.recording.image_size.ImageTooLargeError`, a ``ValueError``).
    """
    check_decode_size(png, "the case's image")
    image = cv2.imdecode(np.frombuffer(png, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError("not a decodable PNG: cannot mirror it")
    ok, encoded = cv2.imencode(".png", cv2.flip(image, 1), [cv2.IMWRITE_PNG_COMPRESSION, 6])
    if not ok:
        raise ValueError("OpenCV could not encode the mirrored image as PNG")
    return bytes(encoded.tobytes())


@dataclass(frozen=True)
class FlippedCase:
    """A left/right case as FlipEval asks it: the mirrored question and choices."""

    case: Case

    def shown(self) -> Case:
        """The public case with left and right swapped in its words, choices in its order."""
        return Case(id=self.case.id, image=self.case.image,
                    question=flip_text(self.case.question),
                    choices=flip_choices(self.case.choices))


def flip_choices(choices: Sequence[str]) -> list[str]:
    """Each choice with left and right swapped, shown in the original order when the swapped
    choices are the same set (they always are for a left/right case)."""
    swapped = [flip_text(c) for c in choices]
    return list(choices) if sorted(swapped) == sorted(choices) else swapped


def flipped_cases(cases: Sequence[Case]) -> list[FlippedCase]:
    """The left/right cases of ``cases``, in their order."""
    return [FlippedCase(c) for c in cases if is_left_right(c.choices)]


def flip_key(record: FlipRecord) -> tuple[str, str, str, str | None]:
    """Resume key of a mirrored re-ask: (case_id, model, config_hash, content_sha256)."""
    return (record.case_id, record.model, record.config_hash, record.content_sha256)


@dataclass(frozen=True)
class FlipRun:
    """The standing mirrored records (case order), the calls made and the calls reused."""

    records: list[FlipRecord]
    calls_made: int
    skipped: int


def run_flips(dataset_dir: Path, client: VLMClient, out_dir: Path, cases: Sequence[Case],
              max_concurrency: int = 1, *, ask: bool = True,
              gate: Gate | None = None) -> FlipRun:
    """Ask every left/right case of ``cases`` about its mirrored image, resuming what is
    journalled; write ``flips.jsonl`` (standing records, case order). ``gate`` (a budget's)
    lets each call start.

    With ``ask`` off a ``flips.jsonl`` of an earlier run is removed (its journal stays), so the
    file always belongs to the current answers, as ``rotations.jsonl`` does.
    """
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    if not ask:
        (out_dir / RUN_FLIPS).unlink(missing_ok=True)
        return FlipRun([], 0, 0)
    generation = client.generation
    config_hash = generation.config_hash()
    variants = flipped_cases(cases)
    mirrored = {img: mirror_png(read_png(dataset_dir / img))
                for img in sorted({v.case.image for v in variants})}
    content = {v.case.id: vqa_content_sha256(bytes_sha256(mirrored[v.case.image]),
                                             v.shown().question, v.shown().choices)
               for v in variants}
    keys = {cid: (cid, generation.model, config_hash, sha) for cid, sha in content.items()}

    def call(variant: FlippedCase) -> FlipRecord:
        shown = variant.shown()
        reply = client.answer(shown, mirrored[shown.image])
        return FlipRecord.model_validate({
            **reply.model_dump(exclude={"kind", "choice", "extraction_tier"}),
            "question": shown.question, "choices": shown.choices, "choice": reply.choice,
            "extraction_tier": reply.extraction_tier, "content_sha256": content[shown.id]})

    with exclusive_run_lock(out_dir / RUN_LOCK), \
            Journal(out_dir / RUN_FLIPS_JOURNAL, FlipRecord, flip_key) as journal:
        pending = [v for v in variants if not journal.succeeded(keys[v.case.id])]
        asked = ask_each(pending, call, journal.append, max_concurrency, gate)
        standing = [r for v in variants if (r := journal.get(keys[v.case.id])) is not None]
    write_text_atomic(out_dir / RUN_FLIPS, "".join(r.model_dump_json() + "\n"
                                                   for r in standing))
    return FlipRun(standing, asked, len(variants) - len(pending))
