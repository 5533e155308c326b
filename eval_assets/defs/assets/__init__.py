"""Software-defined assets, one module per stage of the lineage."""
