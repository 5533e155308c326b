"""The prompt controls end to end: the templates built from public text only, the subset drawn
per family, the calls made (temperature and seed per repeat, the JSON schema where the endpoint
enforces one), journalled and resumed by content, scored, pooled and shown in the report with
Kendall's τ; first through the fake server's quirks, then through the local random model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import kendalltau
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.local_models.random_choice import RandomChoiceModel
from eval_assets.metrics.prompt_controls import (
    RepeatRow,
    kendall_tau,
    majority_choice,
    median,
    repeat_stats,
    tau_pairs,
)
from eval_assets.model_runs.client import open_model
from eval_assets.model_runs.runner import run_model
from eval_assets.prompt_controls import question_family, read_structured, selected, wording
from eval_assets.report.metric_sections import metric_sections, render_table
from eval_assets.schemas.predictions import ModelSpec
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.schemas.vqa import Case, Label
from eval_assets.schemas.vqa_prompt import lettered_text, parse_choices, parse_lettered
from eval_assets.scoring.inputs import PrivateDataset, load_run
from eval_assets.scoring.prompt_controls import (
    REPEATS,
    STRUCTURED,
    TEMPLATES,
    score_repeats,
    score_structured,
    score_templates,
)
from eval_assets.scoring.spec import ScoringInputs
from eval_assets.scoring.vqa import VQA
from eval_assets.vqa.families import QUESTIONS
from eval_assets_tests.fakes.openai_server import (
    OpenAICompatibleServer,
    Reply,
    message_text,
)
from eval_assets_tests.model_runs.helpers import CANARY, ONE_CALL_PER_CASE, write_png
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl

DIRECTIONS = ["left", "center", "right"]
YES_NO = ["yes", "no"]


def _dataset(root: Path, n: int = 3) -> tuple[Path, list[Case], list[Label]]:
    """``n`` presence and ``n`` direction cases in dimOS's wording, one image each; the private
    labels beside them carry a canary that must never reach a request."""
    root.mkdir(parents=True)
    cases, labels = [], []
    for i in range(n):
        image = f"assets/frame-{i:06d}.png"
        write_png(root / image, seed=i)
        for family, choices, answer in (("presence", YES_NO, "yes"),
                                        ("horizontal_direction", DIRECTIONS, "left")):
            case = Case(id=f"frame-{i:06d}-red-box-{family}", image=image,
                        question=QUESTIONS[family].format(name="red box"), choices=choices)
            cases.append(case)
            labels.append(Label(id=case.id, answer=answer, family=family, frame_index=i,
                                object_names=["red box"], choices=choices,
                                evidence={"secret": CANARY}))
    (root / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    (root / "labels.jsonl").write_text("".join(
        json.dumps({"id": lab.id, "answer": lab.answer, "secret": CANARY}) + "\n"
        for lab in labels))
    return root, cases, labels


def _inputs(root: Path, run_dir: Path, cases: list[Case], labels: list[Label],
            model: str = "m") -> ScoringInputs:
    data = PrivateDataset(root=root, cases={c.id: c for c in cases}, labels=labels)
    return ScoringInputs(recording="rec", model=model, data=data, run=load_run(run_dir),
                         run_dir=run_dir, out_dir=run_dir / "scores")


def _cell(model: str, scores: dict[str, Any]) -> CellScores:
    return CellScores(recording="rec", model=model, dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=1, succeeded=1, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores={k: v.model_dump(mode="json") for k, v in scores.items()})


# --- the templates and the draw, from public text -------------------------------------------

def test_each_family_is_read_back_from_dimos_wording_and_asked_three_ways() -> None:
    case = Case(id="c", image="a.png", question=QUESTIONS["horizontal_direction"].format(
        name="red box"), choices=DIRECTIONS)
    assert question_family(case.question) == ("horizontal_direction", "red box")
    record, para, lettered = (wording(case, t) for t in ("record", "paraphrase", "format"))
    assert record is not None and para is not None and lettered is not None
    assert record.text.startswith(case.question) and '["left", "center", "right"]' in record.text
    assert "red box" in para.text and case.question not in para.text
    assert '["left", "center", "right"]' in para.text  # the same choices line
    assert "\nA) left\nB) center\nC) right\n" in lettered.text and lettered.lettered
    assert question_family(QUESTIONS["closest_object"]) == ("closest_object", None)
    # A question in no family's wording (another generator's) has no other template.
    other = case.model_copy(update={"question": case.question + " [marker]"})
    assert question_family(other.question) is None and wording(other, "paraphrase") is None
    assert wording(other, "record") is not None


def test_lettered_options_are_read_back_only_under_their_header() -> None:
    text = lettered_text("Which?", DIRECTIONS)
    assert parse_lettered(text) == [("A", "left"), ("B", "center"), ("C", "right")]
    assert parse_choices(text) is None  # not mistaken for the record template
    assert parse_lettered("Score it.\nA) good\nB) bad") is None  # a judge's lines: no header
    reply = RandomChoiceModel(seed=3).complete(
        [{"role": "user", "content": text}], max_tokens=8)
    assert reply.text in {"A", "B", "C"}


def test_the_subset_is_drawn_per_family_by_case_id(tmp_path: Path) -> None:
    _, cases, _ = _dataset(tmp_path / "ds", n=5)
    two = selected(cases, "templates", 2)
    families = [question_family(c.question)[0] for c in two]  # type: ignore[index]
    assert sorted(families) == ["horizontal_direction"] * 2 + ["presence"] * 2
    assert two == selected(list(reversed(cases)), "templates", 2)[::-1]  # not order-dependent
    assert selected(cases, "templates", 100) == cases
    with pytest.raises(ValueError, match="prompt_control_cases"):
        selected(cases, "templates", 0)


def test_kendall_tau_is_scipys_tau_b_on_fixed_vectors() -> None:
    for x, y in (([0.9, 0.5, 0.7, 0.2], [0.8, 0.4, 0.6, 0.3]),
                 ([0.9, 0.5, 0.7, 0.2], [0.2, 0.7, 0.5, 0.9]),
                 ([0.5, 0.5, 0.7, 0.2, 0.1], [0.3, 0.6, 0.6, 0.2, 0.4]),
                 ([1, 2, 3], [1, 3, 2])):
        assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert kendall_tau([1, 1, 1], [1, 2, 3]) is None  # scipy: nan
    assert tau_pairs({"a": {"record": 1.0, "paraphrase": 0.5, "format": 0.2}})[0][2] is None


def _choice_row(case_id: str, answer: str, choices: list[str | None]) -> RepeatRow:
    vote = majority_choice(choices)
    return RepeatRow(case_id=case_id, family="f", recording="r", answers=choices,
                     scores=[float(c == answer) for c in choices],
                     vote_score=float(vote == answer))


def test_repeat_stats_follow_lmms_evals_definitions() -> None:
    rows = [_choice_row("a", "yes", ["yes", "yes", "yes"]),
            _choice_row("b", "yes", ["yes", "no", "no"]),
            _choice_row("c", "no", ["no", None, "yes"]),  # tie: no majority
            _choice_row("d", "no", ["no"])]
    assert majority_choice(["no", None, "yes"]) is None
    s = repeat_stats(rows, 3)
    assert (s.n, s.consistency) == (3, pytest.approx(1 / 3))
    assert s.expected_accuracy == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    assert s.majority_accuracy == pytest.approx(1 / 3)
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([1.0, 4.0]) == 2.5 and median([]) is None
    assert read_structured('{"answer": "center"}', DIRECTIONS) == "center"
    assert read_structured("center", DIRECTIONS) is None
    assert read_structured('{"answer": "up"}', DIRECTIONS) is None


# --- through the fake server: temperature, seed, schema, the structured-output quirk -------

def _fake_model(body: dict[str, Any]) -> Reply:
    """Answers free text wordily (unparseable), lettered options by letter, and a repeat by its
    seed: seed 0 and 2 say 'yes', seed 1 'no'. (A schema, the server enforces.)"""
    text = message_text(body)
    if "Options:" in text:
        return Reply("A")
    if "seed" in body:
        return Reply("no" if body["seed"] == 1 else "yes")
    return Reply("I would say it is the first one")


def test_the_controls_are_asked_journalled_resumed_and_scored(tmp_path: Path) -> None:
    root, cases, labels = _dataset(tmp_path / "ds")
    out = tmp_path / "run"
    options: dict[str, Any] = dict(describe=False, max_concurrency=2, templates=True,
                                   repeats=3, repeat_temperature=0.8, structured=True,
                                   prompt_control_cases=2)
    with OpenAICompatibleServer(_fake_model, enforce_schema=True) as srv, \
            client_for(srv.base_url) as client:
        first = run_model(root, client, out, **options)
        requests = [r.body for r in srv.requests]
        again = run_model(root, client, out, **options)
        assert again.calls_made == 0 and len(srv.requests) == len(requests)
    asked = 2 * 2  # two cases per family, two families
    assert len(read_jsonl(out / "templates.jsonl")) == 2 * asked
    assert len(read_jsonl(out / "repeats.jsonl")) == 3 * asked
    structured = read_jsonl(out / "structured.jsonl")
    assert len(structured) == asked
    # Raw and extracted answers are both kept.
    assert all(json.loads(r["raw_response"])["answer"] == r["choice"] for r in structured)
    repeats = [b for b in requests if "seed" in b]
    assert sorted({b["seed"] for b in repeats}) == [0, 1, 2]
    assert {b["temperature"] for b in repeats} == {0.8}
    assert {b["temperature"] for b in requests if "seed" not in b} == {0.0}
    assert all(CANARY not in json.dumps(b) for b in requests)  # nothing private sent
    assert first.calls_made == len(cases) + 2 * asked + 3 * asked + asked
    assert sorted(b["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"]
                  for b in requests if "response_format" in b) == [DIRECTIONS] * 2 + [YES_NO] * 2

    inputs = _inputs(root, out, cases, labels)
    templates = score_templates(inputs)
    assert not isinstance(templates, NotMeasured)
    # Free text is never parsed (wrong); lettered "A" is the first choice: yes / left: right.
    assert templates.overall.accuracy == {"record": 0.0, "paraphrase": 0.0, "format": 1.0}
    assert (templates.overall.min_accuracy, templates.overall.max_accuracy) == (0.0, 1.0)
    stability = score_repeats(inputs)
    assert not isinstance(stability, NotMeasured)
    assert stability.k == 3 and stability.temperature == 0.8
    s = stability.by_family["presence"]
    assert (s.consistency, s.majority_accuracy) == (0.0, 1.0)  # yes, no, yes; gold yes
    assert s.expected_accuracy == pytest.approx(2 / 3)
    assert stability.by_family["horizontal_direction"].majority_accuracy == 0.0
    parsed = score_structured(inputs)
    assert not isinstance(parsed, NotMeasured)
    assert (parsed.overall.free_parse_failure, parsed.overall.schema_parse_failure) == (1.0, 0.0)
    assert parsed.overall.schema_accuracy == 1.0  # the first enum value is each gold here

    # Switched off, no control is asked and the standing files go (their journals stay), as
    # flips.jsonl does. (Another server's URL: the cases themselves are asked anew.)
    with OpenAICompatibleServer(_fake_model) as srv, client_for(srv.base_url) as client:
        assert run_model(root, client, out, describe=False).calls_made == len(cases)
    assert not any((out / f).exists() for f in ("templates.jsonl", "repeats.jsonl",
                                                 "structured.jsonl"))
    assert (out / "repeats.journal.jsonl").exists()


def test_an_endpoint_that_ignores_a_schema_is_not_asked_with_one(tmp_path: Path) -> None:
    # vLLM >= 0.12 takes response_format and ignores it: the preflight's canary finds that out.
    root, cases, labels = _dataset(tmp_path / "ds", n=1)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv, \
            client_for(srv.base_url) as client:
        run_model(root, client, out, describe=False, structured=True)
        assert not any("response_format" in r.body for r in srv.requests)
    assert client.capabilities is not None
    assert client.capabilities.structured_output == "ignored"
    assert not (out / "structured.jsonl").exists()
    assert isinstance(score_structured(_inputs(root, out, cases, labels)), NotMeasured)


# --- through the local random model: the demo's models, and the report --------------------

def test_the_offline_random_model_is_not_consistent_under_sampling(tmp_path: Path) -> None:
    # The demo's chance model: three seeded repeats of each case must not all agree (before the
    # local server honoured temperature and seed, every repeat was one reply: consistency 1.0).
    root, cases, labels = _dataset(tmp_path / "ds", n=4)
    out = tmp_path / "run"
    spec = ModelSpec.model_validate({"name": "random", "serve": "random", "seed": 0})
    options: dict[str, Any] = dict(describe=False, repeats=3, repeat_temperature=0.8)
    with open_model(spec) as client:
        run_model(root, client, out, **options)
    with open_model(spec) as client:  # another port: the journal still answers every repeat
        assert run_model(root, client, out, **options).calls_made == 0
    records = read_jsonl(out / "repeats.jsonl")
    assert len(records) == 3 * len(cases) and not any(r["seed_refused"] for r in records)
    stability = score_repeats(_inputs(root, out, cases, labels, model="random"))
    assert not isinstance(stability, NotMeasured) and stability.k == 3
    assert not stability.seed_refused
    for family, s in stability.by_family.items():
        assert s.n == 4 and s.consistency < 1.0, (family, s)
        # Uniform picks among 2 (3) choices: each repeat scores 1/2 (1/3) on average.
        assert 0.0 < s.expected_accuracy < 1.0, (family, s)


def test_repeats_go_without_a_seed_the_endpoint_refuses_and_say_so(tmp_path: Path) -> None:
    root, cases, labels = _dataset(tmp_path / "ds", n=1)
    out = tmp_path / "run"
    with OpenAICompatibleServer(_fake_model, refuse_fields=("seed",)) as srv, \
            client_for(srv.base_url) as client:
        run_model(root, client, out, describe=False, repeats=2, repeat_temperature=0.8,
                  max_concurrency=1)  # one at a time: the refusal is met once
        sampled = [r.body for r in srv.requests if r.body["temperature"] == 0.8]
    # The first repeat is refused once and re-sent; no later one carries the seed.
    assert ["seed" in b for b in sampled] == [True] + [False] * 4
    records = read_jsonl(out / "repeats.jsonl")
    assert len(records) == 4 and all(r["seed_refused"] and r["status"] == "success"
                                     for r in records)
    stability = score_repeats(_inputs(root, out, cases, labels))
    assert not isinstance(stability, NotMeasured) and stability.seed_refused
    assert REPEATS.section is not None
    html = render_table(REPEATS.section.build([_cell("m", {REPEATS.name: stability})]))
    assert "m (seed refused)" in html

@pytest.mark.slow
def test_local_models_answer_every_template_and_the_report_shows_spread_and_tau(
        tmp_path: Path) -> None:
    root, cases, labels = _dataset(tmp_path / "ds", n=4)
    cells = []
    for seed in (0, 1, 2):
        out = tmp_path / f"run{seed}"
        spec = ModelSpec.model_validate({"name": f"random{seed}", "serve": "random",
                                         "seed": seed})
        options: dict[str, Any] = dict(describe=False, max_concurrency=2, templates=True,
                                       repeats=2, structured=True)
        with open_model(spec) as client:
            first = run_model(root, client, out, **options)
            assert client.capabilities is not None
            assert client.capabilities.structured_output == "enforced"
        with open_model(spec) as client:
            again = run_model(root, client, out, **options)
        assert first.calls_made > len(cases) and again.calls_made == 0
        lettered = [r for r in read_jsonl(out / "templates.jsonl") if r["template"] == "format"]
        assert lettered and all(r["raw_response"] in "ABC" and r["choice"] in r["choices"]
                                for r in lettered)
        inputs = _inputs(root, out, cases, labels, model=f"random{seed}")
        scores = {VQA.name: VQA.score(inputs), TEMPLATES.name: score_templates(inputs),
                  REPEATS.name: score_repeats(inputs),
                  STRUCTURED.name: score_structured(inputs)}
        assert not any(isinstance(v, NotMeasured) for v in scores.values())
        repeats = scores[REPEATS.name]
        # Each repeat sends its own seed, and the random model samples by it above 0.
        assert repeats.overall.consistency < 1.0  # type: ignore[union-attr]
        cells.append(_cell(f"random{seed}", scores))
    assert TEMPLATES.pool is not None and TEMPLATES.section is not None
    pooled = TEMPLATES.pool(cells[:1])
    assert set(pooled) == {c.name for c in TEMPLATES.columns} and pooled["template_n"] == 8
    assert pooled["template_min_accuracy"] <= pooled["template_max_accuracy"]
    # The report's metric sections (every METRICS section, as the report renders them).
    sections = {anchor: html for anchor, _, html in metric_sections(cells)}
    html = sections["prompt-templates"]
    assert "Kendall" in html and "record vs paraphrase" in html and "(3 models)" in html
    assert all(f"random{seed}" in html for seed in (0, 1, 2)) and "Spread" in html
    for spec in (REPEATS, STRUCTURED):
        assert spec.section is not None and spec.pool is not None
        assert set(spec.pool(cells)) == {c.name for c in spec.columns}
        assert "random1" in render_table(spec.section.build(cells))
        assert "Not measured" in render_table(spec.section.build([]))


@pytest.mark.slow
def test_vqa_run_asks_the_prompt_controls_only_when_switched_on(tmp_path: Path) -> None:
    root, cases, _ = _dataset(tmp_path / "ds", n=2)
    cli = CliRunner()
    base = ["vqa", "run", str(root), "--model", "random", "--no-describe", *ONE_CALL_PER_CASE]
    plain = cli.invoke(app, [*base, "--output", str(tmp_path / "plain")])
    assert plain.exit_code == 0, plain.output
    assert not (tmp_path / "plain" / "templates.jsonl").exists()
    args = [*base, "--output", str(tmp_path / "on"), "--templates", "--repeats", "3",
            "--structured", "--prompt-control-cases", "1"]
    on = cli.invoke(app, args)
    assert on.exit_code == 0, on.output
    # One case per family (two families): 2 templates + 3 repeats + 1 structured each.
    assert f"{len(cases) + 2 * (2 + 3 + 1)} calls made" in on.output
    assert len(read_jsonl(tmp_path / "on" / "repeats.jsonl")) == 6
    bad = cli.invoke(app, [*args, "--repeat-temperature", "0"])
    assert bad.exit_code != 0 and "repeat_temperature" in bad.output, bad.output


@pytest.mark.slow
def test_vqa_run_asks_the_prompt_controls_the_model_entry_sets(tmp_path: Path) -> None:
    """An entry's prompt controls hold for ``vqa run`` as for the pipeline (they were ignored:
    the options' defaults won); an option given overrides them."""
    root, _, _ = _dataset(tmp_path / "ds", n=2)
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - name: rnd\n    serve: random\n    repeats: 3\n"
                      "    prompt_control_cases: 1\n")
    cli = CliRunner()

    def run(out: str, *options: str) -> Path:
        result = cli.invoke(app, ["vqa", "run", str(root), "--model", "rnd", "--models-file",
                                  str(models), "--no-describe", "--output", str(tmp_path / out),
                                  *options])
        assert result.exit_code == 0, result.output
        return tmp_path / out / "repeats.jsonl"

    # One case per family (two families), three times each.
    assert len(read_jsonl(run("entry"))) == 6
    assert not run("option", "--repeats", "1").exists()
