"""Benchmarks, one module each: prepare input, run on an engine, validate the output, read counters."""
