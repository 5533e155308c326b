"""Render rate and memory of the streamed rig synthesizer (1280x720 fisheye at 15 Hz, Mid-360).

    python benchmarks/synth_rig.py [--durations 10,60] [--seed 1] [--out DIR] [--keep]
    python benchmarks/synth_rig.py --smoke   # one second of recording: does it still run?

Each duration is synthesized in a fresh Python process (``--profile rig``, per-frame truth at
1 Hz), so each peak RSS is that run's own. Prints, per duration: frames, LiDAR scans, camera
frames rendered per second (everything in the loop: ray casting, shading, JPEG, LiDAR, truth,
SQLite), peak RSS and resident memory at 10 %, 50 % and 100 % of the frames; streaming means the
last three stay flat however long the recording is. Also prints the file sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _rss_mb() -> float:
    """Current resident set size of this process (``/proc/self/statm``), MiB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * _PAGE_BYTES / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class _RssSampler:
    """A progress sink that records the RSS after every finished camera frame."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    def start(self, label: str, total: int | None) -> object:
        """Begin the synthesis task."""
        return label

    def advance(self, handle: object, n: int) -> None:
        """One more frame: sample the RSS."""
        self.samples.append(_rss_mb())

    def finish(self, handle: object) -> None:
        """Nothing to close."""


def child(duration_s: float, seed: int, out: Path) -> None:
    """Synthesize one recording in this process and print its figures as one JSON line."""
    from eval_assets import progress
    from eval_assets.synth.stream import synthesize_recording

    sampler = _RssSampler()
    progress.install(sampler)
    rss_before = _rss_mb()
    started = time.perf_counter()
    result = synthesize_recording(out, profile="rig", seed=seed, duration_s=duration_s)
    wall = time.perf_counter() - started
    n = len(sampler.samples)
    at = [sampler.samples[max(0, round(f * n) - 1)] for f in (0.1, 0.5, 1.0)]
    sizes = {p.name: p.stat().st_size for p in (result.db, result.scene_json, result.truth_npz)
             if p is not None}
    print(json.dumps({"duration_s": duration_s, "frames": result.frames,
                      "scans": result.lidar_scans, "render_s": result.render_seconds,
                      "wall_s": wall, "fps": result.frames / result.render_seconds,
                      "rss_before_mb": rss_before, "rss_10_50_100_mb": at,
                      "peak_rss_mb": _peak_rss_mb(), "sizes": sizes}))


def main() -> int:
    """Run each duration in a child process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations", default="10,60", help="comma-separated seconds")
    parser.add_argument("--seed", type=int, default=1, help="noise and scene seed")
    parser.add_argument("--out", type=Path, default=None, help="folder for the recordings")
    parser.add_argument("--keep", action="store_true", help="keep the recordings")
    parser.add_argument("--smoke", action="store_true",
                        help="one 1 s recording: checks the script still runs")
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.durations = "1"
    if args.child is not None:
        child(args.child, args.seed, args.out)
        return 0
    work = args.out or Path(tempfile.mkdtemp(prefix="synth_rig-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'duration':>8} {'frames':>6} {'scans':>5} {'frames/s':>8} {'peak RSS':>9} "
          f"{'RSS 10%/50%/100%':>20} {'db MB':>7}")
    for duration in (float(d) for d in args.durations.split(",")):
        out = work / f"rig-{duration:g}s.db"
        proc = subprocess.run([sys.executable, __file__, "--child", str(duration), "--seed",
                               str(args.seed), "--out", str(out)], capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rss = "/".join(f"{v:.0f}" for v in r["rss_10_50_100_mb"])
        print(f"{duration:>7g}s {r['frames']:>6} {r['scans']:>5} {r['fps']:>8.2f} "
              f"{r['peak_rss_mb']:>7.0f}MB {rss:>18}MB {r['sizes'][out.name] / 1e6:>7.1f}")
        if not args.keep:
            for path in work.glob(f"{out.stem}.*"):
                path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
