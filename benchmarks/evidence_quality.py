"""Evidence quality on the bundled sample and on unseen synthesized scenes.

    python benchmarks/evidence_quality.py [--seeds 1101,1102,1103] [--frames N] [--no-sample]
    python benchmarks/evidence_quality.py --smoke   # one short recording: does it still run?
    python benchmarks/evidence_quality.py --seeds '' --no-sample --sim-seeds 2201 --frames 40
    python benchmarks/evidence_quality.py --seeds '' --no-sample --sim-seeds 911,912 --frames 60 \
        --evidence truth

For the bundled sample and each scene seed (seeds no test uses; a ``sample``-profile recording of
one lap unless ``--frames N``, as ``eval-assets recording synthesize R.db --scene-seed S``), the
recording chain (frames, detections, tracks, proposals, dataset) and the ``evidence_quality``
asset are materialized in process with the default configuration, and the record's figures are
printed: detection precision/recall, naming accuracy, mean mask IoU, track centre and extent
errors, and per family the wrong-gold rate over the checked cases with the wrong cases' reasons.
``--sim-seeds`` adds simulated recordings (the PyBullet world of ``eval-assets recording
simulate R.db --seed S --frames N``, 120 frames unless ``--frames N``): a world the default colour
detector was not written for, so its figures show whether the detector abstains where it cannot
name or measure an object rather than making confident wrong gold.
``--evidence`` chooses the simulated seeds' evidence: ``offline`` (the default: objects found in
the LiDAR, named by the colour detector only when certain, else marked), ``taught`` (the same,
with the simulator's reference views of its catalogue as taught names, as a team's
``data/objects/<name>/`` would be) or ``truth`` (boxes and masks from the truth files, the
``truth`` detector and segmenter asked about the simulator's catalogue: what wrong gold is left
is the chain's own, not the evidence's). ``--path``, ``--resolution``, ``--objects`` and
``--distractors`` set the simulated scenes (``eval-assets recording simulate``'s options).

Per family it prints cases made, cases rejected per reason, and the wrong-gold rate; per
recording the LiDAR objects (askable, named, marked) and, against the engine's truth, how many
names were right and wrong (a name counts for the truth object whose centre lies within 0.35 m
of the LiDAR object's).

    python benchmarks/evidence_quality.py --seeds 1201 --no-sample --sim-seeds 3301,3302 \\
        --frames 120 --evidence taught --path figure8 --resolution 1280x720 --objects 14 \\
        --distractors 3
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from dagster import DagsterInstance, materialize

from eval_assets.defs.assets.evidence_quality import evidence_quality
from eval_assets.defs.assets.frames import pointcloud_frames, rectified_frames
from eval_assets.defs.assets.perception import detections_masks
from eval_assets.defs.assets.tracks import object_tracks
from eval_assets.defs.assets.vqa import question_proposals, vqa_dataset
from eval_assets.defs.resources import PerceptionResource, ProjectStorage, QuestionAuthorResource
from eval_assets.evidence_quality import read_evidence_quality
from eval_assets.layout import StorageLayout
from eval_assets.schemas.evidence_quality import EvidenceQuality
from eval_assets.synth.stream import synthesize_recording
from eval_assets.tracks import read_object_tracks
from eval_assets.vqa.families import normalize_name
from eval_assets.vqa.spatial.truth import MARKED_GATE_M

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "recordings"


def measure(recordings: Path, key: str, root: Path,
            vocabulary: list[str] | None = None) -> EvidenceQuality:
    """Materialize ``key``'s chain and its evidence quality under ``root``; the record.

    With ``vocabulary`` the evidence is the truth files' (``truth`` detector and segmenter) and
    both the detector and the question author use that vocabulary; without it, the defaults.
    """
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", [key])
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(root))
    perception, author = PerceptionResource(), QuestionAuthorResource()
    if vocabulary is not None:
        perception = PerceptionResource(detector="truth", segmenter="truth",
                                        vocabulary=vocabulary)
        author = QuestionAuthorResource(vocabulary=vocabulary)
    result = materialize(
        [rectified_frames, pointcloud_frames, detections_masks, object_tracks,
         question_proposals, vqa_dataset, evidence_quality], partition_key=key,
        instance=instance, resources={"storage": storage, "perception": perception,
                                      "question_author": author})
    if not result.success:
        raise RuntimeError(f"materializing {key} failed")
    record = read_evidence_quality(StorageLayout(root).evidence_quality_dir(key))
    assert record is not None
    return record


def _f(value: float | None, fmt: str = ".3f") -> str:
    return "  -  " if value is None else format(value, fmt)


def show_objects(recordings: Path, key: str, root: Path) -> Counter[str]:
    """Print the LiDAR objects of ``key`` and their names against the truth; the counts."""
    tracks = read_object_tracks(StorageLayout(root).tracks_dir(key))
    counts: Counter[str] = Counter()
    if tracks.objects is None:
        return counts
    scene_path = recordings / f"{key}.scene.json"
    scene = json.loads(scene_path.read_text()) if scene_path.is_file() else {"objects": []}
    truth = [(o["name"], o["center_world"]) for o in scene["objects"]]
    truth += [(d.get("name", "distractor"), d["center_world"]) for d in scene.get("distractors", [])
              if "center_world" in d]
    for obj in tracks.objects.objects:
        counts["objects"] += 1
        if not obj.askable:
            continue
        counts["askable"] += 1
        near = [n for n, c in truth
                if math.dist(c[:2], obj.center_world[:2]) < MARKED_GATE_M]
        counts["matched" if near else "unmatched"] += 1
        if obj.name is None:
            counts["marked"] += 1
        else:
            counts["named right" if near and normalize_name(near[0]) == obj.name
                   else "named wrong"] += 1
    print(f"  LiDAR objects: {counts['objects']} ({counts['askable']} askable, "
          f"{counts['matched']} within {MARKED_GATE_M} m of a truth object); named right "
          f"{counts['named right']}, named wrong {counts['named wrong']}, marked "
          f"{counts['marked']}")
    return counts


def show(record: EvidenceQuality) -> None:
    """Print one record's figures."""
    det, tracks = record.detection, record.tracks
    assert det is not None and tracks is not None
    wrong, checked = record.wrong_totals()
    print(f"{record.recording}: {det.frames_checked} frames with truth")
    print(f"  detection: precision {_f(det.precision)}, recall {_f(det.recall)}, naming "
          f"accuracy {_f(det.naming_accuracy)}, mean mask IoU {_f(det.mean_mask_iou)} "
          f"({det.detections} detections, {det.matched} matched)"
          + (f"; named otherwise {det.confusions}" if det.confusions else ""))
    print(f"  tracks: {tracks.matched} of {tracks.tracks} matched; centre error median "
          f"{_f(tracks.centre_error_m_median)} m, p90 {_f(tracks.centre_error_m_p90)} m; "
          f"extent error median {_f(tracks.extent_error_m_median)} m, p90 "
          f"{_f(tracks.extent_error_m_p90)} m"
          + (f"; unmatched {[c.track_id for c in tracks.checks if c.truth_id is None]}"
             if tracks.matched < tracks.tracks else ""))
    rate = wrong / checked if checked else None
    print(f"  wrong gold: {wrong} of {checked} checked ({_f(rate, '.1%')})")
    for f in record.families:
        if not f.cases:
            continue
        reasons = Counter(w.reason for w in f.wrong_cases)
        print(f"    {f.family:28s} cases {f.cases:4d} checked {f.checked:4d} wrong {f.wrong:3d} "
              f"({_f(f.wrong_rate, '.1%')})" + (f"  {dict(reasons)}" if reasons else ""))
        if f.rejected:
            print(f"      rejected: {dict(sorted(f.rejected.items()))}")
        for w in f.wrong_cases[:3]:
            print(f"      {w.case_id}: gold {w.gold!r}, truth {w.truth!r} ({w.reason}"
                  f"{': ' + w.detail if w.detail else ''})")


