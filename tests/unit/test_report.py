"""The report, its tables and the query command, built from recorded runs; bad results directories."""

import csv
import errno
import json
import shutil
from pathlib import Path

import pytest

from sbclab import atomic, cli
from sbclab.errors import SbclabError
from sbclab.report import build, html, plots, tables
from sbclab.analysis import query
from sbclab.results import summary
from sbclab.results.index import read_summaries
from sbclab.results.store import read_runs

RESULTS = Path(__file__).parent / "fixtures" / "results"


@pytest.fixture
def results(tmp_path):
    target = tmp_path / "results"
    shutil.copytree(RESULTS, target)
    return target


def test_a_report_from_recorded_runs_writes_every_output(results, tmp_path):
    report = build.build(results)
    written = html.write(report, tmp_path / "out")
    page = written["html"].read_text()
    assert page.startswith("<!DOCTYPE html>") and "http://" not in page and "https://" not in page
    assert page.count("data:image/png;base64,") >= 3
    for run in report.runs:
        assert f'data-run="{run.run_id}"' in page
        assert f"{run.wall_time_s:,.2f}" in page
    assert "emulated" in page
    everything = json.loads(written["json"].read_text())
    assert {"cells", "comparisons", "runs", "published", "warnings"} <= set(everything)
    with open(written["cells"]) as handle:
        rows = list(csv.DictReader(handle))
    assert {r["workload"] for r in rows} == {"teragen", "terasort", "pi"}
    assert "## Cells" in written["markdown"].read_text()


def test_the_warnings_come_first_and_say_emulated_and_too_few_runs(results):
    report = build.build(results)
    assert report.warnings[0].startswith("Emulated results")
    assert any("only 1 valid run" in w for w in report.warnings)


def test_the_published_pi_time_is_set_beside_the_users(results):
    # The recorded Spark Pi is 100 slices of 10,000 points; the seeds' is SparkPi's 10,000 slices of 100,000.
    assert not [m for m in build.build(results).references if m.figures.cell.key.workload == "pi"]
    for path in (results / "runs").glob("*spark-pi*.json"):
        doc = json.loads(path.read_text())
        doc["parameters"] = {**doc["parameters"], "maps": 10000, "samples_per_map": 100000, "samples": 10**9}
        path.write_text(json.dumps(doc))
    report = build.build(results)
    pi = [m for m in report.references if m.figures.cell.key.workload == "pi"]
    assert pi and pi[0].published.source == "leepark2026 Table 17"
    assert pi[0].ratio == pytest.approx(pi[0].figures.wall_time.mean / pi[0].published.seconds)


def test_runs_of_two_clusters_are_said_to_be_mixed(results):
    path = next((results / "runs").glob("*terasort*.json"))
    doc = json.loads(path.read_text())
    doc.update(run_id=doc["run_id"] + "-other", host={**doc["host"], "hostname": "elsewhere"})
    (results / "runs" / f"{doc['run_id']}.json").write_text(json.dumps(doc))
    report = build.build(results)
    assert "2 different clusters" in report.warnings[0]


