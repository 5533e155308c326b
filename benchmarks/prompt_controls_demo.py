"""The prompt controls on a demo-sized dataset, spatial and motion families included.

    python benchmarks/prompt_controls_demo.py DATASET [--out DIR] [--cases 20] [--repeats 3]
        [--model random:0 --model random:1 --model random:2 --model blind-smollm2]
    python benchmarks/prompt_controls_demo.py --smoke   # 8 sample frames, 2 cases, 2 random seeds

``DATASET`` is a folder made by ``eval-assets vqa generate`` (e.g. from the bundled
``data/recordings/sample.db``, the demo's recording). Each model is served offline as the demo
serves it (:func:`eval_assets.model_runs.client.open_model`; ``random:<seed>`` is the chance
level with that seed, ``blind-smollm2`` SmolLM2-135M from the question text alone) and asked
every case once, then the three prompt controls on up to ``--cases`` cases per family (dimOS's
and the spatial ones): the paraphrase and format templates, ``--repeats`` samples at temperature
0.7 (each with its repeat index as the seed), and the JSON schema (an enum of the choices;
``{"value", "unit"}`` for a number family).
The runs are journalled under ``--out``, so a second invocation asks nothing again.

Printed: per model the templates' score over all families and over the spatial ones
(record / paraphrase / format, min-max), per spatial family and model the same, the Kendall
tau-b between the template leaderboards (all families; spatial families), and per family the
parse failures with and without the schema, and per model and family the repeats' consistency,
expected and majority-vote accuracy. The report's three sections are written to
``--out/prompt_controls.html``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from eval_assets.atomic import write_text_atomic
from eval_assets.metrics.prompt_controls import TemplateRow, tau_pairs, template_stats
from eval_assets.model_runs.client import open_model
from eval_assets.model_runs.runner import run_model
from eval_assets.prompt_controls import TEMPLATE_NAMES
from eval_assets.report.metric_sections import render_table
from eval_assets.schemas.predictions import ModelSpec
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets.scoring.prompt_controls import (
    REPEATS,
    STRUCTURED,
    TEMPLATES,
    RepeatReport,
    StructuredReport,
    TemplateReport,
)
from eval_assets.scoring.spec import ScoringInputs
from eval_assets.vqa.declarations import family as declared_family


def _spec(name: str) -> ModelSpec:
    if name.startswith("random:"):
        seed = int(name.split(":", 1)[1])
        return ModelSpec.model_validate({"name": f"random{seed}", "serve": "random",
                                         "seed": seed})
    if name == "blind-smollm2":
        return ModelSpec.model_validate({"name": name, "serve": "blind-smollm2",
                                         "max_tokens": 64, "max_concurrency": 1})
    raise SystemExit(f"--model {name!r}: use random:<seed> or blind-smollm2")


def _pct(v: float | None) -> str:
    return "  n/a" if v is None else f"{100 * v:5.1f}"


def _spatial(family: str) -> bool:
    spec = declared_family(family)
    return spec is not None and spec.file == "spatial"


def _line(label: str, rows: list[TemplateRow]) -> str:
    s = template_stats(rows)
    spread = (None if s.min_accuracy is None or s.max_accuracy is None
              else s.max_accuracy - s.min_accuracy)
    return (f"  {label:<34} n={s.n:<4} " + " ".join(
        f"{t}={_pct(s.accuracy[t])}" for t in TEMPLATE_NAMES)
        + f"  min-max={_pct(s.min_accuracy)}-{_pct(s.max_accuracy)} spread={_pct(spread)}")


def _smoke_dataset(folder: Path) -> Path:
    """The dataset of the bundled sample's first 8 frames (the smoke run's), made once."""
    from eval_assets.perception import PerceptionConfig
    from eval_assets.vqa.authors import AuthorConfig
    from eval_assets.vqa.generate import generate_from_recording

    if not folder.is_dir():
        sample = Path(__file__).resolve().parent.parent / "data" / "recordings" / "sample.db"
        config = PerceptionConfig()
        generate_from_recording(sample, folder, (0, 8), AuthorConfig(), config.build_detector(),
                                config.build_segmenter())
    return folder


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line, with ``--smoke``'s dataset made and its small settings filled in."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("dataset", type=Path, nargs="?")
    parser.add_argument("--smoke", action="store_true",
                        help="generate a dataset from 8 frames of the bundled sample under --out "
                        "and ask 2 cases per family of two random seeds, 2 repeats")
    parser.add_argument("--out", type=Path, default=Path(".eval_assets/prompt_controls_demo"))
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", action="append", dest="models")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dataset = _smoke_dataset(args.out / "dataset")
        args.cases, args.repeats = 2, 2
        args.models = args.models or ["random:0", "random:1"]
    elif args.dataset is None:
        parser.error("DATASET is required (a folder made by `eval-assets vqa generate`), "
                     "or pass --smoke")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the models with the prompt controls on, score them, print the figures."""
    args = _arguments(argv)
    names = args.models or ["random:0", "random:1", "random:2", "blind-smollm2"]
    data = load_private_dataset(args.dataset)
    cells: list[CellScores] = []
    templates: dict[str, TemplateReport] = {}
    structured: dict[str, StructuredReport] = {}
    repeats: dict[str, RepeatReport] = {}
    for name in names:
        spec = _spec(name)
        out = args.out / spec.name
        started = time.perf_counter()
        with open_model(spec) as client:
            result = run_model(args.dataset, client, out, describe=False, templates=True,
                               repeats=args.repeats, repeat_temperature=0.7, structured=True,
                               prompt_control_cases=args.cases)
        print(f"{spec.name}: {result.calls_made} calls made, {result.skipped} reused, "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        inputs = ScoringInputs(recording=args.dataset.name, model=spec.name, data=data,
                               run=load_run(out), run_dir=out, out_dir=out / "scores")
        scores: dict[str, Any] = {}
        for metric in (TEMPLATES, REPEATS, STRUCTURED):
            outcome = metric.score(inputs)
            if not isinstance(outcome, NotMeasured):
                scores[metric.name] = outcome.model_dump(mode="json")
        t, st = scores.get(TEMPLATES.name), scores.get(STRUCTURED.name)
        if (rp := scores.get(REPEATS.name)) is not None:
            repeats[spec.name] = RepeatReport.model_validate(rp)
        if t is not None:
            templates[spec.name] = TemplateReport.model_validate(t)
        if st is not None:
            structured[spec.name] = StructuredReport.model_validate(st)
        cells.append(CellScores(
            recording=args.dataset.name, model=spec.name, dataset_sha256="0" * 64,
            predictions=PredictionCounts(cases=1, succeeded=1, failed=0, parse_failures=0,
                                         descriptions=0, descriptions_failed=0),
            scores=scores))

    print("\nTemplates (score by each family's rule: accuracy, MRA, mean angular accuracy; %)")
    for model, report in templates.items():
        print(model)
        print(_line("all families", report.rows))
        print(_line("spatial families", [r for r in report.rows if _spatial(r.family)]))
    print("\nPer spatial family")
    families = sorted({r.family for rep in templates.values() for r in rep.rows
                       if _spatial(r.family)})
    for fam in families:
        print(fam)
        for model, report in templates.items():
            print(_line(model, [r for r in report.rows if r.family == fam]))
    for title, keep in (("all families", lambda f: True), ("spatial families", _spatial)):
        accuracies = {m: template_stats([r for r in rep.rows if keep(r.family)]).accuracy
                      for m, rep in templates.items()}
        pairs = "; ".join(f"{a} vs {b}: {'n/a' if tau is None else f'{tau:+.2f}'}"
                          for a, b, tau, _ in tau_pairs(accuracies))
        print(f"\nKendall tau-b between template leaderboards ({title}, {len(accuracies)} "
              f"models): {pairs}")
    print(f"\nStability under sampling ({args.repeats} repeats at temperature 0.7, seed = repeat "
          "index): consistency / expected accuracy / majority-vote accuracy (%)")
    for model, rp_report in repeats.items():
        print(f"{model}{' (seed refused)' if rp_report.seed_refused else ''}")
        for fam, rs in [("all families", rp_report.overall), *sorted(rp_report.by_family.items())]:
            print(f"  {fam:<28} n={rs.n:<4} {_pct(rs.consistency)} / "
                  f"{_pct(rs.expected_accuracy)} / {_pct(rs.majority_accuracy)}")
    print("\nStructured answers: parse failures free text -> schema (%), per family")
    for model, st_report in structured.items():
        print(model)
        for fam, s in sorted(st_report.by_family.items()):
            print(f"  {fam:<28} n={s.n:<4} free={_pct(s.free_parse_failure)} "
                  f"schema={_pct(s.schema_parse_failure)} schema calls failed="
                  f"{s.schema_not_answered}  score free={_pct(s.free_accuracy)} "
                  f"schema={_pct(s.schema_accuracy)}")
    html = "\n".join(render_table(m.section.build(cells))
                     for m in (TEMPLATES, REPEATS, STRUCTURED)
                     if m.section is not None and m.section.build is not None)
    write_text_atomic(args.out / "prompt_controls.html", html)
    print(f"\nreport sections: {args.out / 'prompt_controls.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
