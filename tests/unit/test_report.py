"""The report, its tables and the query command, built from recorded runs; bad results directories."""

import csv
import json
import shutil
from pathlib import Path

import pytest

from sbclab.errors import SbclabError
from sbclab.report import build, html
from sbclab.results import query

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


def test_a_foreign_json_file_among_the_runs_is_named(results):
    (results / "runs" / "notes.json").write_text('{"hello": "world"}')
    with pytest.raises(SbclabError, match="notes.json"):
        build.build(results)


def test_query_examples_run_on_recorded_runs(results):
    runs = build.load_runs(results)
    for _, sql in query.EXAMPLES:
        columns, rows = query.run_sql(runs, sql)
        assert columns and rows
    columns, rows = query.run_sql(runs, "SELECT count(*) FROM nodes")
    assert rows[0][0] == sum(len(r.measurements.nodes) for r in runs)


def test_a_bad_query_says_which_tables_exist(results):
    with pytest.raises(SbclabError, match="runs, nodes, published"):
        query.run_sql(build.load_runs(results), "SELECT * FROM nowhere")
