import json
from datetime import datetime, timedelta, timezone

import pytest

from sbclab.cluster import spec
from sbclab.errors import SbclabError
from sbclab.results import summary
from sbclab.results.schema import SCHEMA_VERSION, Check, ClusterShape, NodeRecord, RunRecord, ScaleRecord, Validity
from sbclab.results.store import ResultsStore, load, read_runs


def make_run(run_id="r1", valid=True, workload="terasort", exit_status=0) -> RunRecord:
    s = spec.build(backend="emulated", workers=2, cores=2, memory_bytes=24 * 2**30)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return RunRecord(
        run_id=run_id, experiment_id="e1", workload=workload, engine="hadoop",
        parameters={"size_bytes": 10**6, "rows": 10**4},
        cluster=ClusterShape(name="lab", backend="emulated", emulated=True, shaped=True, workers=2, board="rpi5b",
                             storage="nvme", preset="stock",
                             nodes=[NodeRecord(**n.model_dump(), yarn_memory_mb=0, yarn_vcores=0) for n in s.nodes]),
        scale=ScaleRecord(**s.scale.model_dump()), versions={"hadoop": "3.3.6"}, configuration={"hdfs-site": {}}, host={"cpus": 2},
        command=["sbclab", "run"], job_command=["java"], started_at=start, finished_at=start + timedelta(seconds=5),
        wall_time_s=5.0, exit_status=exit_status,
        validity=Validity.of([Check(name="checksum", passed=valid, detail="x")]),
        counters={"File System Counters": {"HDFS: Number of bytes written": 10**6}}, result={"rows": 10**4})


def test_runs_round_trip_through_the_store(tmp_path):
    store = ResultsStore(tmp_path)
    path = store.write(make_run())
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    [back] = store.runs()
    assert back == make_run()
    assert not list(tmp_path.rglob("*.tmp")), "no temporary files are left behind"


def test_a_run_is_never_overwritten(tmp_path):
    store = ResultsStore(tmp_path)
    store.write(make_run())
    with pytest.raises(SbclabError):
        store.write(make_run())


def test_unknown_schema_versions_are_refused_with_advice(tmp_path):
    store = ResultsStore(tmp_path)
    path = store.write(make_run())
    raw = json.loads(path.read_text())
    raw["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(raw))
    with pytest.raises(SbclabError) as err:
        load(path)
    assert "schema version" in str(err.value) and "upgrade" in str(err.value)


def test_corrupt_documents_are_set_aside_and_named(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "bad.json").write_text("{not json")
    store = ResultsStore(tmp_path)
    assert store.runs() == [] and [s.path.name for s in store.set_aside] == ["bad.json"]
    with pytest.raises(SbclabError) as err:
        read_runs(tmp_path)
    assert "no run document this sbclab can read" in str(err.value) and "bad.json" in str(err.value)


@pytest.mark.parametrize("content, words", [(b"{not json", "not valid JSON"),
                                            (b"[]", "a JSON array, not an object"), (b"null", "a JSON null"),
                                            (b"3", "a JSON number"), (b'{"run_id": "caf\xe9"}', "not UTF-8 text")])
def test_corrupt_documents_are_named_with_why(tmp_path, content, words):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "bad.json").write_bytes(content)
    with pytest.raises(SbclabError) as err:
        load(tmp_path / "runs" / "bad.json")
    assert "bad.json" in str(err.value) and words in str(err.value) and "Restore it" in str(err.value)


def test_validity_is_all_checks_and_unknown_without_checks():
    assert Validity.of([]).valid is None
    assert Validity.of([Check(name="a", passed=True, detail=""), Check(name="b", passed=False, detail="")]).valid is False
    assert not make_run(valid=False).succeeded
    assert not make_run(exit_status=1).succeeded


def test_summary_labels_emulated_results_with_the_factor(tmp_path):
    runs = [make_run("a"), make_run("b", valid=False)]
    table = summary.table(runs)
    assert table.row_count == 2
    assert "0.167" in summary.caption(runs) and "not measurements of real boards" in summary.caption(runs)


def test_version_1_documents_are_migrated(tmp_path):
    store = ResultsStore(tmp_path)
    path = store.write(make_run())
    raw = json.loads(path.read_text())
    raw["schema_version"] = 1
    raw.pop("measurements")
    path.write_text(json.dumps(raw))
    back = load(path)
    assert back.schema_version == SCHEMA_VERSION and back.measurements is None
    assert back.valid and not back.flagged and back.headline


def test_flagged_runs_are_valid_but_not_headline():
    from sbclab.results.measurements import Flag, Measurements
    run = make_run().model_copy(update={"measurements": Measurements(
        hz=1, window={"start": 0, "end": 5},
        flags=[Flag(node="worker1", kind="throttled", at=2.0, detail="under-voltage detected")])})
    assert run.valid and run.flagged and not run.headline
    assert "flagged: throttled (worker1)" in str(summary._health(run))


def test_a_tpch_runs_headline_counts_its_queries_and_rows():
    run = type("Run", (), {"result": {"query_seconds": {"q1": 33.0, "q6": 3.4}, "rows": {"q1": 4, "q6": 1}}})()
    assert summary.headline_result(run) == "2 queries, 5 rows"
