"""Per-case blind solvability (TsT, random forest): planted leaks are found, a control family is
not, folds keep frames together, scores are byte-identical on rerun, pruning records itself."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from eval_assets.schemas.vqa import Case, Label, dumps_line
from eval_assets.vqa.bias import (
    BiasCase,
    BiasConfig,
    audit_cases,
    dataset_cases,
    frame_folds,
    iterative_bias_pruning,
    read_bias_cases,
    read_bias_summary,
    score_cases,
    template_of,
    write_bias_audit,
)

NAMES = ["red ball", "blue box", "green cylinder", "yellow cone", "white cube", "black chair"]
FRAMES = 40


def planted_cases(frames: int = FRAMES, seed: int = 3) -> tuple[list[Case], list[Label]]:
    """Per frame three cases: ``closest_object`` whose gold is always the first choice (a
    position leak), ``presence`` whose answer is "yes" exactly for one object name (a name
    leak), and ``largest_visible_area``, the control, whose gold is drawn at random."""
    rng = random.Random(seed)
    cases, labels = [], []

    def add(frame: int, family: str, question: str, choices: list[str], names: list[str],
            answer: str) -> None:
        case_id = f"frame-{frame:06d}-{family}"
        cases.append(Case(id=case_id, image=f"assets/frame-{frame:06d}.png", question=question,
                          choices=choices))
        labels.append(Label(id=case_id, answer=answer, family=family, frame_index=frame,
                            object_names=names, choices=choices, evidence={}))

    for frame in range(frames):
        names = rng.sample(NAMES, 4)
        add(frame, "closest_object", f"Which object is closest to the camera: "
            f"{', '.join(names)}?", names, names, names[0])
        other = rng.sample(NAMES, 4)
        add(frame, "largest_visible_area", f"Which object covers the largest area: "
            f"{', '.join(other)}?", other, other, rng.choice(other))
        name = rng.choice(NAMES)
        add(frame, "presence", f"Is there a {name} in the image?", ["yes", "no"], [name],
            "yes" if name == "red ball" else "no")
    return cases, labels


def write_planted(root: Path, frames: int = FRAMES) -> Path:
    """The planted cases as a dataset folder: public cases and the audit's labels."""
    cases, labels = planted_cases(frames)
    (root / "audit").mkdir(parents=True)
    (root / "cases.jsonl").write_text("".join(dumps_line(c) + "\n" for c in cases))
    (root / "audit/labels.jsonl").write_text("".join(dumps_line(lab) + "\n" for lab in labels))
    return root


def test_planted_leaks_score_high_and_are_flagged_the_control_is_not(tmp_path: Path) -> None:
    root = write_planted(tmp_path / "ds")
    audit = audit_cases(dataset_cases(root), BiasConfig())
    families = audit.summary.families
    print({f: (s.mean_bias_score, s.flagged_share, s.blind_upper_bound)
           for f, s in families.items()})
    for leak in ("closest_object", "presence"):  # position leak, name leak
        assert families[leak].n_scored == FRAMES
        assert (families[leak].mean_bias_score or 0) >= 0.85
        assert (families[leak].flagged_share or 0) >= 0.9
        assert families[leak].blind_upper_bound == 1.0
    control = families["largest_visible_area"]
    assert control.n_scored == FRAMES
    assert control.mean_bias_score is not None and control.mean_bias_score < 0.45  # chance .25
    assert control.flagged_share is not None and control.flagged_share < 0.2
    by_id = {c.id: c for c in audit.cases}
    assert [c.id for c in audit.cases] == [json.loads(line)["id"] for line in
                                           (root / "cases.jsonl").read_text().splitlines()]
    assert by_id["frame-000007-closest_object"].flagged
    assert all(c.flagged == (c.bias_score is not None and c.bias_score >= 0.8)
               for c in audit.cases)


def test_a_stricter_threshold_flags_fewer(tmp_path: Path) -> None:
    cases = dataset_cases(write_planted(tmp_path / "ds"))
    loose = audit_cases(cases, BiasConfig(threshold=0.3, trees=30))
    strict = audit_cases(cases, BiasConfig(threshold=0.99, trees=30))
    assert sum(c.flagged for c in strict.cases) < sum(c.flagged for c in loose.cases)
    assert [c.bias_score for c in strict.cases] == [c.bias_score for c in loose.cases]


def test_audit_files_are_byte_identical_on_rerun(tmp_path: Path) -> None:
    root = write_planted(tmp_path / "ds", frames=20)
    texts = []
    for name in ("a", "b"):
        out = tmp_path / name
        write_bias_audit(out, audit_cases(dataset_cases(root), BiasConfig(prune=True, trees=30)))
        texts.append(((out / "audit/bias.jsonl").read_bytes(),
                      (out / "audit/bias.json").read_bytes()))
    assert texts[0] == texts[1]
    assert read_bias_cases(tmp_path / "a") is not None
    summary = read_bias_summary(tmp_path / "a")
    assert summary is not None and summary.pruning is not None
    assert read_bias_cases(tmp_path / "missing") is None


