"""Runs the real dimOS 0.0.15 on our files; executed by the dimOS reference venv's python.

Not a test module (pytest does not collect it, and dimOS is not importable from ``.venv``): the
parity tests call it as ``<dimos python> dimos_driver.py <command> ...`` and read its JSON.

- ``load DATASET``: dimOS's ``load_suite`` on a dataset; prints each case's id, prompt and image.
- ``grade DATASET REPLIES``: dimOS's ``grade_choice`` (through the loaded suite) on each reply of
  ``REPLIES`` (a JSON object case id -> reply text); prints case id -> score.
- ``generate RECORDING OUTPUT FRAMES``: dimOS's own ``generate_frames_dataset`` on a recording
  with dimOS's frame loader, a fixed author and a colour-threshold detector (no model weights).
"""

import sys

import pysqlite3  # dimOS writes tags with jsonb(), which needs a newer SQLite than Python's

sys.modules["sqlite3"] = pysqlite3

import json  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

# HSV ranges of the sample scene's colours (OpenCV hue 0-180).
_HUES = {"red": [(0, 8), (172, 180)], "green": [(45, 85)], "blue": [(100, 130)],
         "yellow": [(22, 35)]}


def _load(dataset: str) -> list[Any]:
    from dimos.evals.vqa.suite import load_suite

    return load_suite(Path(dataset))


def cmd_load(dataset: str) -> dict[str, Any]:
    """Every case dimOS's loader builds from ``dataset``."""
    return {"cases": [{"id": c.id, "inputs": c.inputs, "image": str(c.environment.path)
                       if hasattr(c.environment, "path") else None} for c in _load(dataset)]}


def cmd_grade(dataset: str, replies_file: str) -> dict[str, Any]:
    """dimOS's score of each reply (1.0 or 0.0) through the suite's own grader."""
    replies = json.loads(Path(replies_file).read_text(encoding="utf-8"))
    scores = {}
    for case in _load(dataset):
        if case.id in replies:
            outcome = SimpleNamespace(trajectory=SimpleNamespace(final_answer=replies[case.id]))
            scores[case.id] = case.grade(outcome)
    return {"scores": scores}


class _Detections(list):
    """What dimOS's families read of ``ImageDetections2D``: ``.detections`` and ``len()``."""

    @property
    def detections(self) -> list[Any]:
        return list(self)


class _ColourDetector:
    """A VlModel stand-in: boxes of connected regions of the named colour (at least 150 px)."""

    def query_detections(self, image: Any, query: str, **_: Any) -> _Detections:
        bgr = image.to_opencv() if hasattr(image, "to_opencv") else np.asarray(image.data)
        hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
        mask = np.zeros(hsv.shape[:2], np.uint8)
        for lo, hi in _HUES.get(query.split()[0].casefold(), []):
            mask |= cv2.inRange(hsv, (lo, 120, 60), (hi, 255, 255))
        count, _, stats, _ = cv2.connectedComponentsWithStats(mask)
        return _Detections(SimpleNamespace(bbox=(float(x), float(y), float(x + w), float(y + h)))
                           for x, y, w, h, area in stats[1:count] if area >= 150)


class _FixedAuthor:
    """Proposes the same detector-only questions on every frame (plus a name dimOS slugs)."""

    def propose(self, image: Any, families: Any) -> list[Any]:
        from dimos.evals.vqa.contracts import QuestionProposal

        available = {f.name for f in families}
        wanted = [("presence", ("red ball",)), ("presence", ("Blue  Box!",)),
                  ("horizontal_direction", ("red ball",)), ("object_count", ("green cylinder",)),
                  ("presence", ("purple cone",))]
        return [QuestionProposal(family=f, object_names=n) for f, n in wanted if f in available]


def cmd_generate(recording: str, output: str, frames: str) -> dict[str, Any]:
    """dimOS's generator on ``frames`` (comma-separated indices) of ``recording``."""
    from dimos.evals.vqa.generate import GenerationFrame, GenerationRequest, generate_frames_dataset
    from dimos.evals.vqa.pointcloud_frame import (
        PointCloudFrameLoader,
        PointCloudFrameUnavailableError,
    )

    indices = [int(i) for i in frames.split(",")]
    request = GenerationRequest(dataset=recording, output=Path(output), start=min(indices),
                                stop=max(indices) + 1, stride=1)
    with PointCloudFrameLoader(recording) as loader:
        def generation_frames() -> Any:
            for index in indices:
                try:
                    frame = loader.load(index)
                except PointCloudFrameUnavailableError:
                    yield GenerationFrame(index, loader.load_image(index))
                else:
                    yield GenerationFrame(index, frame.image, frame)

        result = generate_frames_dataset(
            request, generation_frames(), _FixedAuthor(), _ColourDetector(),
            model_names={"author": "fixed", "detector": "colour"})
    return {"output": str(result.output), "cases": len(result.cases)}


def main(argv: list[str]) -> None:
    """Dispatch a command and print its JSON result."""
    commands = {"load": cmd_load, "grade": cmd_grade, "generate": cmd_generate}
    print(json.dumps(commands[argv[0]](*argv[1:])))


if __name__ == "__main__":
    main(sys.argv[1:])
