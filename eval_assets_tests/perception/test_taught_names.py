"""Taught names: reference folders read and checked, objects named only when certain.

Real PNG files drawn here (discs of one or two colours on a noisy background); the simulator's
catalog is covered in ``eval_assets_tests/sim/test_references.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.errors import InputError
from eval_assets.perception.taught_names import (
    MARGIN,
    SCORE_FLOOR,
    ReferenceImagesError,
    TaughtNames,
    name_problem,
)

SIZE = 64
COLOURS = {"tomato": (200, 30, 25), "lime": (60, 190, 40), "blueberry": (40, 60, 180)}


def _disc(rgb: tuple[int, int, int], seed: int, second: tuple[int, int, int] | None = None,
          share: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """An RGB image of a shaded disc (its lower ``share`` in ``second``) and the disc's mask."""
    rng = np.random.default_rng(seed)
    image = rng.integers(90, 160, (SIZE, SIZE, 3)).astype(np.float64)  # grey noise background
    vs, us = np.mgrid[:SIZE, :SIZE]
    cx, cy, r = 32 + rng.integers(-3, 4), 32 + rng.integers(-3, 4), 20
    mask = (us - cx) ** 2 + (vs - cy) ** 2 <= r * r
    shade = 0.8 + 0.2 * (1 - (us - cx + r) / (2 * r)) * rng.uniform(0.7, 1.0)
    colour = np.broadcast_to(np.asarray(rgb, dtype=np.float64), image.shape).copy()
    if second is not None:
        lower = vs > cy + r - 2 * r * share
        colour[lower] = second
    image[mask] = (colour * shade[..., None])[mask]
    return np.clip(image, 0, 255).astype(np.uint8), mask


def _write(folder: Path, stem: str, image: np.ndarray, mask: np.ndarray | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.png"
    cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    if mask is not None:
        cv2.imwrite(str(folder / f"{stem}.mask.png"), mask.astype(np.uint8) * 255)
    return path


def _references(root: Path, sizes: bool = True) -> Path:
    """Three names, three masked views each, sizes for all."""
    for k, (name, rgb) in enumerate(COLOURS.items()):
        for view in range(3):
            _write(root / name, f"view_{view}", *_disc(rgb, seed=10 * k + view))
        if sizes:
            size = [0.08, 0.07, 0.07] if name == "tomato" else [0.05, 0.05, 0.04]
            (root / name / "object.json").write_text(json.dumps({"size_m": size}))
    return root


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    return _references(tmp_path / "objects")


def _refused(root: Path, *parts: str) -> str:
    with pytest.raises(ReferenceImagesError) as caught:
        TaughtNames.load(root)
    message = str(caught.value)
    assert isinstance(caught.value, InputError) and isinstance(caught.value, ValueError)
    assert "Fix:" in message, message
    for part in parts:
        assert part in message, (part, message)
    return message


def test_a_folder_of_references_loads_and_names_a_new_view(root: Path) -> None:
    taught = TaughtNames.load(root)
    assert taught.names == ("blueberry", "lime", "tomato")
    assert dict(taught.sizes)["tomato"] == (0.08, 0.07, 0.07)
    for k, (name, rgb) in enumerate(COLOURS.items()):
        verdict = taught.name(*_disc(rgb, seed=100 + k))
        assert verdict.name == name, verdict
        assert verdict.score >= SCORE_FLOOR and verdict.margin >= MARGIN
        assert verdict.runner_up in taught.names and verdict.runner_up != name


def test_an_object_of_no_taught_colour_is_not_named(root: Path) -> None:
    verdict = TaughtNames.load(root).name(*_disc((230, 210, 20), seed=5))  # yellow
    assert verdict.name is None and verdict.reason.startswith("below floor"), verdict


def test_too_small_a_margin_is_not_a_name(tmp_path: Path) -> None:
    """Two names of the same red over different second colours; a mostly red object is
    close to both and gets no name, with the margin in the reason."""
    red, white, blue = (200, 30, 25), (235, 235, 235), (40, 60, 180)
    for view in range(3):
        _write(tmp_path / "red flag", f"v{view}", *_disc(red, view, white, 0.4))
        _write(tmp_path / "red ball", f"v{view}", *_disc(red, view, blue, 0.4))
    taught = TaughtNames.load(tmp_path)
    image, mask = _disc(red, 50)
    image[mask & (np.arange(SIZE)[:, None] > 46)] = white
    image[mask & (np.arange(SIZE)[:, None] > 48)] = blue
    verdict = taught.name(image, mask)
    assert verdict.name is None, verdict
    assert verdict.reason.startswith(f"margin {verdict.margin:.2f} < {MARGIN:.2f} over "), verdict


def test_the_lidar_extent_rules_names_out(root: Path) -> None:
    taught = TaughtNames.load(root)
    image, mask = _disc(COLOURS["tomato"], seed=7)
    assert taught.name(image, mask, [0.07, 0.08, 0.06]).name == "tomato"  # any order
    assert taught.name(image, mask, [0.09, 0.05, 0.05]).name == "tomato"  # within 35 %
    verdict = taught.name(image, mask, [0.05, 0.04, 0.04])  # the small ones only: not red
    assert verdict.name is None and verdict.reason.startswith("below floor"), verdict
    verdict = taught.name(image, mask, [0.6, 0.4, 0.3])
    assert verdict.name is None and verdict.reason.startswith("no reference fits the extent")
    (root / "lime" / "object.json").unlink()  # a name without size_m is never ruled out
    assert TaughtNames.load(root).fits("lime", [5.0, 5.0, 5.0])


def test_an_rgba_images_alpha_is_its_mask(tmp_path: Path) -> None:
    """The same view as RGBA (alpha = the disc) and as RGB + mask file reads the same."""
    _references(tmp_path / "a", sizes=False)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    image, mask = _disc(COLOURS["lime"], seed=11)  # as _references drew lime/view_1
    rgba = np.dstack([image, mask.astype(np.uint8) * 255])
    (tmp_path / "b" / "lime" / "view_1.mask.png").unlink()
    cv2.imwrite(str(tmp_path / "b" / "lime" / "view_1.png"),
                cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGRA))
    a, b = TaughtNames.load(tmp_path / "a"), TaughtNames.load(tmp_path / "b")
    for ra, rb in zip(a.references, b.references, strict=True):
        assert np.array_equal(ra.appearance.histogram, rb.appearance.histogram), ra.path


