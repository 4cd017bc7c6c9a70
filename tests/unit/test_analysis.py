"""Statistics, derived figures and verdicts on recorded runs and on hand-made numbers."""

import json
import math
from pathlib import Path

import pytest

from sbclab.analysis import cells, derived, stats, verdicts
from sbclab.results.store import load

RESULTS = Path(__file__).parent / "fixtures" / "results"
TERASORT = "20261122T200706Z-hadoop-terasort-2369"


def test_student_t_interval_matches_the_table_value():
    e = stats.estimate([10.0, 12.0, 11.0, 13.0, 9.0])
    assert e.n == 5 and e.mean == 11.0 and e.median == 11.0
    assert e.sd == pytest.approx(math.sqrt(2.5))
    # t(0.975, 4) = 2.776 (any statistics table); a positive quantity's interval is on the log scale.
    spread = 2.776 * math.sqrt(2.5) / math.sqrt(5) / 11.0
    assert e.ci_low == pytest.approx(11.0 * math.exp(-spread), rel=1e-3)
    assert e.ci_high == pytest.approx(11.0 * math.exp(spread), rel=1e-3)
    signed = stats.estimate([-1.0, 1.0, 3.0])  # may cross zero: the Student interval as it is
    assert signed.half_width == pytest.approx(4.303 * 2 / math.sqrt(3), rel=1e-3)


def test_intervals_of_positive_quantities_stay_positive():
    # Two runs far apart: the Student interval of the mean would reach below zero.
    a, b = stats.estimate([40.0, 120.0]), stats.estimate([30.0, 58.0])
    assert 0 < a.ci_low < a.mean < a.ci_high
    speedup = stats.ratio(a, b)
    assert 0 < speedup.ci_low < speedup.value < speedup.ci_high


def test_one_value_has_no_interval_and_is_warned_about():
    e = stats.estimate([42.0])
    assert e.sd is None and e.ci_low is None
    assert "repetitions" in stats.spread_warning(e)


def test_a_wide_spread_is_warned_about_with_advice():
    advice = stats.spread_warning(stats.estimate([100.0, 130.0, 80.0]))
    assert "spread" in advice and "fstrim" in advice and "power supply" in advice
    assert stats.spread_warning(stats.estimate([100.0, 101.0, 99.0])) is None


def test_ratio_carries_both_intervals():
    a, b = stats.estimate([100.0, 102.0, 98.0]), stats.estimate([50.0, 51.0, 49.0])
    r = stats.ratio(a, b)
    assert r.value == pytest.approx(2.0)
    log_half = lambda e: math.log(e.ci_high / e.ci_low) / 2  # noqa: E731
    expected = math.hypot(log_half(a), log_half(b))
    assert math.log(r.ci_high / r.value) == pytest.approx(expected)
    assert math.log(r.value / r.ci_low) == pytest.approx(expected)


def test_the_geometric_mean_of_ratios_averages_their_logarithms_and_their_widths_in_quadrature():
    two, half = stats.Derived(2.0, 1.0, 4.0), stats.Derived(0.5, 0.25, 1.0)
    mean = stats.geometric_mean([two, half])
    assert mean.value == pytest.approx(1.0)
    # Each is a factor of 2 either way (log half-width ln 2); the mean of two: ln 2 * sqrt(2) / 2.
    assert math.log(mean.ci_high) == pytest.approx(math.log(2) / math.sqrt(2))
    assert stats.geometric_mean([two]) == two
    assert stats.geometric_mean([two, stats.Derived(3.0)]).ci_low is None, "no interval from one without"


def test_energy_cost_per_year_reproduces_bauns_example():
    # Baun 2016, after Eq. 1: 26 W around the clock at 0.25 EUR/kWh is about 56.98 EUR a year.
    assert derived.energy_cost_per_year(26, derived.Costs()) == pytest.approx(56.98, abs=0.01)


def _stored(tmp_path: Path, doc: dict):
    """A run document written and read back as the store reads it."""
    path = tmp_path / f"{doc['run_id']}.json"
    path.write_text(json.dumps(doc))
    return load(path)


