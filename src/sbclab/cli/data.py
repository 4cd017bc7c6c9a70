"""`sbclab data generate`: the workloads' input, a module of its own because it runs on every worker for each
generated input and should load nothing else (the calibration check's statistics import scipy: a second of CPU)."""

import sys
from contextlib import nullcontext
from pathlib import Path

import click

from .. import atomic
from ..data import airline
from .values import size


@click.group("data")
def data_group():
    """Input data for the workloads."""


@data_group.command("generate")
@click.option("--bytes", "size_bytes", callback=size, required=True, help="How much to write, e.g. 1GB; whole lines only.")
@click.option("--seed", type=int, default=0, show_default=True, help="The same seed gives the same bytes.")
@click.option("--first-variant", type=click.IntRange(0), default=0, show_default=True,
              help="Where in the sequence of block variants to start (parts written in parallel use disjoint ranges).")
@click.option("--block-bytes", callback=size, default=None,
              help="Rows rendered once and rewritten per copy (default 32MiB); part of what makes the output.")
@click.option("--source", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A real airline CSV (e.g. 2006.csv) to append to itself instead of generating rows.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write (default: standard output).")
@click.option("--header", is_flag=True, help="Start with the ASA column names (the seeds' inputs did not strip it).")
def data_generate(size_bytes, seed, first_variant, block_bytes, source, output, header):
    """Airline-schema CSV (the 29 ASA Data Expo columns), deterministic for a seed."""
    with (atomic.open_for_write(output) if output else nullcontext(sys.stdout.buffer)) as out:
        if header:
            out.write((airline.HEADER + "\n").encode())
            size_bytes -= len(airline.HEADER) + 1
        if source:
            airline.append_source(source, out, size_bytes)
        else:
            airline.AirlineGenerator(seed=seed, block_bytes=block_bytes or airline.DEFAULT_BLOCK_BYTES).write(
                out, size_bytes, first_variant)
