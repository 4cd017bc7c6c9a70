"""Runs as data: a versioned JSON document per run, stored atomically, read back for every report."""