def _results_with_repetitions(tmp_path: Path, times_by_workers: dict[int, list[float]]) -> list:
    """Copies of the recorded TeraSort with other worker counts and wall times."""
    raw = json.loads((RESULTS / "runs" / f"{TERASORT}.json").read_text())
    return [_stored(tmp_path, {**raw, "run_id": f"{TERASORT}-{workers}-{i}", "wall_time_s": t,
                               "cluster": {**raw["cluster"], "workers": workers}})
            for workers, times in times_by_workers.items() for i, t in enumerate(times)]


def test_speedup_and_efficiency_from_cells(tmp_path):
    runs = _results_with_repetitions(tmp_path, {1: [100.0, 104.0, 96.0], 2: [52.0, 50.0, 54.0], 4: [30.0, 31.0, 29.0]})
    grouped = cells.group(runs)
    assert [c.key.workers for c in grouped] == [1, 2, 4]
    s = {c.cell.workers: c for c in derived.speedups(grouped)}
    assert s[2].value.value == pytest.approx(100 / 52)
    assert s[4].efficiency.value == pytest.approx(100 / 30 / 4)
    assert s[4].value.ci_low < s[4].value.value < s[4].value.ci_high


def test_flagged_and_failed_runs_are_kept_apart_with_the_reason(tmp_path):
    runs = _results_with_repetitions(tmp_path, {2: [50.0, 51.0, 52.0]})
    runs[1].exit_status = 1
    runs[2].validity.valid = False
    cell, = cells.group(runs)
    assert len(cell.runs) == 1 and len(cell.excluded) == 2
    assert cells.exclusion_reason(runs[1]) == "exit status 1"
    assert cells.exclusion_reason(runs[2]).startswith("validation failed")


def test_runs_of_different_clusters_never_share_a_cell(tmp_path):
    runs = _results_with_repetitions(tmp_path, {2: [50.0, 51.0]})
    runs[1].host = {**runs[1].host, "hostname": "another-host"}
    assert len(cells.group(runs)) == 2
    assert len(cells.clusters_in(runs)) == 2


def test_figures_of_a_recorded_terasort():
    run = load(RESULTS / "runs" / f"{TERASORT}.json")
    f = derived.figures(cells.group([run])[0], derived.Costs())
    size = run.parameters["size_bytes"]
    assert f.throughput.mean == pytest.approx(size / run.wall_time_s)
    power = run.measurements.cluster_power
    assert f.perf_per_watt.mean == pytest.approx(size / run.wall_time_s / power.avg_w)
    assert f.records_per_joule.mean == pytest.approx(size / 100 / power.energy_j)
    assert f.energy_per_gb.mean == pytest.approx(power.energy_j / (size / 1e9))
    # three rpi5b boards at 80 USD, three NVMe at 60, three supplies at 12, one switch at 20
    assert f.price.usd == pytest.approx(3 * 80 + 3 * 60 + 3 * 12 + 20)
    assert f.power_estimated


def test_verdicts_name_the_saturated_resource(tmp_path):
    run = load(RESULTS / "runs" / f"{TERASORT}.json")
    worker = run.measurements.nodes["worker1"]
    worker.cpu_busy_pct_mean, worker.disk_busy_pct_mean, worker.cpu_iowait_pct_mean = 95.0, 10.0, 1.0
    v = verdicts.verdict(run)
    assert v.kind == "cpu" and "95 %" in v.sentence
    worker.cpu_busy_pct_mean, worker.disk_busy_pct_mean, worker.cpu_iowait_pct_mean = 30.0, 90.0, 35.0
    assert verdicts.verdict(run).kind == "storage"
    worker.swap_bytes = 50 * 2**20
    assert verdicts.verdict(run).kind == "memory"


def test_a_run_without_samples_has_no_verdict_but_says_so():
    run = load(RESULTS / "runs" / f"{TERASORT}.json")
    run.measurements = None
    v = verdicts.verdict(run)
    assert v.kind == "unknown" and "No per-node samples" in v.sentence


