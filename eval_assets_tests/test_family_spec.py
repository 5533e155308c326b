"""A family declared in one place (here, in this test module) is known everywhere: the generator,
the schemas, the scorer, the headline, the baselines and the time controls read the declaration,
and forget the family once it is unregistered."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from eval_assets.family_spec import (
    FamilySpec,
    TimeControl,
    declared,
    families,
    family,
    family_names,
    register,
)
from eval_assets.metrics.headline import family_mean
from eval_assets.prompt_controls import wording
from eval_assets.report.baselines import family_baselines
from eval_assets.schemas import spatial as spatial_schema
from eval_assets.schemas import vqa as vqa_schema
from eval_assets.schemas.spatial import SPATIAL_FAMILIES, ObjectTracks, SpatialCase, SpatialLabel
from eval_assets.scoring.families import family_scores, pooled_spatial_families
from eval_assets.scoring.inputs import PrivateDataset
from eval_assets.scoring.numeric import (
    NUMERIC,
    NumericFigures,
    NumericRow,
    NumericScores,
    case_score,
    numeric_cases,
    scored_by,
)
from eval_assets.time_controls import family_of, time_families, transform_of
from eval_assets.vqa.authors import AuthorConfig, VocabularyAuthor
from eval_assets.vqa.families import (
    Answered,
    Decision,
    DetectionEvidence,
    FrameEvidence,
    Rejected,
    decide,
)
from eval_assets.vqa.labels import read_labels
from eval_assets.vqa.spatial import build_spatial
from eval_assets.vqa.spatial.evidence import TrackIndex
from eval_assets_tests.report.builders import result, row
from eval_assets_tests.vqa.test_generate_sample import generate

WIDTHS = ("narrow", "wide")


@dataclass(frozen=True)
class BoxWidth:
    """The test's single-image rule: the one detection's box spans half the image or more."""

    name: str = "box_width"
    min_names: int = 1
    max_names: int = 1
    order_independent: bool = False

    def decide(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        (obj,) = names
        dets = ev.of(obj)
        if len(dets) != 1:
            return Rejected("no_detection", f"{len(dets)} detections of {obj!r}")
        x0, _, x1, _ = dets[0].box_xyxy
        spec = family(self.name)
        assert spec is not None
        return Answered(spec.question.format(name=obj), WIDTHS,
                        WIDTHS[int(2 * (x1 - x0) >= ev.width)], {"box_width": x1 - x0})


BOX_WIDTH = FamilySpec("box_width", "dimos", "Is the visible {name} narrow or wide?", "choice",
                       frozenset({"detections"}), BoxWidth(), WIDTHS,
                       paraphrase="Would you call the {name} you see narrow or wide?")


def _height_cases(index: TrackIndex) -> Iterator[tuple[SpatialCase, SpatialLabel]]:
    """The test's spatial rule: the camera height over the first two published frames, asked
    twice (the declared cap keeps one)."""
    frames = list(index.published[:2])
    for answer in ("0", "1.5"):
        case_id = f"spatial-camera_height_m-camera-{answer}"
        case = SpatialCase(id=case_id, images=[vqa_schema.asset_relpath(f) for f in frames],
                           question=HEIGHT.question, answer_type="number", unit="m")
        label = SpatialLabel(id=case_id, answer=answer, family=HEIGHT.name, answer_type="number",
                             unit="m", object_names=[], frame_indices=frames,
                             evidence={"tracks": []})
        yield case, label


HEIGHT = FamilySpec("camera_height_m", "spatial", "How high above the floor is the camera, in "
                    "metres?", "number", frozenset({"trajectory"}), _height_cases, unit="m",
                    cap=1, zero_rule=True, time=TimeControl(lambda a: a, repeat_frames=True))


def test_built_in_declarations_in_their_order() -> None:
    assert family_names("dimos") == (
        "presence", "horizontal_direction", "object_count", "image_coverage",
        "largest_visible_area", "object_distance", "closest_object")
    assert family_names("dimos") == vqa_schema.FAMILY_NAMES
    assert tuple(spatial_schema.SPATIAL_FAMILIES)[:7] == (
        "object_size_cm", "pair_distance_m", "camera_distance_m", "room_area_m2",
        "appearance_order", "object_count_across_frames", "relative_direction")
    assert {s.name for s in families("dimos") if "lidar" in s.needs} == {
        "object_distance", "closest_object"}
    assert {s.name for s in families() if s.zero_rule} == {"camera_displacement_m",
                                                           "path_length_m"}
    assert {s.name for s in families() if s.magnitude} == {"turn_angle_deg"}


def test_a_family_is_declared_once() -> None:
    with pytest.raises(ValueError, match="'presence' is declared twice"):
        register(FamilySpec("presence", "dimos", "?", "choice", frozenset()))
    with pytest.raises(ValueError, match="dimOS's files hold choice cases only"):
        FamilySpec("x", "dimos", "?", "number", frozenset())
    with pytest.raises(ValueError, match="a number family has no choices"):
        FamilySpec("x", "spatial", "?", "number", frozenset(), choices=("a", "b"))


def test_a_declared_single_image_family_reaches_schemas_rules_and_authors() -> None:
    names = TypeAdapter(vqa_schema.FamilyName)
    ev = FrameEvidence(frame_index=1, width=100, height=50, queried=frozenset({"chair"}),
                       detections={"chair": (DetectionEvidence((10.0, 0.0, 70.0, 20.0)),)})
    with declared(BOX_WIDTH):
        assert vqa_schema.FAMILY_NAMES[-1] == "box_width"
        assert names.validate_python("box_width") == "box_width"
        answered = decide("box_width", ["Chair"], ev)
        assert isinstance(answered, Answered)
        assert answered.question == "Is the visible chair narrow or wide?"
        assert answered.answer == "wide" and answered.choices == WIDTHS
        shape = decide("box_width", ["chair", "table"], ev)
        assert isinstance(shape, Rejected) and shape.reason == "wrong_reference_count"
        assert "box_width" in AuthorConfig().families
        proposed = VocabularyAuthor(["chair"]).propose(None, 0)
        assert [p.object_names for p in proposed if p.family == "box_width"] == [["chair"]]
        # The prompt-template control reads the family and its paraphrase back.
        case = vqa_schema.Case(id="frame-000001-chair-box_width", image="assets/frame-000001.png",
                               question=answered.question, choices=list(WIDTHS))
        paraphrased = wording(case, "paraphrase")
        assert paraphrased is not None
        assert paraphrased.text.startswith("Would you call the chair you see narrow or wide?")
    # Forgotten once unregistered: the schema's error names the families, the rule rejects.
    with pytest.raises(ValidationError, match="'box_width' is not one of"):
        names.validate_python("box_width")
    gone = decide("box_width", ["chair"], ev)
    assert isinstance(gone, Rejected) and gone.reason == "unknown_family"
    assert "box_width" not in vqa_schema.FAMILY_NAMES
    assert wording(case, "paraphrase") is None


@pytest.mark.slow
def test_the_generator_asks_a_declared_family(sample_db: Path, tmp_path: Path) -> None:
    with declared(BOX_WIDTH):
        generate(sample_db, tmp_path / "d", [3])
        labels = read_labels(tmp_path / "d")
        run = json.loads((tmp_path / "d" / "audit" / "run.json").read_text())
    asked = [lab for lab in labels if lab.family == "box_width"]
    assert asked and all(lab.answer in WIDTHS and lab.choices == list(WIDTHS) for lab in asked)
    assert all(lab.id.endswith("-box_width") for lab in asked)
    assert run["families"][-1] == "box_width" and run["cases_per_family"]["box_width"] == len(
        asked)


def _numeric_cell(family: str, pairs: list[tuple[float, float]]) -> Any:
    rows = [NumericRow(case_id=f"n{i}", family=family, unit="m", target=t, predicted=p,
                       mra=case_score(p, t, family, "m"), scored_by=scored_by(family, "m"))
            for i, (t, p) in enumerate(pairs)]
    figures = NumericFigures(n=len(rows), unparseable=0,
                             mean_relative_accuracy=sum(r.mra for r in rows) / len(rows),
                             mean_absolute_relative_error=None)
    numeric = NumericScores(**figures.model_dump(), by_family={family: figures}, rows=rows)
    # Baselines are over a ranking, which dimOS's cases make: 60 presence cases.
    cell = result("r", "vlm", [row(f"p{i}", "presence", "yes", "yes", "r", frame_index=i)
                               for i in range(60)])
    return cell.model_copy(update={"scores": {**cell.scores,
                                              NUMERIC.name: numeric.model_dump(mode="json")}})


def test_a_declared_spatial_family_reaches_generator_scorer_headline_baselines_and_controls(
        ) -> None:
    with declared(HEIGHT):
        # Generator: asked in declaration order, capped by its declaration.
        built = build_spatial(ObjectTracks(world_frame="map", tracks=[]), [4, 2, 9])
        assert [lab.id for lab in built.labels] == ["spatial-camera_height_m-camera-0"]
        assert built.cases[0].images == ["assets/frame-000002.png", "assets/frame-000004.png"]
        # A live view: bound at this module's import, it still sees the new family.
        assert SPATIAL_FAMILIES["camera_height_m"] == ("number", "m")
        # Scorer: a zero truth is scored by the declared zero rule, not refused.
        data = PrivateDataset(root=Path("."), cases={}, labels=[],
                              spatial_labels=list(built.labels))
        assert numeric_cases(data) == [("spatial-camera_height_m-camera-0", "camera_height_m",
                                        0.0, "m")]
        assert scored_by("camera_height_m", "m") == "mra_zero_rule"
        assert case_score(0.1, 0.0, "camera_height_m", "m") == 1.0
        # Headline: the family's score, pooled and in the family mean.
        cell = _numeric_cell("camera_height_m", [(0.0, 0.1), (2.0, 2.0)] * 10)
        assert family_scores(cell)["camera_height_m"].score == 1.0
        pooled = pooled_spatial_families([cell])
        assert [f.family for f in pooled] == ["camera_height_m"]
        mean = family_mean(pooled)
        assert mean is not None and mean.n_families == 1
        # Baselines: the median (0 m) scored by the family's own rule.
        baseline = {b.family: b for b in family_baselines(
            [_numeric_cell("camera_height_m", [(0.0, 0.0)] * 21 + [(2.0, 2.0)] * 19)])}
        assert baseline["camera_height_m"].frequency == pytest.approx(21 / 40)
        # Time controls: its declared entry.
        assert time_families()["camera_height_m"].answer == "length"
        assert transform_of("camera_height_m", "repeat_frames") is not None
        assert family_of("spatial-camera_height_m-camera-0") == "camera_height_m"
    with pytest.raises(ValidationError, match="'camera_height_m' is not one of"):
        SpatialLabel(id="x", answer="1", family="camera_height_m", answer_type="number",
                     object_names=[], frame_index=0, evidence={"tracks": []})
    assert scored_by("camera_height_m", "m") == "mra"
    assert "camera_height_m" not in SPATIAL_FAMILIES
    assert family_of("spatial-camera_height_m-camera-0") is None
    assert not build_spatial(ObjectTracks(world_frame="map", tracks=[]), [2, 4]).labels


@pytest.mark.parametrize("first", ["eval_assets.schemas.vqa", "eval_assets.schemas.spatial",
                                   "eval_assets.time_controls", "eval_assets.vqa.authors",
                                   "eval_assets.vqa.spatial.families"])
def test_every_family_is_known_whichever_module_is_imported_first(first: str) -> None:
    # The declarations import the schemas; the schemas read the registry when asked. A fresh
    # interpreter importing ``first`` before the declarations must still see all of them.
    code = (f"import {first}\n"
            "import eval_assets.vqa.declarations\n"
            "from eval_assets.schemas.vqa import FAMILY_NAMES\n"
            "from eval_assets.vqa.authors import AuthorConfig\n"
            "from eval_assets.time_controls import TIME_FAMILIES\n"
            "from eval_assets.family_spec import family_names\n"
            "print(len(FAMILY_NAMES), len(AuthorConfig().families), len(TIME_FAMILIES), "
            "len(family_names()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["7", "7", str(len(time_families())), str(len(family_names()))]


def test_reading_the_registry_before_the_declarations_names_the_missing_import() -> None:
    # The registry imports no declaring module (they sit above it): a process that reads it
    # without importing eval_assets.vqa.declarations is told so, never answered from a part.
    code = ("from eval_assets.schemas.spatial import SPATIAL_FAMILIES\n"
            "from eval_assets.family_spec import FamiliesNotDeclaredError\n"
            "try:\n"
            "    len(SPATIAL_FAMILIES)\n"
            "except FamiliesNotDeclaredError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert "import eval_assets.vqa.declarations first" in out.stdout
