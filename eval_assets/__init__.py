"""eval_assets: robot recordings to VLM benchmarks, as Dagster assets."""