def test_an_empty_or_foreign_directory_is_refused_with_advice(tmp_path):
    with pytest.raises(SbclabError, match="no runs/ folder"):
        build.build(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(SbclabError, match="holds no runs"):
        build.build(tmp_path)
    with pytest.raises(SbclabError, match="no results directory"):
        build.build(tmp_path / "missing")


def test_a_document_from_a_newer_schema_is_refused(results):
    path = next((results / "runs").glob("*.json"))
    doc = json.loads(path.read_text())
    doc["schema_version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(SbclabError, match="schema version 99"):
        build.build(results)


def test_a_foreign_json_file_among_the_runs_is_named_first_and_the_runs_reported(results):
    (results / "runs" / "notes.json").write_text('{"hello": "world"}')
    report = build.build(results)
    assert "notes.json (no schema version" in report.warnings[0] and len(report.runs) == 3


@pytest.mark.parametrize("damage", [b"[]", b"null", b'{"nodes": "caf\xe9"}', b"{cut sho"])
def test_a_damaged_series_leaves_the_report_of_its_run(results, tmp_path, damage):
    for path in (results / "series").glob("*.json"):
        path.write_bytes(damage)
    written = html.write(build.build(results), tmp_path / "out")
    assert written["html"].exists()


def _said(argv: list, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return done.value.code, out.out + out.err


def test_a_report_into_a_folder_that_cannot_be_written_is_a_sentence(results, tmp_path, capsys, monkeypatch):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    status, said = _said(["report", results, "--out", a_file / "report"], capsys)
    assert status == 2 and f"error: Cannot write the report into {a_file / 'report'}: Not a directory." in said
    assert "Give --out a folder you can write to." in said and "Traceback" not in said

    def read_only(*args, **kwargs):  # as mkstemp fails on a read-only filesystem, for root too
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    status, said = _said(["report", results, "--out", tmp_path / "ro"], capsys)
    assert status == 2 and "Read-only file system." in said and "Traceback" not in said
    status, said = _said(["results", "export", results, "--no-report", "--bundle", tmp_path / "set.tar.gz"], capsys)
    assert status == 2 and f"Cannot write the bundle {tmp_path / 'set.tar.gz'}: Read-only file system." in said


def test_query_examples_run_on_recorded_runs(results):
    summaries, _ = read_summaries(results)
    for _, sql in query.EXAMPLES:
        columns, rows = query.run_sql(summaries, sql)
        assert columns and rows
    columns, rows = query.run_sql(summaries, "SELECT count(*) FROM nodes")
    assert rows[0][0] == sum(len(r.measurements.nodes) for r in read_runs(results)[0])


def test_a_bad_query_says_which_tables_exist(results):
    with pytest.raises(SbclabError, match="runs, nodes, published"):
        query.run_sql(read_summaries(results)[0], "SELECT * FROM nowhere")


def _other_cluster(results) -> None:
    """Every stored run again, as if from a second host."""
    for path in list((results / "runs").glob("*.json")):
        doc = json.loads(path.read_text())
        doc.update(run_id=doc["run_id"] + "-other", host={**doc["host"], "hostname": "elsewhere"})
        (results / "runs" / f"{doc['run_id']}.json").write_text(json.dumps(doc))


def test_cells_of_two_clusters_are_told_apart_in_every_table(results, tmp_path):
    one = build.build(results)
    assert all("[" not in row["cell"] for row in tables.cell_rows(one)), "one cluster: labels stay short"
    _other_cluster(results)
    report = build.build(results)
    labels = [row["cell"] for row in tables.cell_rows(report)]
    assert len(labels) == len(set(labels)) == 2 * len(tables.cell_rows(one))
    assert any("elsewhere" in label for label in labels)
    written = html.write(report, tmp_path / "out")
    summary = written["markdown"].read_text()
    assert "| cluster |" in summary and "elsewhere" in summary
    assert all(label in written["html"].read_text() for label in labels)


def test_the_warnings_name_the_node_whose_power_source_failed_and_why(results, tmp_path):
    path = next((results / "runs").glob("*terasort*.json"))
    doc = json.loads(path.read_text())
    doc["measurements"]["power"]["worker2"]["notes"] = [
        "http-plug unavailable: the plug at http://10.0.0.7/status gave no reading (ConnectTimeout); "
        "the model estimate is used instead"]
    # A board without profile watts has no figure at all when its source fails: only the run's notes say so.
    del doc["measurements"]["power"]["worker1"]
    doc["measurements"]["notes"].append("worker1: rapl unavailable: no RAPL package domain under /sys/class/powercap")
    path.write_text(json.dumps(doc))
    report = build.build(results)
    estimated = next(w for w in report.warnings if w.startswith("Power is estimated"))
    assert "configured source of master, worker1, worker2" in estimated and "failed for worker1, worker2" in estimated
    failed = next(w for w in report.warnings if w.startswith("A configured power source gave no readings"))
    assert (f"worker2 (run {doc['run_id']}): http-plug unavailable: the plug at http://10.0.0.7/status gave no "
            "reading (ConnectTimeout); the model estimate stands in") in failed
    assert "worker1 (run " in failed and "rapl unavailable: no RAPL package domain" in failed
    written = html.write(report, tmp_path / "out")
    assert "http://10.0.0.7/status" in written["markdown"].read_text()
    assert "http://10.0.0.7/status" in written["html"].read_text()


def test_a_run_with_an_oom_kill_shows_each_nodes_memory_and_is_excluded_naming_the_node(results, tmp_path):
    path = next((results / "runs").glob("*terasort*.json"))
    doc = json.loads(path.read_text())
    limit = doc["cluster"]["nodes"][1]["memory_bytes"]
    m = doc["measurements"]
    m["memory"] = {"master": {"limit_bytes": limit, "peak_bytes": limit // 4, "peak_source": "cgroup", "oom_kills": 0},
                   "worker1": {"limit_bytes": limit, "peak_bytes": limit, "peak_source": "cgroup", "oom_kills": 2},
                   "worker2": {"limit_bytes": limit, "peak_bytes": limit // 2, "peak_source": "sampled", "oom_kills": 0,
                               "notes": ["no peak from its cgroup: this kernel has no memory.peak"]}}
    m["flags"] = [{"node": "worker1", "kind": "oom_kill", "at": m["window"]["end"],
                   "detail": "the kernel killed 2 processes of worker1 for want of memory during the run"}]
    path.write_text(json.dumps(doc))
    report = build.build(results)
    [excluded] = [why for run, why in report.excluded if run.run_id == doc["run_id"]]
    assert "worker1 oom_kill" in excluded and "killed 2 processes of worker1" in excluded
    [row] = [r for r in tables.run_rows(report) if r["run_id"] == doc["run_id"]]
    assert row["status"] == "flagged" and row["oom_kills"] == 2
    assert "worker1 7.71 GB / 7.71 GB (100%), 2 OOM kills" in row["memory"]
    assert row["memory"].endswith("; worker2 3.85 GB / 7.71 GB (50%), sampled")
    assert "2 OOM kills" in html.write(report, tmp_path / "out")["html"].read_text()
    [shown] = [r for r in read_runs(results)[0] if r.run_id == doc["run_id"]]
    assert "oom_kill (worker1)" in summary._health(shown)
    assert any("memory against each node's limit" in str(t.title) for t in summary.measurement_tables(shown))
    assert "worker2 memory: no peak from its cgroup: this kernel has no memory.peak" in summary.measurement_notes(shown)
    # Runs stored before memory was recorded show none, and are not flagged for it.
    assert all(r["memory"] == "" and r["oom_kills"] is None for r in tables.run_rows(report) if r["run_id"] != doc["run_id"])


def test_the_ideal_speedup_starts_at_the_fewest_workers_measured():
    from sbclab.analysis.cells import CellKey
    from sbclab.analysis.derived import Comparison
    from sbclab.analysis.stats import Derived

    base = CellKey("terasort", "hadoop", 10**9, 2, "rpi5b", "nvme", "default", "lab")
    comparisons = [Comparison("speedup", base.but(workers=n), base, Derived(s, s - 0.1, s + 0.1),
                              Derived(s / (n / 2), None, None)) for n, s in ((4, 1.8), (8, 3.0))]
    line, = plots.speedup_lines(comparisons)
    assert line.workers == [2, 4, 8] and line.speedup == [1.0, 1.8, 3.0]
    assert line.ideal == [1.0, 2.0, 4.0], "S = T(2)/T(n): ideal n/2, not n"
    assert line.efficiency == [1.0, 0.9, 0.75]
    assert len(plots.speedup_curves(comparisons)) == 1
