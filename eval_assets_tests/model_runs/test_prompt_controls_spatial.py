"""The prompt controls on spatial and motion cases: every family's three templates from its one
declaration, the frames sent as a spatial case is sent (parts, or a mosaic for an endpoint that
takes fewer images), a number family's structured answer as ``{"value", "unit"}``, and each case
scored by its family's own rule (choice, MRA with the zero rule, mean angular accuracy), with
the Kendall τ over the spatial families in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval_assets.family_spec import families
from eval_assets.local_models.random_choice import RandomChoiceModel
from eval_assets.local_models.response_format import (
    UnsupportedResponseFormat,
    parse_response_format,
)
from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.model_runs.client import open_model
from eval_assets.model_runs.runner import run_model
from eval_assets.perception import PerceptionConfig
from eval_assets.prompt_controls import (
    number_schema,
    read_question,
    read_structured_number,
    spatial_wording,
)
from eval_assets.report.metric_sections import render_table
from eval_assets.schemas.predictions import ModelSpec
from eval_assets.schemas.results import NotMeasured as NotMeasuredType
from eval_assets.schemas.spatial import RELATIVE_DIRECTIONS, SpatialCase, SpatialLabel
from eval_assets.schemas.vqa import Case, Label
from eval_assets.schemas.vqa_prompt import parse_choices
from eval_assets.scoring.inputs import PrivateDataset, load_private_dataset, load_run
from eval_assets.scoring.prompt_controls import (
    REPEATS,
    STRUCTURED,
    TEMPLATES,
    score_repeats,
    score_structured,
    score_templates,
)
from eval_assets.scoring.spec import ScoringInputs
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.families import QUESTIONS
from eval_assets.vqa.generate import generate_from_recording
from eval_assets.vqa.spatial.wording import ask
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply, message_text
from eval_assets_tests.model_runs.helpers import write_png
from eval_assets_tests.model_runs.test_prompt_controls import _cell
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl

LEAD = "These images are frames of one video, in time order. "
# (id, family, fields, frames shown, unit, gold, choices): questions in the declared wording.
ROWS: tuple[tuple[str, str, dict[str, Any], tuple[int, ...], str | None, str,
                  list[str] | None], ...] = (
    ("size", "object_size_cm", {"name": "chair"}, (0,), "cm", "200", None),
    ("pair", "pair_distance_m", {"name": "chair", "other": "table"}, (0, 1), "m", "2", None),
    ("disp", "camera_displacement_m", {}, (0, 2), "m", "2", None),
    ("turn", "turn_angle_deg", {}, (0, 3), "deg", "2", None),
    ("count", "object_count_across_frames", {"name": "chair"}, (0, 1, 2), None, "2", None),
    ("reldir", "relative_direction", {"k": 1, "name": "chair"}, (0, 1), None, "front-left",
     list(RELATIVE_DIRECTIONS)),
    ("turndir", "turn_direction", {}, (0, 3), None, "right", ["left", "right", "no turn"]),
    ("route", "route_sequence", {}, (0, 1, 2), None, "forward, turn left",
     ["forward, turn left", "turn left, forward"]),
)


def _spatial_dataset(root: Path) -> tuple[Case, Label, list[SpatialCase], list[SpatialLabel]]:
    """One dimOS presence case (gold: yes) and a spatial case of each row."""
    root.mkdir(parents=True)
    images = [f"assets/frame-{i:06d}.png" for i in range(4)]
    for i, image in enumerate(images):
        write_png(root / image, seed=i)
    dimos = Case(id="d-presence", image=images[0], question=QUESTIONS["presence"].format(
        name="chair"), choices=["yes", "no"])
    (root / "cases.jsonl").write_text(dimos.model_dump_json() + "\n")
    label = Label(id=dimos.id, answer="yes", family="presence", frame_index=0,
                  object_names=["chair"], choices=["yes", "no"], evidence={})
    cases, labels = [], []
    for suffix, family, fields, shown, unit, gold, choices in ROWS:
        lead = LEAD if len(shown) > 1 and family != "pair_distance_m" else ""
        number = choices is None
        cases.append(SpatialCase(
            id=f"sp-{suffix}", images=[images[i] for i in shown],
            question=lead + ask(family, **fields), answer_type="number" if number else "choice",
            choices=choices, unit=unit))
        names = [v for k, v in fields.items() if k in ("name", "other")]
        labels.append(SpatialLabel(
            id=f"sp-{suffix}", answer=gold, family=family,
            answer_type="number" if number else "choice", unit=unit, choices=choices,
            object_names=names, frame_indices=list(shown), evidence={"tracks": [
                {"name": name, "center_world": [1.0, 0.0, 0.5]} for name in names]}))
    (root / "spatial_cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    return dimos, label, cases, labels


def _fake(body: dict[str, Any]) -> Reply:
    """Lettered options: B. A number asked on an 'Answer:' line: 'Answer: 4'. A repeat: seed 1
    answers 1 (or the second choice), the others 2 (or the first). Else the first choice, or 2;
    the count question free gets words (unparseable)."""
    text = message_text(body)
    choices = parse_choices(text)
    if "Options:" in text:
        return Reply("B")
    if "'Answer: <number>" in text:
        return Reply("Answer: 4")
    if "seed" in body:
        one = body["seed"] == 1
        return Reply((choices[1] if one else choices[0]) if choices else ("1" if one else "2"))
    if choices:
        return Reply(choices[0])
    if "distinct" in text or "How many different" in text:
        return Reply("a few of them")
    return Reply("2")


def test_every_family_is_declared_with_a_paraphrase_read_back_from_its_own_wording() -> None:
    for spec in families():
        assert spec.paraphrase is not None, spec.name
        assert spec.paraphrase != spec.question
    for suffix, family, fields, shown, unit, _, choices in ROWS:
        case = SpatialCase(id=suffix, images=["assets/a.png"] * len(shown),
                           question=LEAD + ask(family, **fields),
                           answer_type="number" if choices is None else "choice",
                           choices=choices, unit=unit)
        found = read_question(case.question)
        assert found is not None and found.family == family and found.lead == LEAD
        assert found.fields == {k: str(v) for k, v in fields.items()}
        shown_as = [spatial_wording(case, t) for t in ("record", "paraphrase", "format")]
        assert all(w is not None for w in shown_as)
        record, para, fmt = shown_as
        assert record is not None and para is not None and fmt is not None
        assert record.question == case.question and para.question.startswith(LEAD)
        assert len({record.question, para.question}) == 2  # a paraphrase asks in other words
        assert all(str(v) in para.question for v in fields.values())
        assert fmt.style == ("answer_line" if choices is None else "lettered")
    # Another generator's question (not in the declared wording) has no other template.
    odd = SpatialCase(id="x", images=["assets/a.png"], question="How big is it? [x]",
                      answer_type="number", unit="cm")
    assert read_question(odd.question) is None and spatial_wording(odd, "paraphrase") is None


def test_the_number_schema_is_served_and_read_with_its_unit() -> None:
    schema = number_schema("m")
    parsed = parse_response_format(schema)
    assert parsed is not None and [f.kind for f in parsed.fields] == ["number", "enum"]
    reply = RandomChoiceModel(seed=1).complete([{"role": "user", "content": "How far?"}], 20,
                                               schema)
    value = json.loads(reply.text)
    assert set(value) == {"value", "unit"} and value["unit"] == "m"
    assert 0.0 <= value["value"] <= 10.0
    assert read_structured_number(reply.text, "m") == value["value"]
    assert read_structured_number('{"value": 3, "unit": "cm"}', "m") is None  # another unit
    assert read_structured_number('{"value": "3", "unit": "m"}', "m") is None  # not a number
    assert read_structured_number('{"value": 7}', None) == 7.0  # a count has no unit
    assert read_structured_number("3 m", "m") is None
    bounded = {"type": "json_schema", "json_schema": {"name": "n", "schema": {
        "type": "object", "properties": {"v": {"type": "number", "minimum": 5, "maximum": 6}}}}}
    for seed in range(5):
        v = json.loads(RandomChoiceModel(seed=seed).complete(
            [{"role": "user", "content": "?"}], 8, bounded).text)["v"]
        assert 5 <= v <= 6
    with pytest.raises(UnsupportedResponseFormat, match="minimum 6 is above maximum 5"):
        parse_response_format({"type": "json_schema", "json_schema": {"name": "n", "schema": {
            "type": "object", "properties": {"v": {"type": "number", "minimum": 6,
                                                   "maximum": 5}}}}})


def test_spatial_cases_are_asked_in_every_control_and_scored_by_their_rule(
        tmp_path: Path) -> None:
    root = tmp_path / "ds"
    dimos, label, cases, labels = _spatial_dataset(root)
    out = tmp_path / "run"
    options: dict[str, Any] = dict(describe=False, rotations=False, flips=False,
                                   time_flips=False, repeat_frames=False, templates=True,
                                   repeats=3, repeat_temperature=0.8, structured=True)
    with OpenAICompatibleServer(_fake, enforce_schema=True, max_images=2) as srv, \
            client_for(srv.base_url, max_tokens=32) as client:
        first = run_model(root, client, out, **options)
        requests = [r.body for r in srv.requests]
        again = run_model(root, client, out, **options)
        assert again.calls_made == 0 and len(srv.requests) == len(requests)
    n = len(cases) + 1
    assert first.calls_made == n + 2 * n + 3 * n + n
    assert len(read_jsonl(out / "templates.jsonl")) == 2 * n
    # A case of three frames goes as one labelled mosaic to an endpoint taking two images.
    for body in requests:
        images = [p for m in body["messages"] if isinstance(m["content"], list)
                  for p in m["content"] if p.get("type") == "image_url"]
        text = message_text(body)
        assert len(images) == (1 if "tiled in one image" in text else
                               int(text.split("These are ")[1].split(" ")[0])
                               if "These are " in text else 1)
    formats = [b["response_format"]["json_schema"]["schema"] for b in requests
               if "response_format" in b]
    number_formats = [f for f in formats if "value" in f["properties"]]
    assert len(number_formats) == 5 and len(formats) == n
    assert sorted(f["properties"]["unit"]["enum"][0] for f in number_formats
                  if "unit" in f["properties"]) == ["cm", "deg", "m", "m"]

    data = PrivateDataset(root=root, cases={dimos.id: dimos}, labels=[label],
                          spatial_cases={c.id: c for c in cases}, spatial_labels=labels)
    inputs = ScoringInputs(recording="rec", model="m", data=data, run=load_run(out),
                           run_dir=out, out_dir=out / "scores")
    templates = score_templates(inputs)
    assert not isinstance(templates, NotMeasuredType)
    fam = {f: s.accuracy for f, s in templates.by_family.items()}
    # Record and paraphrase: "2" / the first choice; format: "Answer: 4" / B.
    assert fam["object_size_cm"] == {"record": 0.0, "paraphrase": 0.0, "format": 0.0}  # 2 cm
    assert fam["pair_distance_m"] == {"record": 1.0, "paraphrase": 1.0,
                                      "format": mean_relative_accuracy(4, 2)}
    assert fam["turn_angle_deg"] == {"record": 1.0, "paraphrase": 1.0, "format": 1.0}  # 2 deg off
    assert fam["relative_direction"] == {"record": 1.0, "paraphrase": 1.0, "format": 0.0}
    assert fam["turn_direction"] == {"record": 0.0, "paraphrase": 0.0, "format": 1.0}
    assert fam["presence"] == {"record": 1.0, "paraphrase": 1.0, "format": 0.0}
    assert fam["object_count_across_frames"]["record"] == 0.0  # "a few": unparseable
    assert templates.overall.n == n

    repeats = score_repeats(inputs)
    assert not isinstance(repeats, NotMeasuredType)
    pair = repeats.by_family["pair_distance_m"]  # 2, 1, 2 against 2: the median votes 2
    assert (pair.consistency, pair.majority_accuracy) == (0.0, 1.0)
    assert pair.expected_accuracy == pytest.approx((2 + mean_relative_accuracy(1, 2)) / 3)
    assert repeats.by_family["relative_direction"].majority_accuracy == 1.0

    structured = score_structured(inputs)
    assert not isinstance(structured, NotMeasuredType)
    count = structured.by_family["object_count_across_frames"]
    assert (count.free_parse_failure, count.schema_parse_failure) == (1.0, 0.0)
    assert count.schema_accuracy == 1.0  # the fake server's number is 2.0, the gold 2
    assert structured.by_family["object_size_cm"].schema_accuracy == 0.0  # 2 cm vs 200
    assert structured.overall.schema_not_answered == 0
    assert all(r.schema_parsed for r in structured.rows)
    records = read_jsonl(out / "structured.jsonl")
    assert all(r["choices"] is None for r in records if r["case_id"] in {
        "sp-size", "sp-pair", "sp-disp", "sp-turn", "sp-count"})

    # Two models (the second reads the templates the other way round): the report's τ lines
    # cover all families and the spatial ones alone.
    flipped = templates.model_copy(update={"rows": [
        r.model_copy(update={"score": None if r.score is None else 1 - r.score})
        for r in templates.rows]})
    cells = [_cell("a", {TEMPLATES.name: templates, REPEATS.name: repeats,
                         STRUCTURED.name: structured}),
             _cell("b", {TEMPLATES.name: flipped})]
    assert TEMPLATES.section is not None
    html = render_table(TEMPLATES.section.build(cells))
    assert "spatial families" in html and "(2 models)" in html and "MRA" in html
    assert "angular" in html
    assert TEMPLATES.pool is not None
    pooled = TEMPLATES.pool(cells[:1])
    assert pooled["template_n"] == n and set(pooled) == {c.name for c in TEMPLATES.columns}





@pytest.mark.slow
def test_a_dataset_generated_from_the_synthesized_sample_gets_every_control_per_spatial_family(
        sample_db: Path, tmp_path: Path) -> None:
    """The real chain: the bundled synthesized recording's dataset (every frame), the local
    random model over HTTP, every spatial family the generator asked in all three templates, and
    its number families' schema honoured (no parse failure with it, every one without)."""
    root = tmp_path / "ds"
    config = PerceptionConfig()
    generate_from_recording(sample_db, root, list(range(24)), AuthorConfig(),
                            config.build_detector(), config.build_segmenter())
    spatial = [SpatialCase.model_validate_json(line) for line in
               (root / "spatial_cases.jsonl").read_text().splitlines() if line.strip()]
    asked = {c.answer_type for c in spatial}
    assert asked == {"choice", "number"}  # the sample gives both kinds
    out = tmp_path / "run"
    spec = ModelSpec.model_validate({"name": "random", "serve": "random", "seed": 0})
    with open_model(spec) as client:
        run_model(root, client, out, describe=False, templates=True, repeats=2,
                  structured=True, prompt_control_cases=3)
    data = load_private_dataset(root)
    inputs = ScoringInputs(recording="sample", model="random", data=data, run=load_run(out),
                           run_dir=out, out_dir=out / "scores")
    templates, repeats, structured = (score_templates(inputs), score_repeats(inputs),
                                      score_structured(inputs))
    assert not isinstance(templates, NotMeasuredType)
    assert not isinstance(repeats, NotMeasuredType)
    assert not isinstance(structured, NotMeasuredType)
    families = {c.id: read_question(c.question) for c in spatial}
    assert all(found is not None for found in families.values())  # all in declared wording
    generated = {found.family for found in families.values() if found is not None}
    for family in generated:
        assert templates.by_family[family].n >= 1, family
        assert repeats.by_family[family].n >= 1, family
        s = structured.by_family[family]
        assert s.schema_parse_failure == 0.0 and s.schema_not_answered == 0, family
    numbers = {label.family for label in data.spatial_labels if label.answer_type == "number"}
    for family in numbers & generated:
        # The random model's free text is a sentence without a number; the schema's is one.
        assert structured.by_family[family].free_parse_failure == 1.0, family


def test_an_unknown_template_name_is_refused_not_taken_for_the_paraphrase() -> None:
    case = SpatialCase(id="c", images=["assets/a.png"], question=ask("path_length_m"),
                       answer_type="number", unit="m")
    with pytest.raises(ValueError, match="now 'format'"):
        spatial_wording(case, "lettered")  # type: ignore[arg-type]