def test_with_its_series_a_verdict_is_judged_over_the_job_not_the_margins():
    run = load(RESULTS / "runs" / f"{TERASORT}.json")
    series = json.loads((RESULTS / "series" / f"{TERASORT}.json").read_text())
    whole = verdicts.verdict(run)
    job = verdicts.verdict(run, series)
    assert job.figures["cpu_busy_pct"] > whole.figures["cpu_busy_pct"]
    assert job.kind == "cpu"


def test_a_run_whose_tasks_were_spread_unevenly_is_called_scheduler_limited():
    run = load(RESULTS / "runs" / f"{TERASORT}.json")
    for name, busy in (("worker1", 50.0), ("worker2", 20.0)):
        run.measurements.nodes[name].cpu_busy_pct_mean = busy
    run.measurements.tasks_by_worker = {"worker1": 12, "worker2": 4}
    v = verdicts.verdict(run)
    assert v.kind == "scheduler" and "worker1 12, worker2 4" in v.sentence and v.label == "scheduler-limited"
    run.measurements.tasks_by_worker = {"worker1": 8, "worker2": 8}  # even tasks: the hardware's verdict stands
    assert verdicts.verdict(run).kind != "scheduler"


def _setup_runs(tmp_path: Path, setups: dict[tuple[str, str], list[float]]) -> list:
    """Copies of the recorded TeraSort in other layouts and runtimes, with other wall times; the
    datanode judged (the master when it runs tasks, else worker1) writes as much as the run takes."""
    raw = json.loads((RESULTS / "runs" / f"{TERASORT}.json").read_text())
    runs = []
    for (layout, runtime), times in setups.items():
        for i, t in enumerate(times):
            nodes = [{**n, "runs_tasks": n["role"] == "worker" or layout == "master-is-worker"}
                     for n in raw["cluster"]["nodes"]]
            judged = "master" if layout == "master-is-worker" else "worker1"
            measured = {name: {**figures, "disk_write_bytes": int(t * 1e6) if name == judged else 1,
                               "mem_used_mean_bytes": int(t * 2e6) if name == judged else 1}
                        for name, figures in raw["measurements"]["nodes"].items()}
            runs.append(_stored(tmp_path, {
                # Each cluster makes its own TeraGen input: which one does not define the cell.
                **raw, "run_id": f"{TERASORT}-{layout}-{runtime}-{i}", "wall_time_s": t,
                "parameters": {**raw["parameters"], "input_run_id": f"teragen-of-{layout}-{runtime}"},
                "cluster": {**raw["cluster"], "layout": layout, "runtime": runtime, "nodes": nodes},
                "measurements": {**raw["measurements"], "nodes": measured}}))
    return runs


def test_a_container_overhead_and_a_layout_ratio_come_with_the_datanodes_resources(tmp_path):
    runs = _setup_runs(tmp_path, {("separate-master", "native"): [100.0, 102.0, 98.0],
                                  ("separate-master", "container"): [110.0, 112.0, 108.0],
                                  ("master-is-worker", "native"): [130.0, 128.0, 132.0]})
    grouped = cells.group(runs)
    assert sorted(c.key.setup for c in grouped) == ["", "container", "master-is-worker"]
    found = {c.kind: c for c in derived.setup_ratios(grouped)}
    assert set(found) == {"container overhead", "layout ratio"}
    assert found["container overhead"].value.value == pytest.approx(1.1)
    assert found["container overhead"].value.ci_low < 1.1 < found["container overhead"].value.ci_high
    assert found["layout ratio"].value.value == pytest.approx(1.3) and found["layout ratio"].baseline.setup == ""
    resources = {c.kind: c for c in derived.datanode_resources(grouped)}
    # The combined master's writes and memory against worker1's with a master of its own.
    assert resources["datanode writes"].value.value == pytest.approx(1.3)
    assert resources["datanode memory"].value.value == pytest.approx(1.3)
    assert resources["datanode writes"].note == "on master against worker1"


def test_a_stack_ratio_sets_the_current_stack_beside_the_seeds():
    assert derived._setup_kind("current", "") == "stack ratio"
    assert derived._setup_kind("container current", "current") == "container overhead"
    assert derived._setup_kind("master-is-worker current", "current") == "layout ratio"
    assert derived._setup_kind("standalone", "") == "setup ratio"
