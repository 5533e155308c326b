"""Records that cross a file boundary: one schema, one place."""