def test_folds_keep_a_frames_cases_together_balanced_and_seeded() -> None:
    frames = [f for f in range(23) for _ in range(1 + f % 3)]
    split = frame_folds(frames, 5, seed=0)
    assert split is not None
    folds, k = split
    assert k == 5
    for frame in set(frames):
        assert len({fold for fold, f in zip(folds, frames, strict=True) if f == frame}) == 1
    sizes = [folds.count(i) for i in range(k)]
    assert max(sizes) - min(sizes) <= 3  # balanced by cases, not by frames
    assert frame_folds(frames, 5, seed=0) == split
    assert frame_folds(frames, 5, seed=1) != split
    # Fewer frames than k: one fold per frame; one frame: no fold can hold a case out.
    three = frame_folds([4, 4, 9, 12], 5, seed=0)
    assert three is not None and three[1] == 3
    assert frame_folds([7, 7, 7], 5, seed=0) is None


def _case(i: int, family: str, frame: int, answer: str = "yes") -> BiasCase:
    return BiasCase(id=f"c{i}", family=family, kind="choice", question="Is it there?",
                    choices=("yes", "no"), object_names=("red ball",), frame=frame, n_frames=1,
                    unit=None, answer=answer)


def test_no_score_where_no_fold_can_hold_out_or_the_family_was_never_trained_on() -> None:
    one_frame = [_case(i, "presence", frame=3) for i in range(6)]
    small = BiasConfig(trees=20)
    result = score_cases(one_frame, small)
    assert set(result.scores.values()) == {None} and result.folds == {"choice": None}
    # A family of one case is scored by no one: the forest never saw its answers.
    mixed = [_case(i, "presence", frame=i, answer="yes" if i % 2 else "no") for i in range(10)]
    mixed.append(_case(10, "lonely", frame=4))
    result = score_cases(mixed, small)
    assert result.scores["c10"] is None
    assert all(result.scores[f"c{i}"] is not None for i in range(10))
    audit = audit_cases(mixed, small)
    lonely = audit.summary.families["lonely"]
    assert (lonely.n, lonely.n_scored, lonely.mean_bias_score, lonely.flagged_share) == \
        (1, 0, None, None)
    assert not next(c for c in audit.cases if c.id == "c10").flagged


def test_numeric_cases_score_the_mra_of_a_blind_regressor() -> None:
    # The answer is the number the question states, doubled: learnable without pixels.
    cases = [BiasCase(id=f"n{i}", family="object_size_cm", kind="number",
                      question=f"The box is {10 + i} cm wide; how long is it?", choices=(),
                      object_names=("box",), frame=i, n_frames=2, unit="cm",
                      answer=str(2 * (10 + i))) for i in range(60)]
    result = score_cases(cases, BiasConfig())
    scores = [s for s in result.scores.values() if s is not None]
    assert len(scores) == 60 and sum(scores) / 60 > 0.8
    assert all(0.0 <= s <= 1.0 for s in scores)
    with pytest.raises(ValueError, match="only a motion distance may be 0"):
        score_cases([*cases[:5], BiasCase(**{**cases[5].__dict__, "answer": "0"})],
                    BiasConfig())


def test_motion_numbers_of_zero_and_negative_angles_are_scored_by_their_unit() -> None:
    # A stop (displacement 0, metres) and bearings either side (degrees): the blind forest reads
    # the frame count; scores stay in [0, 1] and a 0 or a -90 does not stop the audit.
    cases = [BiasCase(id=f"d{i}", family="camera_displacement_m", kind="number",
                      question="How far?", choices=(), object_names=(), frame=i,
                      n_frames=2 + i % 2, unit="m", answer="0.00" if i % 2 else "1.50")
             for i in range(30)]
    cases += [BiasCase(id=f"e{i}", family="egocentric_direction_deg", kind="number",
                       question="Which direction?", choices=(), object_names=(), frame=i,
                       n_frames=2 + i % 2, unit="deg", answer="-90" if i % 2 else "90")
              for i in range(30)]
    result = score_cases(cases, BiasConfig())
    scores = [s for s in result.scores.values() if s is not None]
    assert len(scores) == 60 and all(0.0 <= s <= 1.0 for s in scores)
    # Learnable from the frame count: the blind regressor gets most of them.
    assert sum(scores) / 60 > 0.8


def test_iterative_bias_pruning_drops_the_leak_down_to_the_floor(tmp_path: Path) -> None:
    cases = dataset_cases(write_planted(tmp_path / "ds"))
    config = BiasConfig(prune=True, prune_floor=8, trees=40)
    kept, result, pruning = iterative_bias_pruning(cases, config)
    left = {f: sum(1 for c in kept if c.family == f) for f in
            ("closest_object", "presence", "largest_visible_area")}
    print(left, pruning.rounds, pruning.stopped)
    assert left["closest_object"] >= 8 and left["presence"] >= 8
    assert left["closest_object"] < FRAMES // 2 and left["presence"] < FRAMES // 2
    assert left["largest_visible_area"] >= FRAMES - 8
    assert pruning.pruned and all(p.bias_score >= 0.8 and "0.8" in p.why
                                  for p in pruning.pruned)
    assert {p.id for p in pruning.pruned}.isdisjoint(c.id for c in kept)
    assert set(result.scores) == {c.id for c in kept}
    assert pruning.rounds[0].cases == len(cases)
    assert pruning.stopped == "no case flagged" or pruning.stopped.startswith(("floor", "round"))
    # A floor at every family's size prunes nothing and says so.
    _, _, none = iterative_bias_pruning(cases, BiasConfig(prune=True, prune_floor=FRAMES,
                                                          trees=20))
    assert none.pruned == [] and none.stopped.startswith("floor reached")


