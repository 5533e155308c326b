"""How the automation graph scales with partitions: tick time, requests and cursor size.

    python benchmarks/graph_scale.py [--recordings 50] [--models 5] [--target-tick-s 10]
    python benchmarks/graph_scale.py --smoke    # 2 recordings x 2 models

Registers ``--recordings`` recordings (dynamic partitions, each with its data version observed,
as the recordings sensor does) and ``--models`` models served by the offline ``random`` fake
(static partitions), so ``recordings x models`` (recording, model) cells, on one persistent
SQLite instance. Then evaluates every asset's automation condition as the daemon's automation
sensor does (:class:`eval_assets.defs.local.conditions.Conditions`), tick by tick:

after each tick reporting what it requested as materialized (runless events, no pipeline runs:
this measures the graph, not the models), until two ticks in a row ask for nothing:

1. every recording's chain is missing: each is requested once (also what a daemon started over an
   existing instance does);
2. every cell, once (missing cells are not held for a second look); 3. the leaderboard, once for
   the settled batch; 4. the report, after it; 5. and 6. nothing (no redundant run; two empty
   ticks: an upstream update whose asset's last run ended after a tick's snapshot is acted on at
   the second tick that sees it).

It prints each tick's wall time, how much it requested and the cursor's size, for a fifth and for
all of the recordings, so the growth with the number of partitions is visible. It fails when any
partition is requested twice or one is never requested, and (not in ``--smoke``) when a tick of the
full size takes longer than ``--target-tick-s``.

What it does not do: launch the runs through a real webserver and daemon and time the pipeline
itself; ``benchmarks/graph_scale_daemon.py`` does that (runs per partition, the daemon's tick
records, leaderboard and report builds, report size), ``eval_assets_tests/e2e/test_automation.py``
for two recordings.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# First look, cells, leaderboard, report, then two empty ticks: six when nothing repeats.
MAX_TICKS = 10


@dataclass
class Tick:
    """One evaluation: its wall time, how many asset partitions it requested, the cursor size."""

    name: str
    seconds: float
    requested: int
    requested_board: int
    cursor_bytes: int


def _write_models(path: Path, models: int) -> None:
    lines = ["models:"]
    for i in range(models):
        lines += [f"  - name: fake{i}", "    serve: random", f"    seed: {i}"]
    path.write_text("\n".join(lines) + "\n")


def _scenario(home: Path, recordings: int) -> list[Tick]:
    """The three ticks on a fresh instance with ``recordings`` recordings."""
    from dagster import (
        AssetMaterialization,
        AssetObservation,
        DagsterInstance,
        serialize_value,
    )
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    from eval_assets.defs import keys
    from eval_assets.defs.assets.sources import NO_OVERRIDES
    from eval_assets.defs.definitions import defs
    from eval_assets.defs.local.conditions import Conditions
    from eval_assets.defs.partitions import model_partitions, recording_model_partitions

    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    names = [f"rec{i:03d}" for i in range(recordings)]
    models = model_partitions.get_partition_keys()
    graph = defs.resolve_asset_graph()
    board = {keys.LEADERBOARD, keys.REPORT}
    ticks: list[Tick] = []
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("recordings", names)
        for name in names:
            instance.report_runless_asset_event(AssetObservation(
                asset_key=keys.RECORDING_FILE, partition=name,
                tags={DATA_VERSION_TAG: f"v-{name}"}))
            # As the recordings sensor does: each recording's label overrides (none here).
            instance.report_runless_asset_event(AssetObservation(
                asset_key=keys.LABEL_OVERRIDES, partition=name,
                tags={DATA_VERSION_TAG: NO_OVERRIDES}))
        for model in models:
            instance.report_runless_asset_event(AssetObservation(
                asset_key=keys.MODEL_CONFIG, partition=model, tags={DATA_VERSION_TAG: model}))
        instance.report_runless_asset_event(AssetObservation(
            asset_key=keys.JUDGE_CONFIG, tags={DATA_VERSION_TAG: "judge"}))
        conditions = Conditions(defs, instance)
        cursor = None

        def tick(name: str):
            nonlocal cursor
            started, cpu = time.perf_counter(), time.process_time()
            result = conditions.evaluate(cursor)
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu
            cursor = result.cursor
            ticks.append(Tick(
                name, seconds, result.total_requested,
                sum(result.get_num_requested(k) for k in board),
                len(serialize_value(cursor))))
            # Printed as it goes: a long run stopped early still shows its figures.
            # CPU seconds too: on a busy machine the wall time mostly measures the others.
            print(f"  [{len(names)} recordings] tick {name}: {seconds:.2f} s ({cpu:.2f} s CPU), "
                  f"{result.total_requested} requested", flush=True)
            return result

        # Each tick's requests are then reported materialized (runless events: what its runs
        # would leave), until two ticks in a row ask for nothing more.
        counts: Counter[tuple[str, str]] = Counter()
        idle = 0
        for step in range(1, MAX_TICKS + 1):
            result = tick(f"{step}")
            # Two empty ticks in a row: an upstream update may be acted on at the second tick
            # that sees it (eval_assets.defs.automation_conditions.EAGER).
            idle = 0 if result.total_requested else idle + 1
            if idle == 2:
                break
            for key in graph.materializable_asset_keys:
                for partition in result.get_requested_partitions(key):
                    counts[(key.to_user_string(), str(partition))] += 1
                    instance.report_runless_asset_event(
                        AssetMaterialization(asset_key=key, partition=partition))
        twice = sorted(k for k, n in counts.items() if n > 1)
        # From the graph, not by hand: per recording, per (recording, model) cell, and the two
        # unpartitioned assets.
        per = {"recording": 0, "cell": 0, "once": 0}
        for key in graph.materializable_asset_keys:
            partitions = graph.get(key).partitions_def
            per["once" if partitions is None else "cell" if partitions == recording_model_partitions
                else "recording"] += 1
        expected = (len(names) * per["recording"] + len(names) * len(models) * per["cell"]
                    + per["once"])
        ticks[-1].name += (f" (every partition requested once: {len(counts)} of {expected}"
                           if not twice else f" ({len(twice)} requested twice: {twice[:3]}")
        ticks[-1].name += ")"
        if twice or len(counts) != expected:
            by_asset = Counter(asset for asset, _ in counts)
            never = sorted(k.to_user_string() for k in graph.materializable_asset_keys
                           if k.to_user_string() not in by_asset)
            raise SystemExit(f"FAIL: {len(twice)} partitions requested twice, "
                             f"{len(counts)} requested of {expected}; requested per asset: "
                             f"{dict(sorted(by_asset.items()))}; never: {never}; ticks: "
                             f"{[(t.name, t.requested) for t in ticks]}")
    return ticks


def _print(recordings: int, models: int, ticks: list[Tick]) -> None:
    cells = recordings * models
    print(f"\n{recordings} recordings x {models} models = {cells} cells")
    print(f"  {'tick':<16} {'seconds':>8} {'requested':>9} {'board':>5} {'cursor KB':>9}")
    for t in ticks:
        print(f"  {t.name:<16} {t.seconds:>8.2f} {t.requested:>9} {t.requested_board:>5} "
              f"{t.cursor_bytes / 1024:>9.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=int, default=50)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--target-tick-s", type=float, default=10.0)
    parser.add_argument("--smoke", action="store_true", help="2 recordings x 2 models")
    args = parser.parse_args()
    if args.smoke:
        args.recordings, args.models = 2, 2
    sizes = ([args.recordings] if args.smoke else
             sorted({max(1, args.recordings // 5), args.recordings}))
    with tempfile.TemporaryDirectory(prefix="graph_scale_") as tmp:
        models_file = Path(tmp) / "models.yaml"
        _write_models(models_file, args.models)
        # Read when the code location is first imported: set before the import below.
        os.environ["EVAL_ASSETS_MODELS"] = str(models_file)
        os.environ["EVAL_ASSETS_HOME"] = str(Path(tmp) / "storage")
        warnings.filterwarnings("ignore")
        sys.path.insert(0, str(REPO))
        results = {n: _scenario(Path(tmp) / f"home{n}", n) for n in sizes}
    for n, ticks in results.items():
        _print(n, args.models, ticks)
    full = results[args.recordings]
    slowest = max(t.seconds for t in full)
    if len(sizes) > 1:
        small = results[sizes[0]]
        print(f"\ngrowth from {sizes[0]} to {args.recordings} recordings "
              f"(x{args.recordings / sizes[0]:.1f} partitions): slowest tick "
              f"x{slowest / max(max(t.seconds for t in small), 1e-9):.1f}, cursor "
              f"x{max(t.cursor_bytes for t in full) / max(t.cursor_bytes for t in small):.1f}")
    print(f"slowest tick at {args.recordings} recordings: {slowest:.1f} s "
          f"(target {args.target_tick_s:g} s)")
    # The smoke run only checks that the script works (and that nothing is requested twice).
    return 1 if slowest > args.target_tick_s and not args.smoke else 0

if __name__ == "__main__":
    sys.exit(main())
