"""How often the nightly drift rule raises a false alarm, and how often it catches a real drop.

    python benchmarks/drift_alarms.py [--sims 500] [--frames 40] [--per-frame 30] [--families 6]
    python benchmarks/drift_alarms.py --smoke   # a few simulations: does it still run?

Simulates many pairs of nights of one model through the real path
(:func:`eval_assets.metrics.drift.model_drift`: exact McNemar, frame-clustered bootstrap, MDD, the
flag rule), overall and per family. Each simulation draws a fresh world: ``frames`` frames of
``per_frame`` cases, families assigned in turn within a frame, and a per-case probability of a
right answer ``sigmoid(mu + u_frame + e_case)`` (``u`` ~ N(0, 1), ``e`` ~ N(0, 1.2), ``mu`` set for
a mean accuracy of about 65%). A night redraws every case's correctness from those probabilities
with a night-and-frame shock ``v`` ~ N(0, 0.4) on the logit (a model that misreads a frame one
night misses several of its questions), so the noise is clustered by frame as in real runs.

- **A/A**: both nights from the same probabilities. A flag is a false alarm. Reported for the
  overall comparison and for "any flag" (overall or any family: what a reader of the night sees).
- **Drop**: the second night's logits are shifted so that the expected accuracy is exactly
  ``--drop`` (default 10 points) lower. Detection: the overall comparison flags a drop.

Each world is one recording and one model, so the night's sets of tests are its families
(families x recordings x models) and its overall comparison (recordings x models, here one):
their p-values are Benjamini-Hochberg adjusted set by set
(:func:`eval_assets.metrics.drift.adjust_night`), as the nightly check and the report do. The
rates are printed with the raw p deciding (the rule before the adjustment) and with the adjusted
p (the rule in force).

Prints each rate with its n and a 95% Wilson interval. Exits non-zero when the adjusted any-flag
false alarm rate exceeds ``--max-false-alarms`` (1%) or the adjusted detection rate is under
``--min-detection`` (90%); ``--smoke`` judges neither.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from eval_assets.metrics.drift import (
    ALL_FAMILIES,
    DriftCase,
    NightDrift,
    adjust_night,
    model_drift,
)
from eval_assets.metrics.stats import wilson_interval

FRAME_SD, CASE_SD, SHOCK_SD = 1.0, 1.2, 0.4
TARGET_ACCURACY = 0.65
_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(40)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def expected_accuracy(logits: np.ndarray) -> float:
    """Mean over cases of E[sigmoid(logit + v)], v ~ N(0, SHOCK_SD), by Gauss-Hermite."""
    shocked = logits[:, None] + SHOCK_SD * math.sqrt(2.0) * _NODES[None, :]
    return float((_sigmoid(shocked) @ _WEIGHTS).mean() / math.sqrt(math.pi))


def shift_for(logits: np.ndarray, target: float) -> float:
    """The logit shift that gives an expected accuracy of exactly ``target`` (bisection)."""
    lo, hi = -20.0, 20.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if expected_accuracy(logits + mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class World:
    """One simulated dataset: each case's frame, family and logit."""

    frame: np.ndarray
    family: list[str]
    logits: np.ndarray


def make_world(rng: np.random.Generator, frames: int, per_frame: int, families: int) -> World:
    """Fresh per-case probabilities, clustered by frame, mean accuracy about 65%."""
    frame = np.repeat(np.arange(frames), per_frame)
    raw = rng.normal(0.0, FRAME_SD, frames)[frame] + rng.normal(0.0, CASE_SD, frame.size)
    logits = raw + shift_for(raw, TARGET_ACCURACY)
    family = [f"family{i % families}" for i in range(frame.size)]
    return World(frame, family, logits)


def draw_night(rng: np.random.Generator, world: World, shift: float
               ) -> dict[tuple[str, ...], DriftCase]:
    """One night's scored cases: correctness redrawn with a fresh night-and-frame shock."""
    shock = rng.normal(0.0, SHOCK_SD, int(world.frame.max()) + 1)[world.frame]
    right = rng.random(world.frame.size) < _sigmoid(world.logits + shift + shock)
    return {("sim", "sha", f"c{i}"): DriftCase(("sim", int(world.frame[i])), world.family[i],
                                                bool(right[i]))
            for i in range(world.frame.size)}


def simulate(seed: int, frames: int, per_frame: int, families: int, drop: float
             ) -> tuple[list[NightDrift], list[NightDrift]]:
    """One world, two pairs of nights: A/A and a true ``drop``; both comparison lists."""
    rng = np.random.default_rng([seed, frames, per_frame, families])
    world = make_world(rng, frames, per_frame, families)
    before = expected_accuracy(world.logits)
    shift = shift_for(world.logits, before - drop)
    first = draw_night(rng, world, 0.0)
    same = draw_night(rng, world, 0.0)
    dropped = draw_night(rng, world, shift)
    return (model_drift("m", {"n1": first, "n2": same}),
            model_drift("m", {"n1": first, "n2": dropped}))