def test_a_name_with_one_image_loads(tmp_path: Path) -> None:
    _write(tmp_path / "lime", "only", *_disc(COLOURS["lime"], 1))
    _write(tmp_path / "tomato", "only", *_disc(COLOURS["tomato"], 2))
    assert TaughtNames.load(tmp_path).names == ("lime", "tomato")


def test_the_fingerprint_is_the_content(root: Path, tmp_path: Path) -> None:
    taught = TaughtNames.load(root)
    shutil.copytree(root, tmp_path / "elsewhere")
    assert TaughtNames.load(tmp_path / "elsewhere").fingerprint() == taught.fingerprint()
    assert len(taught.fingerprint()) == 64
    (root / "tomato" / "view_0.png").rename(root / "tomato" / "front.png")
    (root / "tomato" / "view_0.mask.png").rename(root / "tomato" / "front.mask.png")
    renamed = TaughtNames.load(root).fingerprint()
    assert renamed != taught.fingerprint()
    (root / "lime" / "object.json").write_text(json.dumps({"size_m": [0.05, 0.05, 0.05]}))
    assert TaughtNames.load(root).fingerprint() not in (renamed, taught.fingerprint())


def test_loading_and_naming_are_deterministic(root: Path) -> None:
    first, second = TaughtNames.load(root), TaughtNames.load(root)
    image, mask = _disc(COLOURS["blueberry"], seed=3)
    assert first.name(image, mask) == second.name(image, mask) == first.name(image, mask)
    for a, b in zip(first.references, second.references, strict=True):
        assert np.array_equal(a.appearance.histogram, b.appearance.histogram)


# --- refusals: each names the file or folder, the problem and the fix --------------------------


@pytest.mark.parametrize("data", [b"", b"hello", b"\x89PNG\r\n\x1a\n broken"])
def test_an_unreadable_image_is_refused(root: Path, data: bytes) -> None:
    bad = root / "tomato" / "view_1.png"
    bad.write_bytes(data if data else b"")
    _refused(root, str(bad), "not a readable image", "replace the file", "or delete it")


def test_a_truncated_image_is_refused(root: Path) -> None:
    bad = root / "lime" / "view_2.png"
    bad.write_bytes(bad.read_bytes()[:200])
    _refused(root, str(bad), "not a readable image")


@pytest.mark.parametrize("name", ["Tomato", "tomato2", "red_tomato", "red  tomato", "-tomato",
                                  "big red ripe tomato", "object marked 3", "object", "objects"])
def test_a_name_that_is_not_a_plain_noun_phrase_is_refused(root: Path, name: str) -> None:
    (root / "tomato").rename(root / name)
    _refused(root, str(root / name), repr(name), "rename the folder")


def test_plain_noun_phrases() -> None:
    for good in ("mug", "teddy bear", "t-shirt", "jack-in-the-box", "red coffee mug"):
        assert name_problem(good) is None, good
    assert name_problem("") == "is empty"
    for reserved in ("object marked 2", "Object", "objects", "object-like thing"):
        assert "reserved" in (name_problem(reserved) or ""), reserved


def test_references_that_cannot_be_told_apart_are_refused(root: Path) -> None:
    shutil.copytree(root / "lime", root / "green ball")
    message = _refused(root, "'green ball'", "'lime'", "cannot be told apart",
                       "add views that tell", "merge or rename")
    assert str(root / "green ball") in message and str(root / "lime") in message


def test_a_mask_of_another_size_is_refused(root: Path) -> None:
    mask = root / "tomato" / "view_2.mask.png"
    cv2.imwrite(str(mask), np.full((32, 40), 255, np.uint8))
    _refused(root, str(mask), "40x32", f"{SIZE}x{SIZE}", "at the image's size")


def test_an_empty_mask_is_refused(root: Path) -> None:
    mask = root / "blueberry" / "view_0.mask.png"
    cv2.imwrite(str(mask), np.zeros((SIZE, SIZE), np.uint8))
    _refused(root, str(mask), "0 object pixels", "paint the object")


def test_a_mask_without_its_image_is_refused(root: Path) -> None:
    (root / "lime" / "view_1.png").unlink()
    _refused(root, str(root / "lime" / "view_1.mask.png"), "without its image")


def test_a_name_folder_without_images_is_refused(root: Path) -> None:
    (root / "empty").mkdir()
    (root / "empty" / "notes.txt").write_text("nothing")
    _refused(root, str(root / "empty"), "no image", "add a few views")


@pytest.mark.parametrize("record", ['{"size_m": [0.1, 0.2]}', '{"size_m": [0.1, -1, 2]}',
                                    '{"size": [1, 1, 1]}', "not json", '[1, 2, 3]'])
def test_a_bad_object_file_is_refused(root: Path, record: str) -> None:
    (root / "tomato" / "object.json").write_text(record)
    _refused(root, str(root / "tomato" / "object.json"), "size_m")


def test_a_missing_or_empty_root_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path / "nowhere", "no such folder")
    _refused(tmp_path, "no name folders")
