"""The ``nightly_drift`` asset check, run by Dagster on a real (ephemeral) instance over kept
nightly results: WARN on a real drop, pass on a steady model and before a second night."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import AssetCheckSeverity, AssetSelection, DagsterInstance, materialize

from eval_assets.defs.assets.metrics import benchmark_results
from eval_assets.defs.automation_conditions import NIGHT_TAG
from eval_assets.defs.checks import nightly_drift
from eval_assets.defs.definitions import defs
from eval_assets.defs.resources import ProjectStorage
from eval_assets_tests.report.test_drift_section import NIGHTS, write_nights

# Declared models (data/models.yaml), so the partitions exist.
STEADY, SLIPPING = "blind-smollm2", "random"


def run_check(root: Path, model: str, night: str | None) -> Any:
    """Only the check (its asset is not rerun) on partition (rec1, ``model``), as a run of that
    night would evaluate it. The partition goes in as run tags: this Dagster refuses a
    ``partition_key`` for a checks-only selection."""
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec1", "rec2"])
    tags = {"dagster/partition": f"{model}|rec1", "dagster/partition/recording": "rec1",
            "dagster/partition/model": model, **({NIGHT_TAG: night} if night else {})}
    result = materialize([benchmark_results, nightly_drift],
                         selection=AssetSelection.checks(nightly_drift), instance=instance,
                         resources={"storage": ProjectStorage(storage_root=str(root))},
                         tags=tags)
    assert result.success
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def test_the_definitions_hold_a_drift_check_that_warns() -> None:
    checks = [k for k in defs.resolve_asset_graph().asset_check_keys if "drift" in k.name]
    assert [(k.asset_key.to_user_string(), k.name) for k in checks] == [
        ("benchmark_results", "nightly_drift")]


def test_a_real_drop_warns_and_names_it(tmp_path: Path) -> None:
    write_nights(tmp_path, steady=STEADY, slipping=SLIPPING)
    evaluation = run_check(tmp_path, SLIPPING, NIGHTS[2])
    assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
    meta = {k: v.value for k, v in evaluation.metadata.items()}
    assert meta["nights_compared"] == f"{NIGHTS[1]} -> {NIGHTS[2]}"
    assert meta["n_common"] == 600  # this recording's cases only
    assert {f["family"] for f in meta["flagged"]} == {"all families", "counting", "presence"}
    assert "drift in all families -30.0 pts" in evaluation.description
    # Without a night tag (an automation run) the latest kept night is the one checked.
    assert not run_check(tmp_path, SLIPPING, None).passed


def test_a_steady_model_an_earlier_night_and_no_history_pass(tmp_path: Path) -> None:
    write_nights(tmp_path, steady=STEADY, slipping=SLIPPING)
    steady = run_check(tmp_path, STEADY, NIGHTS[2])
    assert steady.passed and "no real change" in steady.description
    # Night 2 of the slipping model, rechecked after night 3 was kept: night 2 vs night 1.
    earlier = run_check(tmp_path, SLIPPING, NIGHTS[1])
    assert earlier.passed and f"{NIGHTS[0]} -> {NIGHTS[1]}" in earlier.description
    first = run_check(tmp_path, SLIPPING, NIGHTS[0])
    assert first.passed and "no earlier kept night" in first.description
    empty = run_check(tmp_path / "elsewhere", SLIPPING, None)
    assert empty.passed and empty.description == "no kept nightly results yet"
