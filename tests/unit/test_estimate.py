"""Estimates of runs still to do: from stored runs where there are some, else from the seeds."""

import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from sbclab.analysis import estimate, reference
from sbclab.cli.bench import _estimated_parameters
from sbclab.cluster import spec as cluster_spec
from sbclab.results.store import load

from .test_analysis import RESULTS, TERASORT


def _stored(tmp_path: Path, walls: dict[tuple[int, int], float], gap_s: float = 30.0) -> list:
    """Copies of the recorded TeraSort at (size, workers) with the given wall times, one after another."""
    raw = json.loads((RESULTS / "runs" / f"{TERASORT}.json").read_text())
    start = datetime.fromisoformat(raw["started_at"])
    runs = []
    for i, ((size, workers), wall) in enumerate(walls.items()):
        finished = start + timedelta(seconds=wall)
        doc = {**raw, "run_id": f"{TERASORT}-{i}", "wall_time_s": wall, "started_at": start.isoformat(),
               "finished_at": finished.isoformat(), "parameters": {**raw["parameters"], "size_bytes": size},
               "cluster": {**raw["cluster"], "workers": workers}}
        start = finished + timedelta(seconds=gap_s)
        path = tmp_path / f"{doc['run_id']}.json"
        path.write_text(json.dumps(doc))
        runs.append(load(path))
    return runs


def test_the_fit_separates_the_fixed_part_from_the_parallel_one():
    fixed, per_unit = estimate.fit([(1.0, 30.0), (2.0, 50.0), (4.0, 90.0)])
    assert fixed == pytest.approx(10.0) and per_unit == pytest.approx(20.0)
    assert estimate.fit([(2.0, 40.0)]) == (0.0, 20.0)


def test_stored_runs_come_first_and_are_rescaled_to_the_planned_factor(tmp_path):
    runs = _stored(tmp_path, {(64 * 10**6, 2): 100.0, (128 * 10**6, 2): 160.0})
    factor = runs[0].scale.factor
    planned = estimate.Planned("terasort", "hadoop", 256 * 10**6, 2, "rpi5b", {}, factor / 2)
    [found] = estimate.estimate([planned], runs, {})
    # 40 s fixed + 60 s per 64 MB at the stored factor; at half that factor everything takes twice as long.
    assert found.seconds == pytest.approx(2 * (40 + 4 * 60), rel=1e-6)
    assert "2 stored run(s)" in found.source


def test_without_stored_runs_the_seeds_times_are_used_and_named(tmp_path):
    pi = estimate.Planned("pi", "hadoop", None, 2, "rpi5b", {"maps": 100, "samples_per_map": 10_000}, 1.0)
    [found] = estimate.estimate([pi], [], {"pi": {"maps": 100, "samples_per_map": 10_000}})
    assert 100 < found.seconds < 200  # the 2026 seed printed 131-132 s at 2 workers
    assert "published" in found.source and "rpi5b" in found.source
    [other] = estimate.estimate([estimate.Planned("terasort", "hadoop", 10**9, 2, "rpi5b", {}, 1.0)], [], {})
    assert "scaled to rpi5b by sysbench" in other.source
    [none] = estimate.estimate([estimate.Planned("grep", "spark", 10**9, 2, "rpi5b", {}, 1.0)], [], {})
    assert none.seconds is None and "no stored or published run" in none.source


def test_the_time_between_runs_is_taken_from_stored_ones(tmp_path):
    runs = _stored(tmp_path, {(64 * 10**6, 2): 100.0, (128 * 10**6, 2): 160.0, (256 * 10**6, 2): 250.0}, gap_s=42)
    assert estimate.between_runs(runs).seconds == pytest.approx(42, abs=0.01)
    assert estimate.between_runs([]) is None


def _baun_cells(scale: float = 1.0) -> list:
    """Baun's Table 7: HPL on 1, 2, 4, 8 RPi B nodes at six memory shares, with the N he printed."""
    rows = [p for p in reference.published() if p.seed == "baun2016" and p.table == "Table 7" and p.metric == "wall_time"]
    return [(p.seconds, estimate.Planned("hpl", "mpi", None, 8, "rpi1b",
                                         {"nodes": p.dimensions["workers"], "n": p.dimensions["n"], "nb": 32,
                                          "memory_fraction": p.dimensions["memory_utilised_pct"] / 100}, scale))
            for p in rows]