def _rate(hits: int, n: int) -> str:
    low, high = wilson_interval(hits, n)
    return f"{hits / n:6.1%} [{low:.1%}, {high:.1%}] ({hits}/{n})"


def main() -> int:
    """Simulate, print the rates, judge the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=500, help="simulated worlds")
    parser.add_argument("--frames", type=int, default=40, help="frames per night")
    parser.add_argument("--per-frame", type=int, default=30, help="cases per frame")
    parser.add_argument("--families", type=int, default=6, help="question families")
    parser.add_argument("--drop", type=float, default=0.10, help="true accuracy drop")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-false-alarms", type=float, default=0.01,
                        help="most A/A 'any flag' rate allowed (BH-adjusted rule)")
    parser.add_argument("--min-detection", type=float, default=0.90,
                        help="least overall detection rate of the drop (BH-adjusted rule)")
    parser.add_argument("--smoke", action="store_true",
                        help="8 simulations: checks the script still runs (targets not judged)")
    args = parser.parse_args()
    if args.smoke:
        args.sims, args.max_false_alarms, args.min_detection = 8, 1.0, 0.0
    n_cases = args.frames * args.per_frame
    print(f"{args.sims} simulations: {n_cases:,} common cases per pair of nights "
          f"({args.frames} frames x {args.per_frame}), {args.families} families, "
          f"true drop {args.drop * 100:.0f} points; noise clustered by frame "
          f"(frame sd {FRAME_SD}, case sd {CASE_SD}, night shock sd {SHOCK_SD} on the logit)")
    counts: dict[str, dict[str, int]] = {rule: dict.fromkeys(
        ("aa_overall", "aa_any", "aa_sig", "found", "found_sig", "found_family"), 0)
        for rule in ("raw", "BH")}
    family_total = 0
    mdds: list[float] = []
    start = time.perf_counter()
    for sim in range(args.sims):
        same_raw, dropped_raw = simulate(args.seed * 1_000_003 + sim, args.frames,
                                         args.per_frame, args.families, args.drop)
        for rule, same, dropped in (("raw", same_raw, dropped_raw),
                                    ("BH", adjust_night(same_raw), adjust_night(dropped_raw))):
            c = counts[rule]
            overall = next(d for d in same if d.family == ALL_FAMILIES)
            c["aa_overall"] += overall.flagged
            c["aa_sig"] += overall.significant
            c["aa_any"] += any(d.flagged for d in same)
            hit = next(d for d in dropped if d.family == ALL_FAMILIES)
            c["found"] += hit.flagged and (hit.difference or 0.0) < 0
            c["found_sig"] += hit.significant and (hit.difference or 0.0) < 0
            families = [d for d in dropped if d.family != ALL_FAMILIES]
            c["found_family"] += sum(d.flagged and (d.difference or 0.0) < 0 for d in families)
        family_total += sum(1 for d in dropped_raw if d.family != ALL_FAMILIES)
        hit_raw = next(d for d in dropped_raw if d.family == ALL_FAMILIES)
        if hit_raw.mdd is not None:
            mdds.append(hit_raw.mdd)
    elapsed = time.perf_counter() - start
    n = args.sims
    pts = f"{args.drop * 100:.0f}-point drop"
    for rule in ("raw", "BH"):
        c = counts[rule]
        print("-- " + {"raw": "raw McNemar p decides (the rule before the adjustment)",
                       "BH": "Benjamini-Hochberg adjusted p decides (the rule in force)"}[rule])
        for label, hits, total in (
                ("A/A false alarms, overall comparison", c["aa_overall"], n),
                ("A/A false alarms, any flag (overall or a family)", c["aa_any"], n),
                ("A/A significant overall (no MDD)", c["aa_sig"], n),
                (f"{pts} detected (flagged), overall", c["found"], n),
                (f"{pts} significant overall (no MDD)", c["found_sig"], n),
                (f"{pts} flagged per family", c["found_family"], family_total)):
            print(f"{label + ':':<50}{_rate(hits, total)}")
    if mdds:
        print(f"overall MDD under the drop: median {np.median(mdds) * 100:.1f} points")
    print(f"{elapsed:.1f} s ({elapsed / n * 1000:.0f} ms per simulated world, "
          f"{2 * (1 + args.families)} comparisons each)")
    failed = False
    aa_any, found = counts["BH"]["aa_any"], counts["BH"]["found"]
    if aa_any / n > args.max_false_alarms:
        print(f"FAIL: false-alarm rate {aa_any / n:.1%} exceeds {args.max_false_alarms:.0%}")
        failed = True
    if found / n < args.min_detection:
        print(f"FAIL: detection rate {found / n:.1%} is under {args.min_detection:.0%}")
        failed = True
    if not failed and not args.smoke:
        print(f"ok: false alarms at most {args.max_false_alarms:.0%}, detection at least "
              f"{args.min_detection:.0%}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
