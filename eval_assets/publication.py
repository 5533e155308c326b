"""Published means verified: what each asset published, by content, checked on every run.

The datasets (public cases, private labels), each cell's ``results.json``, the leaderboard and
the report are files anyone can open, edit or damage after they were written; the staleness
checks of the leaderboard and report only compare fingerprints when those are rebuilt, so a
hand-edited labels file or a truncated ``results.json`` used to go unseen ("up to date,
recomputed: nothing"). So each publishing asset records what it wrote (:func:`record_files`: a
:class:`~eval_assets.schemas.publication.Publication` per asset partition, every file's SHA-256,
each JSON Lines file's line hashes, and the folders it published whole), and
:func:`verify_publications` compares every record with the files as they are now: a file missing,
edited or damaged (named with its lines, or "not valid JSON"), or added to a published folder is
a :class:`Damage`, which names the assets that rebuild it from their inputs. ``eval-assets run``
repairs what it owns and refuses, naming the fix, what it does not
(:mod:`eval_assets.defs.local.published`); the Dagster checks
(:mod:`eval_assets.defs.checks`) fail on it.

Outputs published before records were kept get one from the files as found
(:func:`adopt_unrecorded`, marked ``adopted``), unless they are plainly damaged (a JSON file that
does not parse); from then on they are verified like the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval_assets import asset_names as names
from eval_assets.atomic import write_text_atomic
from eval_assets.hashing import bytes_sha256
from eval_assets.layout import LEADERBOARD_JSON, LEADERBOARD_PARQUET, StorageLayout
from eval_assets.schemas.publication import Publication

__all__ = ["DATASET_ASSETS", "Damage", "adopt_unrecorded", "record_dataset", "record_files",
           "record_leaderboard", "record_report", "record_results", "verify_publication",
           "verify_publications"]

DATASET_ASSETS = (names.PUBLIC_CASES, names.PRIVATE_LABELS)
"""The dataset's two assets: one multi-asset writes both, so both rebuild it."""
_LINE_DIGITS = 16
_MAX_LINES_NAMED = 5


@dataclass(frozen=True)
class Damage:
    """A published file that is no longer what its asset published."""

    record: Publication
    path: str  # relative to the storage root
    problem: str

    def describe(self) -> str:
        """``datasets/rec/labels.jsonl (private_labels [rec]): edited or damaged ...``."""
        return (f"{self.path} (published by {', '.join(self.record.assets)}"
                f"{self.record.partition_text()}): {self.problem}")


def _relative(layout: StorageLayout, path: Path) -> str:
    return Path(path).resolve().relative_to(layout.root.resolve()).as_posix()


def _line_hashes(data: bytes) -> list[str]:
    return [bytes_sha256(line)[:_LINE_DIGITS] for line in data.splitlines()]


def record_files(layout: StorageLayout, assets: Sequence[str], files: Iterable[Path], *,
                 recording: str | None = None, model: str | None = None,
                 folders: Sequence[Path] = (), adopted: bool = False) -> Path:
    """Record what ``assets`` (one materialization) published: each of ``files`` by content;
    ``folders`` are published whole (a file added to one later is damage too). Written after
    the files, atomically: a crash between leaves the previous record, which then disagrees
    and has the files rebuilt."""
    hashes: dict[str, str] = {}
    lines: dict[str, list[str]] = {}
    for path in sorted(set(files)):
        rel = _relative(layout, path)
        data = Path(path).read_bytes()
        hashes[rel] = bytes_sha256(data)
        if path.suffix == ".jsonl":
            lines[rel] = _line_hashes(data)
    record = Publication(assets=list(assets), recording=recording, model=model, files=hashes,
                         lines=lines, folders=[_relative(layout, f) for f in folders],
                         adopted=adopted)
    out = layout.publication_file(assets[0], recording, model)
    return write_text_atomic(out, record.model_dump_json(indent=1) + "\n")


def _every_file(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("*") if p.is_file()) if folder.is_dir() else []


def record_dataset(layout: StorageLayout, recording: str, *, adopted: bool = False) -> Path:
    """The recording's published dataset: every file of its folder (cases, labels, images,
    audit), the folder published whole."""
    folder = layout.dataset_dir(recording)
    return record_files(layout, DATASET_ASSETS, _every_file(folder), recording=recording,
                        folders=[folder], adopted=adopted)


def record_results(layout: StorageLayout, recording: str, model: str, *,
                   adopted: bool = False) -> Path:
    """The cell's ``results.json``."""
    return record_files(layout, [names.BENCHMARK_RESULTS],
                        [layout.results_file(recording, model)], recording=recording,
                        model=model, adopted=adopted)


def _board_files(layout: StorageLayout) -> list[Path]:
    folder = layout.leaderboard_dir()
    return [folder / LEADERBOARD_JSON, folder / LEADERBOARD_PARQUET]