def main(argv: list[str] | None = None) -> int:
    """Measure and print; exits 0 (no target is judged: these are figures to read)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1101,1102,1103")
    parser.add_argument("--frames", type=int, default=None)
    parser.add_argument("--sim-seeds", default="",
                        help="comma-separated seeds of simulated (PyBullet) recordings to add")
    parser.add_argument("--no-sample", action="store_true")
    parser.add_argument("--evidence", choices=("offline", "taught", "truth"),
                        default="offline",
                        help="simulated seeds' evidence (see the module docstring)")
    parser.add_argument("--path", default="loop", help="simulated drive: loop or figure8")
    parser.add_argument("--resolution", default="640x480")
    parser.add_argument("--objects", type=int, default=8)
    parser.add_argument("--distractors", type=int, default=1)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    seeds = [1101] if args.smoke else [int(s) for s in args.seeds.split(",") if s]
    sim_seeds = [] if args.smoke else [int(s) for s in args.sim_seeds.split(",") if s]
    frames = 6 if args.smoke else args.frames
    pooled: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="evidence-quality-") as tmp:
        work = Path(tmp)
        recordings = work / "recordings"
        recordings.mkdir()
        keys = []
        if not (args.no_sample or args.smoke):
            for name in ("sample.db", "sample.scene.json", "sample.truth.npz"):
                shutil.copyfile(SAMPLE / name, recordings / name)
            keys.append("sample")
        for seed in seeds:
            synthesize_recording(recordings / f"seed{seed}.db", profile="sample",
                                 scene_seed=seed, frames=frames)
            keys.append(f"seed{seed}")
        if sim_seeds:
            # Imported only when asked: the simulator needs pybullet, the rest of this does not.
            from eval_assets.sim.references import ReferenceViews
            from eval_assets.sim.simulate import SimConfig, simulate_recording
        for seed in sim_seeds:
            simulate_recording(recordings / f"sim{seed}.db", SimConfig(
                seed=seed, frames=frames or 120, path=args.path, resolution=args.resolution,
                objects=args.objects, distractors=args.distractors),
                references=ReferenceViews() if args.evidence == "taught" else None)
            keys.append(f"sim{seed}")
        catalog: list[str] | None = None
        if args.evidence == "truth" and sim_seeds:
            from eval_assets.sim.catalog import CATALOG
            catalog = list(CATALOG)
        for key in keys:
            record = measure(recordings, key, work / "store",
                             catalog if key.startswith("sim") else None)
            show(record)
            names = show_objects(recordings, key, work / "store")
            if key != "sample":
                pooled.update({f"names {k}": v for k, v in names.items()})
                for f in record.families:
                    pooled[f"{f.family} wrong"] += f.wrong
                    pooled[f"{f.family} checked"] += f.checked
                    pooled[f"{f.family} cases"] += f.cases
        if len(seeds) + len(sim_seeds) > 1:
            print(f"pooled over seeds {', '.join(map(str, [*seeds, *sim_seeds]))}:")
            for family in dict.fromkeys(k.rsplit(" ", 1)[0] for k in pooled
                                        if not k.startswith("names ")):
                n, w = pooled[f"{family} checked"], pooled[f"{family} wrong"]
                if n or pooled[f"{family} cases"]:
                    rate = f"{w / n:.1%}" if n else "-"
                    print(f"    {family:28s} cases {pooled[f'{family} cases']:4d}, wrong {w:3d} "
                          f"of {n:4d} ({rate})")
            print(f"    LiDAR objects: named right {pooled['names named right']}, named wrong "
                  f"{pooled['names named wrong']}, marked {pooled['names marked']}, askable "
                  f"{pooled['names askable']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
