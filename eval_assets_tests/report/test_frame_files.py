"""Frames beside the report: the page links content-named files (relative paths, loaded as cards
are shown), its size grows with the cases and not with the images, and the files are written
before the page and pruned after it."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from eval_assets.report.case_browser import cases_section
from eval_assets.report.frame_files import (
    FRAMES_DIR,
    frame_files,
    frame_src,
    write_report_with_files,
)
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.report.overlays import encode_jpeg
from eval_assets.schemas.report import CaseCard, FrameImage
from eval_assets.schemas.results import CellScores
from eval_assets_tests.report.test_html import parse, report_inputs

Inputs = tuple[list[CellScores], list[CaseCard], list[FrameImage]]


def recordings(tmp_path: Path, k: int) -> Inputs:
    """The test dataset's cards, results and frame as ``k`` recordings (rec0..rec<k-1>)."""
    _, results, cards, frames = report_inputs(tmp_path)
    out: Inputs = ([], [], [])
    for i in range(k):
        name = f"rec{i}"
        out[0].extend(r.model_copy(update={"recording": name}) for r in results)
        out[1].extend(c.model_copy(update={"recording": name}) for c in cards)
        # Each recording's frame has its own bytes, as different recordings' frames do.
        out[2].extend(f.model_copy(update={"recording": name,
                                           "overlay_jpeg": f.overlay_jpeg + bytes([i]),
                                           "plain_jpeg": f.plain_jpeg + bytes([i])})
                      for f in frames)
    return out


def page(inputs: Inputs, beside: bool) -> str:
    results, cards, frames = inputs
    return render_report(build_leaderboard(results), results, cards, "Bench", frames=frames,
                         frames_beside=beside)


def test_the_page_links_each_frame_by_a_relative_content_name(tmp_path: Path) -> None:
    inputs = recordings(tmp_path, 2)
    text = page(inputs, beside=True)
    assert "data:image/jpeg" not in text
    frames = json.loads(parse(text).scripts["frame-data"])
    files = frame_files(inputs[2])
    assert len(files) == 4  # two frames, each with and without its ground truth
    for f in inputs[2]:
        entry = frames[f.key]
        assert entry["src"] == frame_src(f.overlay_jpeg) and entry["plain"] == frame_src(
            f.plain_jpeg)
        assert re.fullmatch(rf"{FRAMES_DIR}/[0-9a-f]{{32}}\.jpg", entry["src"])
        assert files[entry["src"]] == f.overlay_jpeg and files[entry["plain"]] == f.plain_jpeg
    # Relative links to the frames are the page's only references to anything outside it.
    links = re.findall(r'(?:src|href)="([^"#][^"]*)"', text)
    assert all(link.startswith("data:image/png") for link in links)
    assert page(inputs, beside=True) == text  # deterministic


def browser(inputs: Inputs, beside: bool) -> int:
    """Bytes of the case browser (the part of the page that holds the frames)."""
    _, cards, frames = inputs
    return len(cases_section(cards, frames, frames_beside=beside).encode())


def test_size_grows_with_cases_not_with_images(tmp_path: Path) -> None:
    inputs = {k: recordings(tmp_path / str(k), k) for k in (1, 2, 3, 4)}
    sizes = {k: browser(inputs[k], beside=True) for k in inputs}
    inline = {k: browser(inputs[k], beside=False) for k in (1, 2)}
    steps = [sizes[k + 1] - sizes[k] for k in (1, 2, 3)]
    # Each added recording (4 cases, 2 models) adds the same bytes: its case data and links.
    assert max(steps) - min(steps) <= 8 and max(steps) < 6_000
    # Inline, each recording also adds its two JPEGs as base64; beside, none of those bytes
    # (beside, its two links take ~100 bytes where two data: prefixes took ~46).
    frames = inputs[1][2]
    jpeg = len(frames[0].overlay_jpeg) + len(frames[0].plain_jpeg)
    assert inline[2] - inline[1] - steps[0] >= 4 * jpeg // 3 - 128
    # Bigger frames (a 1280x720 camera) change the files, not the browser's bytes.
    rng = np.random.default_rng(0)
    big = encode_jpeg(rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8), 70)
    results, cards, frames = inputs[4]
    heavy = [f.model_copy(update={"overlay_jpeg": big + f.overlay_jpeg}) for f in frames]
    assert browser((results, cards, heavy), beside=True) == sizes[4]


def files_of(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_files_are_written_before_the_page_and_unlinked_ones_pruned(tmp_path: Path) -> None:
    inputs = recordings(tmp_path / "in", 2)
    out = tmp_path / "report" / "report.html"
    files = frame_files(inputs[2])
    text = page(inputs, beside=True)
    assert write_report_with_files(text, out, files) == out
    assert out.read_text(encoding="utf-8") == text
    folder = out.parent / FRAMES_DIR
    assert files_of(folder) == sorted(Path(p).name for p in files)
    for rel, data in files.items():
        assert (out.parent / rel).read_bytes() == data
    # An unchanged frame is not rewritten; a stray temporary and a frame no longer linked go.
    one = recordings(tmp_path / "in1", 1)  # rec0 only: the same bytes as rec0 above
    kept = out.parent / frame_src(one[2][0].overlay_jpeg)
    mtime = kept.stat().st_mtime_ns
    stray = folder / ".x.jpg.123.tmp"
    stray.write_bytes(b"half")
    an_hour_ago = time.time() - 3600
    os.utime(stray, (an_hour_ago, an_hour_ago))
    # Another process's write in flight stays: removing its temporary file would fail it.
    in_flight = folder / ".y.jpg.456.tmp"
    in_flight.write_bytes(b"being written")
    fewer = frame_files(one[2])
    write_report_with_files(page(one, beside=True), out, fewer)
    assert in_flight.read_bytes() == b"being written"
    in_flight.unlink()
    assert files_of(folder) == sorted(Path(p).name for p in fewer)
    assert len(fewer) == 2 and kept.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("bad", ["../x.jpg", "report.html", f"{FRAMES_DIR}/../x.jpg",
                                 f"{FRAMES_DIR}/sub/x.jpg", "/tmp/x.jpg"])
def test_a_file_outside_the_frames_folder_is_refused_before_any_write(
        tmp_path: Path, bad: str) -> None:
    out = tmp_path / "r" / "report.html"
    files: dict[str, bytes] = {f"{FRAMES_DIR}/a.jpg": b"a", bad: b"b"}
    with pytest.raises(ValueError, match=re.escape(f"must be a file name under {FRAMES_DIR}/")):
        write_report_with_files("<html></html>", out, files)
    assert not out.parent.exists()
