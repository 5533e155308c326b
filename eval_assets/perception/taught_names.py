"""Names a team teaches with a few reference images per name, no weights (``specs/evidence.md``).

Layout: ``<root>/<name>/*.png|*.jpg`` (``data/objects/mug/front.png``), each image with an
optional mask ``<stem>.mask.png`` (non-zero = the object); without one an RGBA image's alpha is
the mask, else the whole image. Optional ``<root>/<name>/object.json``: ``{"size_m": [l, w, h]}``
(compared sorted, longest first). :meth:`TaughtNames.load` checks it all before returning;
problems raise :class:`ReferenceImagesError` naming the file, the problem and the fix.

The design, measured on the simulator's catalog (references from 40° above; objects cut from a
recording's frames by its truth masks, mostly 300-2,000 pixels; see the tests):

* **Colour carries the name**: an HSV hue × saturation × value histogram (18 × 3 × 3) of the
  chromatic masked pixels plus 4 value bins for pixels too grey or dark for a hue (a black and
  white ball vs a grey tray), hue smoothed circularly, compared by the Bhattacharyya
  coefficient. It survives the change of viewpoint and shading and works on small objects.
* **Keypoints only confirm**: ORB (fixed ``ORB_FEATURES``: deterministic) on the masked crop
  scaled to ``ORB_SIDE``, mutual ratio-test matches that one homography explains (RANSAC).
  Verified matches fired only between neighbouring views of one object, never across names and
  never on a recording's small objects; raw match shares had no signal across viewpoints. So
  they lift a score towards 1 (``KEYPOINT_WEIGHT`` of the gap) and their absence costs nothing.
* A name scores its best reference. **Extent gate**: with the name's ``size_m`` and the LiDAR's
  extent known, a longest side off by more than ``EXTENT_TOLERANCE`` rules the name out.
* A name is said only at ``SCORE_FLOOR`` AND ``MARGIN`` over the next candidate, else ``name``
  is None with the reason. The floor keeps a mixed-colour unknown unnamed (r2d2: 0.68-0.70 vs
  the soccer ball); an unknown in one taught name's colours (a yellow box, the duck) is named
  wrongly unless the extent rules it out: colour cannot tell them apart.
* **Names must be told apart when read**: each reference is scored against all the others
  (leave-one-out) and must match its own name best, by ``MARGIN`` (a name with one image: no
  other name may reach the floor on it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from eval_assets.errors import InputError
from eval_assets.hashing import bytes_sha256, canonical_json_sha256
from eval_assets.schemas.spatial import MARKED_PREFIX

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
MASK_SUFFIX = ".mask.png"
OBJECT_FILE = "object.json"
OBJECT_KEYS = ("size_m", "source")
MIN_MASK_PIXELS = 64  # fewer carry no usable appearance: a reference is refused, a query unnamed

HUE_BINS, SAT_BINS, VAL_BINS, GREY_BINS = 18, 3, 3, 4
CHROMA_MIN = 50  # HSV saturation or value (0–255) below this: no meaningful hue, a grey bin
ORB_FEATURES, ORB_SIDE, ORB_RATIO, ORB_RANSAC_PX = 300, 160, 0.8, 6.0
ORB_MIN_INLIERS, ORB_FULL_INLIERS = 10, 30  # homography inliers: fewer is chance; full proof
KEYPOINT_WEIGHT = 0.5  # share of the gap between colour and 1 that full proof closes
SCORE_FLOOR = 0.75  # below it the object looks like none of a name's references
MARGIN = 0.10  # over the next candidate, when naming and between references
EXTENT_TOLERANCE = 0.35  # longest side vs the name's size_m, relative

_FIX_IMAGE = "replace the file with a readable PNG or JPEG, or delete it"
_NAME_RULE = re.compile(r"[a-z]+(?:-[a-z]+)*(?: [a-z]+(?:-[a-z]+)*){0,2}")
_RESERVED = MARKED_PREFIX.split()[0]


Keypoints = tuple[np.ndarray, np.ndarray]
"""ORB keypoint positions (N × 2 float32) and their descriptors (N × 32 uint8)."""


class ReferenceImagesError(InputError, ValueError):
    """A reference-image folder that cannot be used: names the file or folder and the fix."""


@dataclass(frozen=True)
class NameVerdict:
    """What :meth:`TaughtNames.name` decided: the name (None when not certain), its score, the
    runner-up name and the margin over it, and why."""

    name: str | None
    score: float
    runner_up: str | None
    margin: float
    reason: str


@dataclass(frozen=True)
class Appearance:
    """What an object looks like to the matcher: colour histogram and ORB keypoints."""

    histogram: np.ndarray
    keypoints: Keypoints | None


@dataclass(frozen=True)
class Reference:
    """One reference image of one name."""

    name: str
    path: Path
    appearance: Appearance


# --- appearance ---------------------------------------------------------------------------------


def colour_histogram(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Normalised hue × saturation × value histogram of the chromatic masked pixels, then value
    bins of the achromatic ones (``HUE_BINS · SAT_BINS · VAL_BINS + GREY_BINS`` entries, sum 1)."""
    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)[mask].astype(np.int64)
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    chroma = (s >= CHROMA_MIN) & (v >= CHROMA_MIN)
    hue = np.minimum(h[chroma] * HUE_BINS // 180, HUE_BINS - 1)
    sat = np.minimum((s[chroma] - CHROMA_MIN) * SAT_BINS // (256 - CHROMA_MIN), SAT_BINS - 1)
    val = np.minimum((v[chroma] - CHROMA_MIN) * VAL_BINS // (256 - CHROMA_MIN), VAL_BINS - 1)
    cells = np.bincount((hue * SAT_BINS + sat) * VAL_BINS + val,
                        minlength=HUE_BINS * SAT_BINS * VAL_BINS).reshape(HUE_BINS, -1)
    grid = 0.5 * cells + 0.25 * (np.roll(cells, 1, axis=0) + np.roll(cells, -1, axis=0))
    grey = np.bincount(v[~chroma] * GREY_BINS // 256, minlength=GREY_BINS).astype(np.float64)
    out = np.concatenate([grid.ravel(), grey])
    return out / max(out.sum(), 1.0)


def _masked_crop(image: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mask's box (4 px around it) as grey, background flat, scaled to ``ORB_SIDE``."""
    vs, us = np.nonzero(mask)
    v0, v1 = max(int(vs.min()) - 4, 0), min(int(vs.max()) + 5, mask.shape[0])
    u0, u1 = max(int(us.min()) - 4, 0), min(int(us.max()) + 5, mask.shape[1])
    grey = cv2.cvtColor(image[v0:v1, u0:u1], cv2.COLOR_RGB2GRAY)
    inside = mask[v0:v1, u0:u1]
    grey = np.where(inside, grey, np.uint8(128)).astype(np.uint8)
    scale = ORB_SIDE / max(grey.shape)
    size = (max(round(grey.shape[1] * scale), 1), max(round(grey.shape[0] * scale), 1))
    inter = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    small = cv2.resize(inside.astype(np.uint8) * 255, size, interpolation=cv2.INTER_NEAREST)
    return cv2.resize(grey, size, interpolation=inter), small


def keypoints(image: np.ndarray, mask: np.ndarray) -> Keypoints | None:
    """ORB keypoint positions (N × 2, in the scaled crop) and descriptors (N × 32 uint8) of the
    masked object; None when it has fewer than ``ORB_MIN_INLIERS``."""
    grey, inside = _masked_crop(image, mask)
    orb = cv2.ORB.create(nfeatures=ORB_FEATURES, edgeThreshold=15, patchSize=15,
                         fastThreshold=10)
    points, descriptors = orb.detectAndCompute(grey, inside)
    if descriptors is None or len(descriptors) < ORB_MIN_INLIERS:
        return None
    return np.array([kp.pt for kp in points], dtype=np.float32), descriptors


def appearance(image: np.ndarray, mask: np.ndarray) -> Appearance:
    """The colour histogram and ORB keypoints of ``image`` (RGB uint8) inside ``mask``."""
    return Appearance(colour_histogram(image, mask), keypoints(image, mask))


def _ratio_matches(a: np.ndarray, b: np.ndarray) -> dict[int, int]:
    """``a`` index → ``b`` index of the matches that pass Lowe's ratio test."""
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(a, b, k=2)
    return {m[0].queryIdx: m[0].trainIdx for m in pairs
            if len(m) == 2 and m[0].distance < ORB_RATIO * m[1].distance}


def keypoint_score(query: Keypoints | None, ref: Keypoints | None) -> float:
    """Share of ``ORB_FULL_INLIERS`` reached by the mutual ratio-test matches that one
    homography explains (RANSAC); 0 below ``ORB_MIN_INLIERS`` (chance matches)."""
    if query is None or ref is None:
        return 0.0
    forward, backward = _ratio_matches(query[1], ref[1]), _ratio_matches(ref[1], query[1])
    pairs = [(q, r) for q, r in forward.items() if backward.get(r) == q]
    if len(pairs) < ORB_MIN_INLIERS:
        return 0.0
    src = query[0][[q for q, _ in pairs]]
    dst = ref[0][[r for _, r in pairs]]
    _, inliers = cv2.findHomography(src, dst, cv2.RANSAC, ORB_RANSAC_PX)
    count = 0 if inliers is None else int(inliers.sum())
    return min(count / ORB_FULL_INLIERS, 1.0) if count >= ORB_MIN_INLIERS else 0.0


def similarity(query: Appearance, ref: Appearance) -> float:
    """Bhattacharyya coefficient of the colour histograms, lifted towards 1 by
    ``KEYPOINT_WEIGHT`` of the gap times the verified keypoint score (never lowered)."""
    colour = float(np.sqrt(query.histogram * ref.histogram).sum())
    return colour + KEYPOINT_WEIGHT * (1.0 - colour) * keypoint_score(query.keypoints,
                                                                      ref.keypoints)


# --- reading ------------------------------------------------------------------------------------


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain noun phrase, or None when it is."""
    if not name:
        return "is empty"
    if name.lower().startswith(_RESERVED):
        return f"starts with {_RESERVED!r} (reserved: {MARKED_PREFIX!r}N names unnamed objects)"
    if not _NAME_RULE.fullmatch(name):
        return ("is not a plain noun phrase (1-3 words of lower-case letters a-z, single "
                "spaces or hyphens between them, no digits)")
    return None


def _decode(path: Path, data: bytes, flags: int) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), flags) if data else None
    if image is None or image.size == 0:
        raise ReferenceImagesError(f"{path}: not a readable image (corrupt, truncated or not a "
                                   f"PNG/JPEG). Fix: {_FIX_IMAGE}")
    return (image / 257).astype(np.uint8) if image.dtype == np.uint16 else image


def _rgb_and_alpha(image: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2RGB), None
    if image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2RGB), image[:, :, 3] > 0
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB), None


def _read_mask(path: Path, data: bytes, image: Path, shape: tuple[int, ...]) -> np.ndarray:
    mask = _decode(path, data, cv2.IMREAD_GRAYSCALE) > 0
    if mask.shape != shape:
        raise ReferenceImagesError(
            f"{path}: the mask is {mask.shape[1]}x{mask.shape[0]} but its image {image.name} "
            f"is {shape[1]}x{shape[0]}. Fix: save the mask at the image's size, or delete it")
    return mask


def _check_mask(path: Path, mask: np.ndarray) -> None:
    if int(mask.sum()) < MIN_MASK_PIXELS:
        raise ReferenceImagesError(
            f"{path}: the mask marks {int(mask.sum())} object pixels (at least "
            f"{MIN_MASK_PIXELS} needed). Fix: paint the object non-zero in the mask (or alpha), "
            "or delete the mask to use the whole image")


def _read_size(path: Path, data: bytes) -> tuple[float, float, float] | None:
    fix = 'write {"size_m": [length, width, height]} in metres, or delete the file'
    try:
        record = json.loads(data)
    except ValueError as exc:
        raise ReferenceImagesError(f"{path}: not valid JSON ({exc}). Fix: {fix}") from None
    if not isinstance(record, dict):
        raise ReferenceImagesError(f"{path}: not a JSON object. Fix: {fix}")
    unknown = sorted(set(record) - set(OBJECT_KEYS))
    if unknown:
        raise ReferenceImagesError(f"{path}: unknown key(s) {', '.join(unknown)} (known: "
                                   f"{', '.join(OBJECT_KEYS)}). Fix: {fix}")
    size = record.get("size_m")
    if size is None:
        return None
    ok = isinstance(size, list) and len(size) == 3 and all(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in size)
    if not ok:
        raise ReferenceImagesError(f"{path}: size_m must be three positive numbers, got "
                                   f"{size!r}. Fix: {fix}")
    a, b, c = sorted((float(v) for v in size), reverse=True)
    return a, b, c


def _image_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """The name folder's images and masks (sorted); a mask without its image is refused."""
    files = sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    masks = [f for f in files if f.name.lower().endswith(MASK_SUFFIX)]
    images = [f for f in files if f.suffix.lower() in IMAGE_SUFFIXES and f not in masks]
    stems = {f.stem for f in images}
    for mask in masks:
        if mask.name[:-len(MASK_SUFFIX)] not in stems:
            raise ReferenceImagesError(f"{mask}: a mask without its image. Fix: add the image "
                                       f"beside it or delete the mask")
    if not images:
        raise ReferenceImagesError(f"{folder}: no image (*.png, *.jpg) of {folder.name!r}. Fix: "
                                   "add a few views of the object, or delete the folder")
    return images, masks


def _name_folders(root: Path) -> list[Path]:
    if not root.is_dir():
        raise ReferenceImagesError(f"{root}: no such folder of reference images. Fix: create it "
                                   "with one folder per name, e.g. mug/front.png")
    folders = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not folders:
        raise ReferenceImagesError(f"{root}: no name folders. Fix: add one folder per name with "
                                   "a few images of the object, e.g. mug/front.png")
    for folder in folders:
        problem = name_problem(folder.name)
        if problem:
            raise ReferenceImagesError(f"{folder}: the name {folder.name!r} {problem}. Fix: "
                                       "rename the folder to the plain name a person would use, "
                                       "e.g. 'mug', 'teddy bear'")
    return folders


@dataclass
class _Reading:
    """What loading collects: references, sizes and (relative path, sha256) per file."""

    root: Path
    references: list[Reference]
    sizes: dict[str, tuple[float, float, float]]
    hashes: list[tuple[str, str]]

    def data(self, path: Path) -> bytes:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ReferenceImagesError(f"{path}: cannot be read ({exc.strerror}). Fix: make it "
                                       "readable by this user, or delete it") from None
        self.hashes.append((path.relative_to(self.root).as_posix(), bytes_sha256(data)))
        return data

    def read_image(self, name: str, path: Path, masks: list[Path]) -> None:
        rgb, mask = _rgb_and_alpha(_decode(path, self.data(path), cv2.IMREAD_UNCHANGED))
        mask_path = path.with_name(path.stem + MASK_SUFFIX)
        if mask_path in masks:
            mask = _read_mask(mask_path, self.data(mask_path), path, rgb.shape[:2])
        mask = np.ones(rgb.shape[:2], dtype=bool) if mask is None else mask
        _check_mask(mask_path if mask_path in masks else path, mask)
        self.references.append(Reference(name, path, appearance(rgb, mask)))

    def read_folder(self, folder: Path) -> None:
        images, masks = _image_files(folder)
        for path in images:
            self.read_image(folder.name, path, masks)
        size_file = folder / OBJECT_FILE
        if size_file.is_file():
            size = _read_size(size_file, self.data(size_file))
            if size is not None:
                self.sizes[folder.name] = size


# --- telling names apart ------------------------------------------------------------------------


def _best_per_name(scores: np.ndarray, refs: Sequence[Reference],
                   skip: int | None = None) -> dict[str, tuple[float, int]]:
    """Per name, its best score over ``refs`` (and which reference), leaving out ``skip``."""
    best: dict[str, tuple[float, int]] = {}
    for j, ref in enumerate(refs):
        if j != skip and (ref.name not in best or scores[j] > best[ref.name][0]):
            best[ref.name] = (float(scores[j]), j)
    return best


def _confusion(i: int, row: np.ndarray, refs: Sequence[Reference]) -> str | None:
    """Why reference ``i`` cannot be told from another name's references, or None."""
    best = _best_per_name(row, refs, skip=i)
    own_name = refs[i].name
    own = best.pop(own_name, None)
    if not best:
        return None
    other = max(best, key=lambda n: best[n][0])
    score, j = best[other]
    if own is None and score < SCORE_FLOOR:
        return None
    if own is not None and own[0] - score >= MARGIN:
        return None
    against = ("it is the only reference of its name" if own is None else
               f"against {own[0]:.2f} for the other references of {own_name!r}")
    return (f"{refs[i].path}: {own_name!r} cannot be told apart from {other!r}: its best match "
            f"among the other references is {refs[j].path} (score {score:.2f}; {against}; a "
            f"margin of {MARGIN:.2f} is needed). Fix: add views that tell {own_name!r} and "
            f"{other!r} apart (other sides, masks that leave out the background), or merge or "
            "rename the two folders")


def check_distinct(references: Sequence[Reference]) -> None:
    """Leave-one-out: each reference must match its own name best, by ``MARGIN``.

    The pair scores are taken once per pair (the matrix is symmetric: ``[i, j]`` with the
    lower index as the query), which halves the time of a load.
    """
    n = len(references)
    pairs = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            pairs[i, j] = pairs[j, i] = similarity(references[i].appearance,
                                                   references[j].appearance)
    for i in range(n):
        problem = _confusion(i, pairs[i], references)
        if problem:
            raise ReferenceImagesError(problem)


# --- the names ----------------------------------------------------------------------------------


def _verdict(ranked: list[tuple[str, float]]) -> NameVerdict:
    (best, score), rest = ranked[0], ranked[1:]
    runner_up, second = rest[0] if rest else (None, 0.0)
    margin = score - second
    if score < SCORE_FLOOR:
        return NameVerdict(None, score, runner_up, margin,
                           f"below floor: best {best!r} {score:.2f} < {SCORE_FLOOR:.2f}")
    if margin < MARGIN:
        return NameVerdict(None, score, runner_up, margin,
                           f"margin {margin:.2f} < {MARGIN:.2f} over {runner_up!r}")
    return NameVerdict(best, score, runner_up, margin,
                       f"{best!r} {score:.2f}, margin {margin:.2f} over {runner_up!r}")


@dataclass(frozen=True)
class TaughtNames:
    """The names read from a reference-image folder, ready to match (see the module doc)."""

    references: tuple[Reference, ...]
    sizes: Mapping[str, tuple[float, float, float]]
    digest: str

    @classmethod
    def load(cls, root: Path) -> TaughtNames:
        """Read and check every name folder under ``root``; raises :class:`ReferenceImagesError`
        (nothing is returned half-loaded)."""
        root = Path(root)
        reading = _Reading(root, [], {}, [])
        for folder in _name_folders(root):
            reading.read_folder(folder)
        check_distinct(reading.references)
        return cls(tuple(reading.references), dict(reading.sizes),
                   canonical_json_sha256(sorted(reading.hashes), ensure_ascii=False))

    @property
    def names(self) -> tuple[str, ...]:
        """Every taught name, sorted."""
        return tuple(sorted({r.name for r in self.references}))

    def fingerprint(self) -> str:
        """SHA-256 over the names' files (relative paths and bytes): equal content, equal key."""
        return self.digest

    def fits(self, name: str, extent_m: Sequence[float] | None) -> bool:
        """Whether ``name``'s size agrees with a measured extent on the longest side (a name
        without ``size_m``, or no extent, always fits)."""
        size = self.sizes.get(name)
        if size is None or extent_m is None or len(extent_m) == 0:
            return True
        return abs(max(float(v) for v in extent_m) - size[0]) <= EXTENT_TOLERANCE * size[0]

    def scores(self, image: np.ndarray, mask: np.ndarray) -> dict[str, float]:
        """Every name's score for the masked object (its best reference)."""
        query = appearance(image, mask)
        row = np.array([similarity(query, r.appearance) for r in self.references])
        return {n: s for n, (s, _) in _best_per_name(row, self.references).items()}

    def name(self, image: np.ndarray, mask: np.ndarray,
             extent_m: Sequence[float] | None = None) -> NameVerdict:
        """The object's name when certain (floor and margin), else None with the reason."""
        mask = np.asarray(mask, dtype=bool)
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[:2] != mask.shape:
            raise ValueError(f"need an HxWx3 uint8 RGB image and an HxW mask, got "
                             f"{image.dtype} {image.shape} and {mask.shape}")
        pixels = int(mask.sum())
        if pixels < MIN_MASK_PIXELS:
            return NameVerdict(None, 0.0, None, 0.0,
                               f"mask has {pixels} pixels (< {MIN_MASK_PIXELS})")
        fitting = [n for n in self.names if self.fits(n, extent_m)]
        if not fitting:
            longest = max(float(v) for v in extent_m or (0.0,))
            return NameVerdict(None, 0.0, None, 0.0, f"no reference fits the extent (longest "
                               f"side {longest:.2f} m, ±{EXTENT_TOLERANCE:.0%})")
        scores = self.scores(image, mask)
        ranked = sorted(((n, scores[n]) for n in fitting), key=lambda x: (-x[1], x[0]))
        return _verdict(ranked)


__all__ = [
    "EXTENT_TOLERANCE",
    "MARGIN",
    "SCORE_FLOOR",
    "NameVerdict",
    "ReferenceImagesError",
    "TaughtNames",
    "appearance",
    "colour_histogram",
    "name_problem",
]
