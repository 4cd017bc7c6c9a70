"""Estimates of runs still to do: from stored runs where there are some, else from the seeds."""

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from sbclab.analysis import estimate
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
