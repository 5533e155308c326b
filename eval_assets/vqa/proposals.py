"""The proposal stage: run a question author over rectified frames and store what it proposed.

Layout of a proposals folder (decided here)::

    proposals.jsonl   one Proposal per line, by frame then ordinal (author errors included)
    summary.json      the author config and the counts per family and per author error
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from eval_assets import progress
from eval_assets.atomic import write_chunks_atomic, write_text_atomic
from eval_assets.frames import RectifiedFrame, load_rectified_image
from eval_assets.jsonio import iter_jsonl, read_json, read_jsonl
from eval_assets.schemas.vqa import (
    PROPOSALS_FILE,
    PROPOSALS_SUMMARY,
    Proposal,
    dumps_document,
    dumps_line,
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


def iter_frame_proposals(author: QuestionAuthor, frames_dir: Path,
                         frames: Sequence[RectifiedFrame], max_proposals_per_frame: int
                         ) -> Iterator[Proposal]:
    """Every frame's proposals, in frame order, one frame at a time; the author sees each
    rectified image only (and an author that does not look gets no decoded image)."""
    for frame in progress.track(sorted(frames, key=lambda f: f.frame_index),
                                "proposing questions per frame"):
        image = (load_rectified_image(Path(frames_dir), frame)
                 if author.needs_image else None)
        proposed = author.propose(image, frame.frame_index)
        yield from limit_proposals(proposed, frame.frame_index, max_proposals_per_frame)


def propose_frames(author: QuestionAuthor, frames_dir: Path, frames: Sequence[RectifiedFrame],
                   max_proposals_per_frame: int) -> list[Proposal]:
    """:func:`iter_frame_proposals` as a list."""
    return list(iter_frame_proposals(author, frames_dir, frames, max_proposals_per_frame))


def write_proposals(out_dir: Path, proposals: Iterable[Proposal], config: AuthorConfig) -> Path:
    """Write ``proposals.jsonl`` (streamed: the proposals may be a generator) and then
    ``summary.json``, each atomically; returns the JSONL path."""
    out_dir = Path(out_dir)
    frames: set[int] = set()
    per_family: Counter[str] = Counter()
    errors: Counter[str] = Counter()

    def lines() -> Iterator[bytes]:
        for p in proposals:
            frames.add(p.frame_index)
            if p.error is None:
                per_family[p.family] += 1
            else:
                errors[p.error] += 1
            yield (dumps_line(p) + "\n").encode("utf-8")

    path = write_chunks_atomic(out_dir / PROPOSALS_FILE, lines())
    summary = {"author": config.model_dump(mode="json"), "frames": sorted(frames),
               "num_proposals": per_family.total() + errors.total(),
               "per_family": dict(sorted(per_family.items())),
               "author_errors": dict(sorted(errors.items()))}
    write_text_atomic(out_dir / PROPOSALS_SUMMARY, dumps_document(summary))
    return path


def read_proposals_summary(out_dir: Path) -> dict[str, Any]:
    """``summary.json`` of a proposals folder: the author config and the counts."""
    return read_json(Path(out_dir) / PROPOSALS_SUMMARY)


def read_proposals(out_dir: Path) -> list[Proposal]:
    """The proposals stored in ``out_dir/proposals.jsonl``."""
    path = Path(out_dir) / PROPOSALS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; materialize question_proposals for this recording first")
    return read_jsonl(path, Proposal)


def iter_proposals(out_dir: Path) -> Iterator[Proposal]:
    """The proposals of ``out_dir/proposals.jsonl`` one line at a time (frame order, as written),
    so a long recording's proposals are never all in memory; a bad line names file and line."""
    path = Path(out_dir) / PROPOSALS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; materialize question_proposals for this recording first")
    yield from iter_jsonl(path, Proposal)