def test_template_cuts_names_and_numbers() -> None:
    assert template_of("Is the Red Ball 2.5 m from the red ball box?", ["red ball", "red"]) \
        == "is the <obj> <num> m from the <obj> box?"


DISTANCES = ["under 1 meter", "1 to under 2 meters", "2 to under 3 meters", "3 meters or more"]


def prior_cases(frames: int = 50, seed: int = 1) -> list[BiasCase]:
    """Planted priors, drawn independently of every feature (no case-level leak): per frame an
    ``object_distance`` case whose gold is "3 meters or more" 60 % of the time (four choices),
    and a ``turn_direction`` control spread evenly over three; plus ``relative_direction``, 8
    cases of which 3 are alike (four choices): too few to call a prior."""
    rng = random.Random(seed)
    out = []
    for frame in range(frames):
        gold = DISTANCES[3] if rng.random() < 0.6 else rng.choice(DISTANCES[:3])
        out.append(BiasCase(id=f"d{frame}", family="object_distance", kind="choice",
                            question="How far is the box?", choices=tuple(DISTANCES),
                            object_names=("box",), frame=frame, n_frames=1, unit=None,
                            answer=gold))
        out.append(BiasCase(id=f"t{frame}", family="turn_direction", kind="choice",
                            question="Which way did the camera turn?",
                            choices=("left", "right", "no turn"), object_names=(),
                            frame=frame, n_frames=2, unit=None,
                            answer=("left", "right", "no turn")[frame % 3]))
    for i, gold in enumerate(["front-left"] * 3 + ["front-right", "back-left", "back-right",
                                                    "back-left", "front-right"]):
        out.append(BiasCase(id=f"r{i}", family="relative_direction", kind="choice",
                            question="Where is it?", choices=("front-left", "front-right",
                                                              "back-left", "back-right"),
                            object_names=(), frame=i, n_frames=2, unit=None, answer=gold))
    return out


def test_a_family_prior_is_flagged_though_no_case_reaches_the_threshold() -> None:
    audit = audit_cases(prior_cases(), BiasConfig(trees=40))
    families = audit.summary.families
    distance = families["object_distance"]
    # No case is flagged: the forest can only learn the 60 % prior, under 0.8.
    assert distance.flagged == 0 and (distance.mean_bias_score or 1) < 0.8
    assert distance.majority_answer == "3 meters or more" and distance.chance == 0.25
    assert distance.prior_score is not None and distance.prior_score > 0.45
    assert distance.prior_flagged
    # The even control and the tiny family are not prior-flagged.
    assert not families["turn_direction"].prior_flagged
    assert families["turn_direction"].prior_score == pytest.approx(0.34)
    small = families["relative_direction"]
    assert small.prior_score == pytest.approx(3 / 8) and not small.prior_flagged
    assert audit.summary.prior_margin == 0.10


def test_the_audit_reruns_on_an_edited_dataset_by_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from eval_assets.cli import app

    root = write_planted(tmp_path / "ds", frames=30)
    # Edit the dataset: drop the control family's cases from the public file.
    lines = (root / "cases.jsonl").read_text().splitlines()
    kept = [line for line in lines if "largest_visible_area" not in line]
    (root / "cases.jsonl").write_text("".join(line + "\n" for line in kept))
    result = CliRunner().invoke(app, ["vqa", "audit", str(root), "--bias-threshold", "0.75"])
    assert result.exit_code == 0, result.output
    print(result.output)
    cases = read_bias_cases(root)
    summary = read_bias_summary(root)
    assert cases is not None and summary is not None
    assert len(cases) == len(kept) == 60 and summary.config.threshold == 0.75
    assert set(summary.families) == {"closest_object", "presence"}
    # The name leak is flagged case by case; presence is also mostly "no" (1 name in 6 says
    # yes): prior-flagged, and the command says so.
    assert summary.families["presence"].prior_flagged
    assert "presence:" in result.output and "PRIOR-FLAGGED" in result.output
    assert "guessable from the answer prior" in result.output
    assert f"{len(kept)} cases audited" in result.output
    # Rerun with the same options: the same files, byte for byte; a non-dataset is refused.
    before = (root / "audit/bias.json").read_bytes()
    assert CliRunner().invoke(app, ["vqa", "audit", str(root)]).exit_code == 0
    assert (root / "audit/bias.json").read_bytes() == before
    refused = CliRunner().invoke(app, ["vqa", "audit", str(tmp_path)])
    assert refused.exit_code == 2 and "not a dataset folder" in refused.output