def test_hpl_is_timed_by_its_operation_count_at_the_seeds_rmax():
    cells = _baun_cells()
    found = estimate.estimate([planned for _, planned in cells], [], {})
    # HPL's Gflops are its 2/3 N^3 + 3/2 N^2 operations over its time, so each of Baun's times comes back.
    for (published, _), e in zip(cells, found):
        assert e.seconds == pytest.approx(published, rel=0.005) and "baun2016 Table 7" in e.source
    total = sum(e.seconds for e in found)
    assert 15 * 3600 < total < 17 * 3600  # about 16 h a repetition, as the seed's own times add up to
    [half] = estimate.estimate([replace(cells[0][1], scale_factor=0.5)], [], {})
    assert half.seconds == pytest.approx(2 * found[0].seconds)


def test_hpl_without_a_seeds_row_for_its_cell_takes_the_nearest_or_the_seeds_efficiency():
    [other_share] = estimate.estimate([estimate.Planned("hpl", "mpi", None, 8, "rpi1b",
                                                        {"nodes": 8, "n": 18_000, "memory_fraction": 0.78}, 1.0)], [], {})
    assert "1.367 Gflops on 8 node(s) at 80 % of memory" in other_share.source  # the nearest share
    [three] = estimate.estimate([estimate.Planned("hpl", "mpi", None, 8, "rpi1b",
                                                  {"nodes": 3, "n": 10_000, "memory_fraction": 0.8}, 1.0)], [], {})
    assert "x that for 3" in three.source and three.seconds > 0
    [pi5] = estimate.estimate([estimate.Planned("hpl", "mpi", None, 2, "rpi5b",
                                                {"nodes": 2, "n": 40_000, "memory_fraction": 0.8}, 1.0)], [], {})
    assert "efficiency on rpi1b" in pi5.source and "rpi5b's Rpeak of 153.6 Gflops" in pi5.source
    [unknown] = estimate.estimate([estimate.Planned("hpl", "mpi", None, 2, "rpi1b", {"nodes": 2}, 1.0)], [], {})
    assert unknown.seconds is None and "problem size" in unknown.source


def test_stored_hpl_runs_give_the_gflops_at_scale_1(tmp_path):
    raw = json.loads((RESULTS / "runs" / f"{TERASORT}.json").read_text())
    doc = {**raw, "run_id": "hpl-stored", "workload": "hpl", "engine": "mpi",
           "parameters": {"nodes": 2, "n": 4000, "nb": 32, "memory_fraction": 0.8},
           "result": {"rmax_gflops": 0.2 * raw["scale"]["factor"]},
           "cluster": {**raw["cluster"], "board": "rpi1b", "storage": "sd-baun"}}
    path = tmp_path / "hpl-stored.json"
    path.write_text(json.dumps(doc))
    stored = load(path)
    assert stored.headline
    [found] = estimate.estimate([estimate.Planned("hpl", "mpi", None, 8, "rpi1b", {"nodes": 2, "n": 8000}, 0.5)],
                                [stored], {})
    assert "1 stored HPL run(s) on 2 node(s) of rpi1b" in found.source
    assert found.seconds == pytest.approx(estimate.hpl_operations(8000) / 0.2e9 / 0.5)


def test_the_problem_size_estimated_is_the_one_the_run_will_solve():
    shape = cluster_spec.build(backend="emulated", board="rpi1b", storage="sd-baun", workers=8, cores=2,
                               memory_bytes=64 * 2**30)
    cell = SimpleNamespace(workload="hpl", workers=8, parameters={"nodes": 4, "memory_fraction": 0.8, "nb": 32})
    assert _estimated_parameters(cell, shape)["n"] == 13_024  # Baun's own worked example of Eq. 2


def test_a_workload_nobody_timed_is_estimated_as_the_one_that_stands_in_for_it_and_says_so():
    grep = estimate.Planned("grep", "spark", 10**9, 2, "rpi5b", {}, 1.0)
    [found] = estimate.estimate([grep], [], {}, like={"grep": "wordcount"})
    [wordcount] = estimate.estimate([replace(grep, workload="wordcount")], [], {})
    assert found.seconds == pytest.approx(wordcount.seconds)
    assert found.source.startswith("as wordcount's (none of grep)")
    [alone] = estimate.estimate([grep], [], {}, like={"grep": "no-such-workload"})
    assert alone.seconds is None
