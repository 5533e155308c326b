"""The nightly schedule asks every model afresh on every recording, tagged with the night."""

from __future__ import annotations

import datetime as dt

from dagster import SkipReason, build_schedule_context, instance_for_test

from eval_assets.defs.automation import nightly_benchmark
from eval_assets.defs.automation_conditions import NIGHT_TAG
from eval_assets.defs.partitions import model_partitions


def _today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


def _tonight() -> dt.datetime:
    """Today's scheduled tick (02:00 UTC), as the daemon evaluates it."""
    return dt.datetime.now(dt.UTC).replace(hour=2, minute=0, second=0, microsecond=0)


def test_nightly_requests_every_recording_model_pair_once() -> None:
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("recordings", ["sample", "hallway"])
        before = _today()
        requests = nightly_benchmark(build_schedule_context(
            instance=instance, scheduled_execution_time=_tonight()))
        night = _today()
    assert night == before, "the test ran across midnight UTC; run it again"
    models = model_partitions.get_partition_keys()
    assert len(models) >= 2
    got = sorted((r.partition_key.keys_by_dimension["recording"],
                  r.partition_key.keys_by_dimension["model"]) for r in requests)
    assert got == sorted((rec, m) for rec in ("hallway", "sample") for m in models)
    assert len({r.run_key for r in requests}) == len(requests)
    assert all(r.run_key.startswith(f"{night}:") for r in requests)
    # The night tag makes the answers fresh and keeps the night's results (history/<night>/).
    assert all(r.tags[NIGHT_TAG] == night for r in requests)
    # Each run names its assets, the job's whole selection: the automation conditions then see
    # the night's updates as executed with their downstream assets, and launch nothing after.
    from eval_assets.defs.definitions import defs
    from eval_assets.defs.jobs import model_benchmark_job

    job_assets = model_benchmark_job.selection.resolve(defs.resolve_asset_graph())
    assert all(set(r.asset_selection or ()) == job_assets for r in requests)


def test_nightly_skips_without_recordings() -> None:
    with instance_for_test() as instance:
        context = build_schedule_context(instance=instance,
                                         scheduled_execution_time=dt.datetime(2026, 12, 3, 2, 0))
        assert isinstance(nightly_benchmark(context), SkipReason)


def test_a_second_tick_of_the_same_night_launches_only_what_is_missing() -> None:
    """Run keys dedupe within one tick only; a cell launched for the night is not run again."""
    from dagster._core.test_utils import create_run_for_test

    night, today = _tonight(), _today()
    models = model_partitions.get_partition_keys()
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("recordings", ["alpha"])
        create_run_for_test(instance, job_name="model_benchmark", tags={
            NIGHT_TAG: today, "dagster/partition": f"{models[0]}|alpha"})
        again = nightly_benchmark(build_schedule_context(instance=instance,
                                                         scheduled_execution_time=night))
        assert [r.run_key for r in again] == [f"{today}:alpha:{m}" for m in models[1:]]
        for model in models[1:]:
            create_run_for_test(instance, job_name="model_benchmark", tags={
                NIGHT_TAG: today, "dagster/partition": f"{model}|alpha"})
        done = nightly_benchmark(build_schedule_context(instance=instance,
                                                        scheduled_execution_time=night))
        assert isinstance(done, SkipReason)


def test_a_tick_previewed_days_back_is_filed_under_the_night_it_runs_with_the_drift_check(
        ) -> None:
    """The UI's tick preview evaluates the tick its dialog picked (days back) and launches the
    requests as they are: with the checks they name and no other."""
    from eval_assets.defs.definitions import defs
    from eval_assets.defs.jobs import model_benchmark_job

    picked = _tonight() - dt.timedelta(days=9)
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("recordings", ["alpha"])
        today = _today()
        requests = nightly_benchmark(build_schedule_context(
            instance=instance, scheduled_execution_time=picked))
    assert requests and all(r.tags[NIGHT_TAG] == today for r in requests)
    assert all(r.run_key.startswith(f"{today}:") for r in requests)
    # The tick it was requested for stays visible beside the night it is filed under.
    assert all(r.tags.get("eval_assets/tick") == picked.isoformat() for r in requests)
    # Every check the daemon runs with the job's assets is named, nightly_drift among them.
    graph = defs.resolve_asset_graph()
    job_assets = model_benchmark_job.selection.resolve(graph)
    daemon_checks = {k for k in graph.asset_check_keys if k.asset_key in job_assets}
    assert "nightly_drift" in {k.name for k in daemon_checks}
    assert all(set(r.asset_check_keys or ()) == daemon_checks for r in requests)
