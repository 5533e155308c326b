"""Frame images as files beside the report, so the report stays light as recordings accumulate.

Inlined as data: URIs, every frame of every recording is in ``report.html`` twice (with and
without its ground truth): four short recordings made a 16.5 MB page that a browser parses in
full before showing anything. Written beside it instead, in :data:`FRAMES_DIR`, the page holds
only relative links, and the browser fetches a frame when a case card that shows it is drawn
(20 cards a page, ``loading="lazy"``), so the page's size grows with the case count, not with
the image bytes.

Each file is named by its content (a SHA-256 prefix), so the same frame gives the same name on
every run (the report's bytes stay deterministic), an unchanged frame is not rewritten, and a
name never points at other content. Files are written atomically before the page, so a page on
disk never links a missing file; files no longer linked are removed after the page is replaced.
Opened from disk, the relative links resolve beside the file: copy the folder with the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from eval_assets.atomic import in_flight, write_bytes_atomic, write_text_atomic
from eval_assets.hashing import bytes_sha256
from eval_assets.schemas.report import FrameImage

__all__ = ["FRAMES_DIR", "frame_files", "frame_src", "write_report_with_files"]

FRAMES_DIR = "report_frames"
_NAME_CHARS = 32  # 128 bits of SHA-256: no two frames share a name


def frame_src(jpeg: bytes) -> str:
    """The relative path, from the report's folder, of the file holding ``jpeg``."""
    return f"{FRAMES_DIR}/{bytes_sha256(jpeg)[:_NAME_CHARS]}.jpg"


def frame_files(frames: Sequence[FrameImage]) -> dict[str, bytes]:
    """Every image the report links (each frame's overlay and plain JPEG), by relative path."""
    return {frame_src(jpeg): jpeg for f in frames for jpeg in (f.overlay_jpeg, f.plain_jpeg)}


def write_report_with_files(html_text: str, path: Path, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` (relative path -> bytes, under :data:`FRAMES_DIR`) beside ``path``, then
    the page, each atomically; then remove the files of :data:`FRAMES_DIR` the page no longer
    links. Returns ``path``.

    A file already there with the same bytes is not rewritten. Raises ``ValueError`` for a
    relative path outside :data:`FRAMES_DIR` (nothing is written then).
    """
    path = Path(path)
    folder = path.parent / FRAMES_DIR
    targets = {}
    for rel in sorted(files):
        target = path.parent / rel
        if target.parent != folder or target.name in ("", ".", ".."):
            raise ValueError(f"report file {rel!r} must be a file name under {FRAMES_DIR}/")
        targets[target] = files[rel]
    for target, data in targets.items():
        if not (target.is_file() and target.read_bytes() == data):
            write_bytes_atomic(target, data)
    write_text_atomic(path, html_text)
    if folder.is_dir():
        for old in folder.iterdir():
            # Leftover temporaries of an interrupted write go too (they start with a dot), but
            # not those of a write in flight in another process (removing one fails it).
            if old.is_file() and old not in targets and not in_flight(old):
                old.unlink(missing_ok=True)
    return path
