"""Validation of a recording at the door: structure fatal, damaged rows reported.

``Recording.open`` checks what makes a file unusable as a whole (SQLite integrity, the required
streams and their codecs, a decodable first message of each, calibration of the images' size).
A file that fails it never becomes a Dagster partition. One damaged row is not such a problem: a
row without payload, a corrupt payload or an undecodable image is a bad *frame*, which the frame
stage skips and records with its reason (``skipped_frames.json``); only when more than the
configured share of the selected frames is bad does that stage fail.

So the door no longer decodes every row (which cost minutes on a long recording and decided
nothing). It lists what it can see without decoding: rows whose payload is missing, and images
that repeat a timestamp (see :func:`find_duplicate_images`), so registration can report them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from eval_assets.recording.inventory import inventory_of
from eval_assets.recording.names import IMAGE_STREAM
from eval_assets.recording.reader import Recording
from eval_assets.schemas.recording import RecordingInventory

RowProblemKind = Literal["missing_blob", "duplicate_row", "duplicate_timestamp"]


@dataclass(frozen=True)
class RowProblem:
    """A damaged or repeated row found without decoding payloads."""

    stream: str
    row_id: int
    position: int  # index in the stream ordered by (ts, id): the frame index for color_image
    ts: float
    kind: RowProblemKind
    detail: str


@dataclass(frozen=True)
class ValidatedRecording:
    """A recording that passed the structural checks, its inventory and the rows it reports."""

    path: Path
    inventory: RecordingInventory
    problems: tuple[RowProblem, ...] = ()

    def summary(self) -> str:
        """The problems counted by stream and kind ("" when there are none)."""
        counts: dict[str, int] = {}
        for p in self.problems:
            label = f"{p.stream} {p.kind}"
            counts[label] = counts.get(label, 0) + 1
        return ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))


def _equal_ts_groups(ts: np.ndarray) -> list[list[int]]:
    """Runs of positions sharing one ts in a sorted ts array (only runs of two or more)."""
    if ts.size < 2:
        return []
    same = np.flatnonzero(np.diff(ts) == 0)
    groups: list[list[int]] = []
    for i in same.tolist():
        if groups and groups[-1][-1] == i:
            groups[-1].append(i + 1)
        else:
            groups.append([i, i + 1])
    return groups


def _content(payload: object) -> bytes:
    return payload if isinstance(payload, bytes) else repr(payload).encode()


def find_duplicate_images(rec: Recording, positions: Iterable[int] | None = None
                          ) -> dict[int, RowProblem]:
    """Images that share their timestamp with another, by position (frame index).

    Policy: identical payloads at one ts are one frame written twice: the first row is kept and
    each later copy is a ``duplicate_row``. Different images at one ts cannot both be right, and
    the ts is all that links an image to its calibration, pose and LiDAR: every one of them is a
    ``duplicate_timestamp``. Rows without a payload are left to the missing-blob check.
    ``positions`` restricts the answer to groups touching those frames (default: all).
    """
    ts = rec.timestamps(IMAGE_STREAM)
    groups = _equal_ts_groups(ts)
    if positions is not None:
        wanted = set(positions)
        groups = [g for g in groups if wanted.intersection(g)]
    found: dict[int, RowProblem] = {}
    for group in groups:
        payloads = {p: rec.payload(IMAGE_STREAM, p) for p in group}
        present = [p for p in group if payloads[p] is not None]
        distinct = {_content(payloads[p]) for p in present}
        t = float(ts[group[0]])
        if len(distinct) > 1:
            for p in present:
                others = [q for q in present if q != p]
                found[p] = RowProblem(
                    IMAGE_STREAM, rec.row_id(IMAGE_STREAM, p), p, t, "duplicate_timestamp",
                    f"frame {p} shares ts={t:.6f} with frames {others}, which hold different "
                    "images; none of them can be matched to its own calibration, pose and LiDAR")
        elif present:
            first = present[0]
            for p in present[1:]:
                found[p] = RowProblem(
                    IMAGE_STREAM, rec.row_id(IMAGE_STREAM, p), p, t, "duplicate_row",
                    f"frame {p} repeats frame {first} (row id "
                    f"{rec.row_id(IMAGE_STREAM, first)}): same ts={t:.6f}, identical payload; "
                    f"frame {first} is kept")
    return found


def find_missing_payloads(rec: Recording, streams: Iterable[str]) -> list[RowProblem]:
    """Rows of ``streams`` without a row in ``<stream>_blob`` (one SQL query per stream)."""
    problems = []
    for stream in streams:
        ids, ts = rec.row_ids(stream), rec.timestamps(stream)
        for p in rec.positions_without_payload(stream):
            problems.append(RowProblem(
                stream, int(ids[p]), p, float(ts[p]), "missing_blob",
                f"stream {stream!r} row id {int(ids[p])} has no payload in "
                f"{stream + '_blob'!r}"))
    return problems


def validate_recording(path: Path, *, allow_pickle: bool = False, name: str | None = None,
                       also: Callable[[Recording], object] | None = None
                       ) -> ValidatedRecording:
    """Open ``path`` (structural checks, fatal) and list its missing payloads and repeated images.

    Raises :class:`RecordingError` naming the file, the stream and the fix when the recording
    cannot be used at all. Damaged rows are returned in ``problems``, not raised: the frame stage
    skips them and fails only past its ``max_bad_fraction``. ``also`` runs a further check on the
    open recording (the frame admission of :mod:`eval_assets.frames.admission`), so the file is
    opened and integrity-checked once.
    """
    path = Path(path)
    with Recording.open(path, allow_pickle=allow_pickle) as rec:
        problems = find_missing_payloads(rec, rec.required_streams)
        problems += find_duplicate_images(rec).values()
        inventory = inventory_of(rec, name or path.stem)
        if also is not None:
            also(rec)
    problems.sort(key=lambda p: (p.stream, p.position, p.kind))
    return ValidatedRecording(path=path, inventory=inventory, problems=tuple(problems))