def record_leaderboard(layout: StorageLayout, *, adopted: bool = False) -> Path:
    """The leaderboard's JSON and Parquet."""
    return record_files(layout, [names.LEADERBOARD], _board_files(layout), adopted=adopted)


def record_report(layout: StorageLayout, *, adopted: bool = False) -> Path:
    """The report page."""
    return record_files(layout, [names.REPORT], [layout.report_file()], adopted=adopted)


def _records(layout: StorageLayout) -> list[Publication]:
    folder = layout.publications_dir()
    out = []
    for path in _every_file(folder):
        if path.suffix != ".json":
            continue
        try:
            out.append(Publication.model_validate_json(path.read_bytes()))
        except ValueError:
            continue  # a damaged record is no record: the outputs are adopted or rebuilt anew
    return out


def _not_json(path: Path) -> str | None:
    """Why a JSON (or JSON Lines) file does not parse; None when it does or is no such file."""
    if path.suffix not in (".json", ".jsonl"):
        return None
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            json.loads(text)
            return None
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    json.loads(line)
                except ValueError as exc:
                    return f"line {number} is not valid JSON ({exc})"
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not valid JSON ({exc})"
    return None


def _lines_changed(record: Publication, rel: str, data: bytes) -> str:
    was = record.lines.get(rel)
    if was is None:
        return ""
    now = _line_hashes(data)
    changed = [i + 1 for i, (a, b) in enumerate(zip(was, now, strict=False)) if a != b]
    shown = ", ".join(str(n) for n in changed[:_MAX_LINES_NAMED])
    more = f" and {len(changed) - _MAX_LINES_NAMED} more" if len(changed) > _MAX_LINES_NAMED else ""
    parts = [f"{len(changed)} of {len(was)} lines changed (line {shown}{more})"] if changed else []
    if len(now) != len(was):
        parts.append(f"{len(now)} lines where {len(was)} were published")
    return "; " + "; ".join(parts) if parts else ""


def verify_publication(layout: StorageLayout, record: Publication) -> list[Damage]:
    """The files of ``record`` that are not as published, each with what is wrong."""
    damaged = []
    for rel, sha in sorted(record.files.items()):
        path = layout.root / rel
        if not path.is_file():
            damaged.append(Damage(record, rel, "missing (removed after publication)"))
            continue
        data = path.read_bytes()
        if bytes_sha256(data) == sha:
            continue
        broken = _not_json(path)
        detail = f"; {broken}" if broken else _lines_changed(record, rel, data)
        damaged.append(Damage(record, rel, "edited or damaged after publication (content "
                              f"{bytes_sha256(data)[:12]}…, published {sha[:12]}…){detail}"))
    for folder in record.folders:
        for path in _every_file(layout.root / folder):
            rel = _relative(layout, path)
            if rel not in record.files:
                damaged.append(Damage(record, rel, "added to a published folder after "
                                      "publication"))
    return damaged


def verify_publications(layout: StorageLayout) -> list[Damage]:
    """Every published file of the storage root that is not as its asset published it."""
    return [d for record in _records(layout) for d in verify_publication(layout, record)]


def adopt_unrecorded(layout: StorageLayout) -> list[Path]:
    """Record the published outputs that have no record yet (published before records were
    kept), from their files as found, unless a JSON file of theirs does not parse (that one is
    left unrecorded, for its asset to rewrite). Returns the records written."""
    written: list[Path] = []
    datasets = layout.dataset_dir("-").parent
    for folder in sorted(p for p in datasets.iterdir() if p.is_dir()) if datasets.is_dir() else []:
        if (not layout.publication_file(DATASET_ASSETS[0], folder.name).is_file()
                and (folder / "cases.jsonl").is_file() and _parses(_every_file(folder))):
            written.append(record_dataset(layout, folder.name, adopted=True))
    results = layout.asset_dir(names.BENCHMARK_RESULTS, "-").parent
    for path in sorted(results.glob("*/*/results.json")) if results.is_dir() else []:
        recording, model = path.parent.parent.name, path.parent.name
        if path != layout.results_file(recording, model):
            continue
        if (not layout.publication_file(names.BENCHMARK_RESULTS, recording, model).is_file()
                and _parses([path])):
            written.append(record_results(layout, recording, model, adopted=True))
    board = _board_files(layout)
    if (not layout.publication_file(names.LEADERBOARD).is_file()
            and all(p.is_file() for p in board) and _parses(board)):
        written.append(record_leaderboard(layout, adopted=True))
    if not layout.publication_file(names.REPORT).is_file() and layout.report_file().is_file():
        written.append(record_report(layout, adopted=True))
    return written


def _parses(paths: Iterable[Path]) -> bool:
    return all(_not_json(p) is None for p in paths)
