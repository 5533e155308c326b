"""Build time and peak memory of the leaderboard and the report, in process, at 50 x 5.

    python benchmarks/report_build.py [--recordings 50] [--models 5] [--repeat 3]
    python benchmarks/report_build.py --code /path/to/other/checkout   # the same tree, both codes

Fabricates a results tree once (each recording a small real dataset written with the report
tests' builders, eval_assets_tests/report/builders.py: one frame, three cases, detections and a
point cloud; each model's answers and a results.json scored by the real metric functions, with
the inputs it was scored from; one cell missing, one scored on an older dataset), then builds
the leaderboard and the report from it as the two Dagster assets do, ``--repeat`` times each,
and prints each one's median wall and CPU time (after a warm-up build), its peak Python memory
(tracemalloc, a separate build), its Python function calls (cProfile, another build: a figure
that load on the machine does not move) and the report's SHA-256. With ``--code DIR``, the
same tree is also built by the eval_assets package of DIR (another checkout, e.g. a ``git
worktree`` of main) in a subprocess, and the two are printed side by side: timings measured in
one run on one machine, and whether the two pages are byte-identical.

What it leaves out: Dagster itself (benchmarks/graph_scale_daemon.py runs the real assets), and
the weight of big datasets (the cards and frames grow with cases; here every recording has 3).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import inspect
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def fabricate(root: Path, recordings: int, models: int) -> tuple[list[str], list[str]]:
    """Write the storage tree under ``root``; return the recordings and models."""
    sys.path.insert(0, str(REPO))
    from eval_assets.layout import RUN_ANSWERS, StorageLayout
    from eval_assets.schemas.vqa import dumps_line
    from eval_assets.scoring.provenance import current_inputs
    from eval_assets.vqa.dataset import dataset_fingerprint
    from eval_assets_tests.report.builders import THIRDS, answer, result, row, write_dataset

    layout = StorageLayout(root / "storage")
    template = write_dataset(root / "template")
    recs = [f"rec{i:03d}" for i in range(recordings)]
    mods = [f"model-{j}" for j in range(models)]
    cases = [("frame-000000-green-box-presence", "presence", "yes", YES_NO_CHOICES),
             ("frame-000000-green-box-horizontal_direction", "horizontal_direction", "left",
              THIRDS),
             ("frame-000000-red-ball-presence", "presence", "no", YES_NO_CHOICES)]
    for i, rec in enumerate(recs):
        for src, dst in ((template["dataset"], layout.dataset_dir(rec)),
                         (template["detections"], layout.detections_dir(rec)),
                         (template["pointclouds"], layout.pointcloud_frames_dir(rec))):
            shutil.copytree(src, dst)
        sha = dataset_fingerprint(layout.dataset_dir(rec))
        assert sha is not None
        for j, model in enumerate(mods):
            # Deterministic answers that differ by model and recording, right or wrong.
            replies = [gold if (i + j + k) % 3 else choices[(choices.index(gold) + 1)
                                                          % len(choices)]
                       for k, (_, _, gold, choices) in enumerate(cases)]
            run_dir = layout.predictions_dir(rec, model)
            run_dir.mkdir(parents=True)
            (run_dir / RUN_ANSWERS).write_text("".join(
                dumps_line(answer(model, cid, reply)) + "\n"
                for (cid, _, _, _), reply in zip(cases, replies, strict=True)))
            rows = [row(cid, family, gold, reply, rec, choices)
                    for (cid, family, gold, choices), reply in zip(cases, replies, strict=True)]
            if (i, j) == (recordings - 1, models - 1):
                continue  # one missing cell, listed as such
            # One stale cell: scored on an older dataset.
            old = (i, j) == (0, 0)
            cell = result(rec, model, rows, sha="0" * 64 if old else sha,
                          inputs=current_inputs(layout.dataset_dir(rec), run_dir, None,
                                                dataset_sha256="0" * 64 if old else sha))
            path = layout.results_file(rec, model)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(cell.model_dump_json())
    (root / "labels").mkdir()
    (root / "annotations").mkdir()
    return recs, mods


YES_NO_CHOICES = ["yes", "no"]


def build(root: Path, recs: list[str], mods: list[str]) -> dict[str, float]:
    """The leaderboard, then the report, as the two assets call them; the wall and CPU seconds
    of each (CPU time is what to compare on a shared machine: it does not count waiting)."""
    from eval_assets.layout import StorageLayout
    from eval_assets.report import publish
    from eval_assets.scoring.collect import load_results

    layout = StorageLayout(root / "storage")
    labels, annotations = root / "labels", root / "annotations"
    wall, cpu = time.perf_counter(), time.process_time()
    results = load_results(layout, recs, mods)
    publish.publish_leaderboard(layout, results, recordings=recs, models=mods,
                                labels_dir=labels)
    board = {"board_s": time.perf_counter() - wall, "board_cpu_s": time.process_time() - cpu}
    wall, cpu = time.perf_counter(), time.process_time()
    results = load_results(layout, recs, mods)
    # Before issue 30 item 9 the report took the models too (it rebuilt the coverage itself).
    grid = ({"models": mods} if "models" in inspect.signature(publish.publish_report).parameters
            else {})
    publish.publish_report(layout, results, recordings=recs, labels_dir=labels,
                           annotations_dir=annotations, **grid)
    return {**board, "report_s": time.perf_counter() - wall,
            "report_cpu_s": time.process_time() - cpu}


def measure(root: Path, repeat: int) -> dict[str, object]:
    """Median times over ``repeat`` builds (after one to warm up: imports, matplotlib), the peak
    traced memory of each asset in one more, and the page's digest."""
    from eval_assets.layout import StorageLayout

    spec = json.loads((root / "grid.json").read_text())
    recs, mods = spec["recordings"], spec["models"]
    build(root, recs, mods)
    runs = [build(root, recs, mods) for _ in range(repeat)]
    out: dict[str, object] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    from eval_assets.report import publish
    from eval_assets.scoring.collect import load_results

    layout = StorageLayout(root / "storage")
    for name, publish_one in (("board", publish.publish_leaderboard),
                              ("report", publish.publish_report)):
        kwargs = {"recordings": recs, "labels_dir": root / "labels"}
        if name == "board" or "models" in inspect.signature(publish_one).parameters:
            kwargs["models"] = mods
        tracemalloc.start()
        publish_one(layout, load_results(layout, recs, mods), **kwargs)  # type: ignore[operator]
        out[f"{name}_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        # Python function calls: the same on a busy machine as on an idle one, unlike time.
        profile = cProfile.Profile()
        profile.runcall(publish_one, layout, load_results(layout, recs, mods), **kwargs)
        out[f"{name}_calls"] = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
    page = layout.report_file().read_bytes()
    return {"code": str(Path(sys.modules["eval_assets"].__file__ or "").parents[1]), **out,
            "html_bytes": len(page), "html_sha256": hashlib.sha256(page).hexdigest()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=int, default=50)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--code", type=Path, action="append", default=[],
                        help="another checkout whose eval_assets builds the same tree too")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the subprocess
    parser.add_argument("--smoke", action="store_true",
                        help="3 recordings x 2 models, once: check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.recordings, args.models, args.repeat = 3, 2, 1
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.repeat)))
        return 0
    with tempfile.TemporaryDirectory(prefix="report_build_") as tmp:
        root = Path(tmp)
        recs, mods = fabricate(root, args.recordings, args.models)
        (root / "grid.json").write_text(json.dumps({"recordings": recs, "models": mods}))
        rows = []
        # Every code in its own interpreter, alternately first, so neither warms the other.
        for code in [*args.code, REPO]:
            env = {**os.environ, "PYTHONPATH": str(code.resolve())}
            out = subprocess.run([sys.executable, __file__, "--measure", str(root),
                                  "--repeat", str(args.repeat)], env=env, cwd=code,
                                 capture_output=True, text=True, check=False)
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                return out.returncode
            rows.append(json.loads(out.stdout.splitlines()[-1]))
    print(f"{args.recordings} recordings x {args.models} models, leaderboard + report, "
          f"median of {args.repeat}")
    for r in rows:
        print(f"  {r['code']}:")
        for name, label in (("board", "leaderboard"), ("report", "report")):
            print(f"    {label:<11} {r[name + '_s']:.2f} s wall, {r[name + '_cpu_s']:.2f} s CPU, "
                  f"peak {r[name + '_peak_mib']:.1f} MiB traced, "
                  f"{r[name + '_calls']:,} function calls")
        print(f"    report.html {r['html_bytes']:,} bytes, sha256 {r['html_sha256'][:16]}")
    if len(rows) > 1:
        same = len({r["html_sha256"] for r in rows}) == 1
        print(f"  report.html byte-identical across codes: {same}")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
