"""The proposal stage: run a question author over rectified frames and store what it proposed.

Layout of a proposals folder (decided here)::

    proposals.jsonl   one Proposal per line, by frame then ordinal (author errors included)
    summary.json      the author config and the counts per family and per author error
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_assets import progress
from eval_assets.atomic import write_text_atomic
from eval_assets.frames import RectifiedFrame, load_rectified_image
from eval_assets.schemas.vqa import (
    PROPOSALS_FILE,
    PROPOSALS_SUMMARY,
    Proposal,
    dumps_document,
    dumps_line,
    read_jsonl,
)
from eval_assets.vqa.authors import AuthorConfig, QuestionAuthor


def limit_proposals(proposals: Sequence[Proposal], frame_index: int,
                    limit: int) -> list[Proposal]:
    """Renumber one frame's proposals 0..n-1 and mark those past ``limit`` as rejected.

    Renumbering makes the stored order independent of how an author numbered its items.
    """
    out = []
    for ordinal, p in enumerate(proposals):
        update: dict[str, Any] = {"ordinal": ordinal, "frame_index": frame_index}
        if ordinal >= limit and p.error is None:
            update |= {"error": "over_proposal_limit",
                       "error_detail": f"only the first {limit} proposals of a frame are kept; "
                                       "raise max_proposals_per_frame to keep more"}
        out.append(p.model_copy(update=update))
    return out


def propose_frames(author: QuestionAuthor, frames_dir: Path, frames: Sequence[RectifiedFrame],
                   max_proposals_per_frame: int) -> list[Proposal]:
    """Every frame's proposals, in frame order; the author sees each rectified image only."""
    out: list[Proposal] = []
    for frame in progress.track(sorted(frames, key=lambda f: f.frame_index),
                                "proposing questions per frame"):
        image = load_rectified_image(Path(frames_dir), frame)
        proposed = author.propose(image, frame.frame_index)
        out.extend(limit_proposals(proposed, frame.frame_index, max_proposals_per_frame))
    return out


def proposal_counts(proposals: Sequence[Proposal]) -> dict[str, dict[str, int]]:
    """Usable proposals per family and author errors per reason, each sorted by name."""
    per_family = Counter(p.family for p in proposals if p.error is None)
    errors = Counter(p.error for p in proposals if p.error is not None)
    return {"per_family": dict(sorted(per_family.items())),
            "author_errors": dict(sorted(errors.items()))}


def write_proposals(out_dir: Path, proposals: Sequence[Proposal], config: AuthorConfig) -> Path:
    """Write ``proposals.jsonl`` and ``summary.json`` atomically; returns the JSONL path."""
    out_dir = Path(out_dir)
    summary = {"author": config.model_dump(mode="json"),
               "frames": sorted({p.frame_index for p in proposals}),
               "num_proposals": len(proposals), **proposal_counts(proposals)}
    write_text_atomic(out_dir / PROPOSALS_SUMMARY, dumps_document(summary))
    text = "".join(dumps_line(p) + "\n" for p in proposals)
    return write_text_atomic(out_dir / PROPOSALS_FILE, text)


def read_proposals(out_dir: Path) -> list[Proposal]:
    """The proposals stored in ``out_dir/proposals.jsonl``."""
    path = Path(out_dir) / PROPOSALS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; materialize question_proposals for this recording first")
    return read_jsonl(path, Proposal)
