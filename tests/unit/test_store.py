"""The results store under bad files, two writers, killed runs and many runs: a damaged document is
set aside and named while the rest is read, one experiment writes at a time, what a killed run left
is removed on the next, and the index answers for the documents as they are now."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from sbclab.cli import main_group
from sbclab.errors import SbclabError
from sbclab.experiments import model, orchestrator, plan
from sbclab.results import index
from sbclab.results.store import ResultsStore, load

FIXTURES = Path(__file__).parent / "fixtures" / "results"
TERASORT = "20261122T200706Z-hadoop-terasort-2369"
DAMAGED = "20261123T000000Z-hadoop-terasort-dead"


@pytest.fixture
def results(tmp_path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(FIXTURES, target)
    return target


def _document() -> dict:
    return json.loads((FIXTURES / "runs" / f"{TERASORT}.json").read_text())


def _with(change) -> bytes:
    doc = _document()
    change(doc)
    return json.dumps(doc).encode()


# Each kind of damage a document meets (a disk filling, an editor, a copy cut short) and the words naming it.
DAMAGE = {
    "truncated": ((FIXTURES / "runs" / f"{TERASORT}.json").read_bytes()[:5000], "not valid JSON"),
    "empty": (b"", "not valid JSON"),
    "an array": (b"[]", "a JSON array, not an object"),
    "null": (b"null", "a JSON null, not an object"),
    "a number": (b"42", "a JSON number, not an object"),
    "not UTF-8": ((FIXTURES / "runs" / f"{TERASORT}.json").read_bytes().replace(b'"emulated"', b'"\xe9mulated"', 1),
                  "not UTF-8 text"),
    "a string for a number": (_with(lambda d: d.update(wall_time_s="fast")), "not the run schema at 'wall_time_s'"),
    "a string deep inside": (_with(lambda d: d["cluster"].update(workers="two")), "not the run schema at 'cluster.workers'"),
    "no schema version": (_with(lambda d: d.pop("schema_version")), "no schema version"),
    "a foreign object": (b'{"hello": "world"}', "no schema version"),
}


def _damage(results: Path, kind: str) -> str:
    content, _ = DAMAGE[kind]
    (results / "runs" / f"{DAMAGED}.json").write_bytes(content)
    return DAMAGE[kind][1]


@pytest.mark.parametrize("kind", DAMAGE)
def test_each_kind_of_damage_is_set_aside_with_its_reason_and_the_rest_read(results, kind):
    words = _damage(results, kind)
    store = ResultsStore(results)
    assert len(store.runs()) == 3
    [aside] = store.set_aside
    assert aside.path.name == f"{DAMAGED}.json" and words in aside.reason
    assert len(index.summaries(store)) == 3 and [s.reason for s in store.set_aside] == [aside.reason]
    assert (results / "runs" / f"{DAMAGED}.json").exists(), "a reader leaves the document where it is"
    with pytest.raises(SbclabError, match=words.replace("(", r"\(")):
        load(results / "runs" / f"{DAMAGED}.json")  # a document read alone is still refused, naming why


def test_a_newer_schema_is_still_refused_not_set_aside(results):
    doc = _document()
    doc.update(run_id="newer", schema_version=99)
    (results / "runs" / "newer.json").write_text(json.dumps(doc))
    with pytest.raises(SbclabError, match="schema version 99.*upgrade sbclab"):
        index.summaries(ResultsStore(results))


def sbclab(*args: str):
    done = CliRunner().invoke(main_group, list(args))
    assert done.exit_code == 0, (done.output, done.exception)
    return done


def _one_warning(done) -> None:
    warning = " ".join(done.stderr.split())
    assert warning.count("could not be read") == 1 and f"{DAMAGED}.json (not valid JSON" in warning


def test_report_query_diff_compare_and_export_read_the_other_runs_and_name_the_damaged_one(results, tmp_path):
    _damage(results, "truncated")
    report = sbclab("report", str(results), "--out", str(tmp_path / "report"))
    _one_warning(report)
    page = (tmp_path / "report" / "report.html").read_text()
    assert f"{DAMAGED}.json" in page and page.count('data-run="') >= 3

    counted = sbclab("query", "SELECT count(*) AS n FROM runs", "--results", str(results), "--format", "json")
    _one_warning(counted)
    assert json.loads(counted.stdout) == [{"n": 3}], "the warning stays off the output a script reads"

    other = tmp_path / "other"
    shutil.copytree(FIXTURES, other)
    compared = sbclab("diff", str(other), str(results))
    _one_warning(compared)
    assert "terasort/hadoop" in compared.stdout

    _one_warning(sbclab("compare", str(results)))

    bundle = tmp_path / "results.tar.gz"
    (results / "series" / f"{DAMAGED}.json").write_text("{}")
    exported = sbclab("results", "export", str(results), "--bundle", str(bundle), "--no-report")
    _one_warning(exported)
    with tarfile.open(bundle) as archive:
        names = archive.getnames()
        manifest = json.loads(archive.extractfile("BUNDLE.json").read())
    assert manifest["runs"] == 3 and not [n for n in names if DAMAGED in n]
    assert "not valid JSON" in manifest["left_out"][f"runs/{DAMAGED}.json"]
    sbclab("results", "import", str(bundle), "--results", str(tmp_path / "imported"))
    assert len(ResultsStore(tmp_path / "imported").runs()) == 3


def test_a_directory_of_damaged_documents_only_is_refused_naming_them(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.json").write_text("null")
    done = CliRunner().invoke(main_group, ["query", "SELECT 1", "--results", str(tmp_path)])
    assert done.exit_code != 0 and "no run document this sbclab can read" in str(done.exception)
    assert "a.json (a JSON null" in str(done.exception)


# --- one writer at a time


def _other_process_writes(results: Path) -> str:
    """What another sbclab process gets when it asks to write to `results` now."""
    found = subprocess.run(
        [sys.executable, "-c", "from sbclab.errors import SbclabError\nfrom sbclab.results.store import ResultsStore\n"
         f"try:\n    with ResultsStore({str(results)!r}).writing(['sbclab', 'run', 'second']):\n        print('wrote')\n"
         "except SbclabError as err:\n    print(err.message)"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    return found.stdout.strip()


def test_a_second_writer_is_refused_naming_the_first_while_the_first_holds_it_however_often_it_asks(tmp_path):
    with ResultsStore(tmp_path).writing(["sbclab", "run", "first"]):
        # A reproduction's rounds: the holder taking its directory again keeps it.
        with ResultsStore(tmp_path).writing(["sbclab", "run", "first"]):
            assert f"(pid {os.getpid()}, 'sbclab run first'" in _other_process_writes(tmp_path)
        assert "being written by another sbclab" in _other_process_writes(tmp_path)
    assert _other_process_writes(tmp_path) == "wrote"


def test_a_killed_writer_leaves_no_lock_behind(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom sbclab.results.store import ResultsStore\n"
         f"with ResultsStore({str(tmp_path)!r}).writing(['sbclab', 'run']):\n    print('held', flush=True)\n"
         "    time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SbclabError, match=f"pid {holder.pid}"):
            with ResultsStore(tmp_path).writing(["sbclab", "run"]):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with ResultsStore(tmp_path).writing(["sbclab", "run"]):
        pass


class _Display:
    def __init__(self, results: Path):
        self.results, self.said, self.refused = results, [], None

    def start(self, total, skipped):
        self.refused = _other_process_writes(self.results)

    def say(self, message):
        self.said.append(message)

    def cell(self, cell):
        pass

    def finished(self, cell, run):
        pass

    def stop(self):
        pass


def _execute(results: Path, monkeypatch) -> _Display:
    """An experiment whose cells are all stored already: it runs nothing, but holds the directory."""
    monkeypatch.setattr(orchestrator.packages, "check_here", lambda programs: None)
    experiment = model.parse({"workloads": ["pi"], "workers": [1], "repetitions": 1})
    cells = model.cells(experiment)
    display = _Display(results)
    orchestrator.execute(plan.Plan(experiment, cells, {c.key for c in cells}), orchestrator.Options(results, display))
    return display


def test_an_experiment_holds_its_results_directory_while_it_runs(results, monkeypatch):
    display = _execute(results, monkeypatch)
    assert display.refused and "being written by another sbclab" in display.refused
    with ResultsStore(results).writing(["sbclab", "run"]):
        pass


# --- what a killed run left


def _killed_run_leftovers(results: Path) -> None:
    """A stored run with an idle baseline; then what a run killed before its document leaves."""
    doc = _document()
    doc["measurements"]["idle_baseline"] = {"series": "series/20261122T200000Z-idle-aaaa.json"}
    (results / "runs" / f"{TERASORT}.json").write_text(json.dumps(doc))
    for name in ("20261122T200000Z-idle-aaaa", "20261122T210000Z-idle-bbbb", "20261122T210005Z-hadoop-pi-dead"):
        (results / "series" / f"{name}.json").write_text("{}")
    (results / "logs" / "20261122T210005Z-hadoop-pi-dead" / "samples").mkdir(parents=True)
    (results / "logs" / "20261122T210005Z-hadoop-pi-dead" / "client.log").write_text("killed")
    (results / "logs" / TERASORT).mkdir(parents=True)
    (results / "logs" / TERASORT / "client.log").write_text("kept")
    (results / "runs" / ".20261122T210005Z-hadoop-pi-dead.json.x1y2.tmp").write_text('{"half')
    (results / ".import.abcd" / "runs").mkdir(parents=True)
    _damage(results, "truncated")
    (results / "series" / f"{DAMAGED}.json").write_text("{}")  # a damaged document still owns its series


def test_what_a_killed_run_left_is_removed_and_what_stored_runs_own_is_kept(results):
    _killed_run_leftovers(results)
    before = {p.relative_to(results) for p in results.rglob("*")}
    with ResultsStore(results).writing(["sbclab", "run"]) as store:
        removed = store.remove_orphans()
    assert sorted(map(str, removed)) == [
        ".import.abcd", "logs/20261122T210005Z-hadoop-pi-dead", "runs/.20261122T210005Z-hadoop-pi-dead.json.x1y2.tmp",
        "series/20261122T210000Z-idle-bbbb.json", "series/20261122T210005Z-hadoop-pi-dead.json"]
    after = {p.relative_to(results) for p in results.rglob("*")}
    assert all(not (results / p).exists() for p in removed)
    assert {Path("series/20261122T200000Z-idle-aaaa.json"), Path(f"series/{TERASORT}.json"),
            Path(f"series/{DAMAGED}.json"), Path(f"logs/{TERASORT}/client.log")} <= after
    assert before - after == {p for p in before if any(p == r or r in p.parents for r in removed)}


def test_an_experiment_removes_them_first_and_says_so(results, monkeypatch):
    _killed_run_leftovers(results)
    display = _execute(results, monkeypatch)
    [said] = [m for m in display.said if m.startswith("removed what an interrupted run left")]
    assert "logs/20261122T210005Z-hadoop-pi-dead" in said and not (results / "logs" / "20261122T210005Z-hadoop-pi-dead").exists()


# --- the index


def test_the_index_summarises_each_run_as_its_document_does(results):
    runs = ResultsStore(results).runs()
    assert index.summaries(ResultsStore(results)) == [index.summary(r) for r in runs]
    assert (results / index.INDEX).exists()


def test_an_indexed_run_is_not_read_again_until_its_document_changes(results, monkeypatch):
    monkeypatch.setattr(index, "RECENT_NS", 0)
    store = ResultsStore(results)
    first = index.summaries(store)
    monkeypatch.setattr(index, "load", lambda path: pytest.fail(f"{path} read again"))
    assert index.summaries(store) == first
    path = results / "runs" / f"{TERASORT}.json"
    doc = _document()
    doc["wall_time_s"] = 1234.5
    path.write_text(json.dumps(doc, indent=1))
    monkeypatch.undo()
    monkeypatch.setattr(index, "RECENT_NS", 0)
    changed = {s.run["run_id"]: s.run["wall_time_s"] for s in index.summaries(store)}
    assert changed[TERASORT] == 1234.5


def test_a_document_changed_removed_damaged_or_repaired_after_indexing_is_seen(results, monkeypatch):
    monkeypatch.setattr(index, "RECENT_NS", 0)
    store = ResultsStore(results)
    path = results / "runs" / f"{TERASORT}.json"
    original = path.read_bytes()
    stamp = path.stat().st_mtime_ns

    def rewrite(content: bytes, tick: int) -> None:
        """Written in place with the same size where it can be, a second later: only the time tells."""
        path.write_bytes(content)
        os.utime(path, ns=(stamp + tick * 10**9, stamp + tick * 10**9))

    def times() -> dict[str, float]:
        return {s.run["run_id"]: s.run["wall_time_s"] for s in index.summaries(store)}

    assert TERASORT in times()
    rewrite(original.replace(b'"wall_time_s": 117.532', b'"wall_time_s": 317.532', 1), 1)
    assert times()[TERASORT] == 317.532
    rewrite(b"[]" + b" " * (len(original) - 2), 2)
    assert TERASORT not in times() and [s.path.name for s in store.set_aside] == [path.name]
    rewrite(original, 3)
    assert times()[TERASORT] == 117.532 and not store.set_aside
    path.unlink()
    assert TERASORT not in times()
    assert TERASORT not in json.loads((results / index.INDEX).read_text())["runs"]


def test_a_document_written_just_now_is_read_again_rather_than_trusted(results, monkeypatch):
    for path in (results / "runs").iterdir():
        os.utime(path)
    store = ResultsStore(results)
    index.summaries(store)
    assert json.loads((results / index.INDEX).read_text())["runs"] == {}
    read = []
    monkeypatch.setattr(index, "load", lambda path: read.append(path) or load(path))
    index.summaries(store)
    assert len(read) == 3


def test_a_damaged_index_or_one_of_other_code_is_rebuilt(results, monkeypatch):
    monkeypatch.setattr(index, "RECENT_NS", 0)
    store = ResultsStore(results)
    expected = index.summaries(store)
    (results / index.INDEX).write_text('{"fingerprint": "ab')
    assert index.summaries(store) == expected
    raw = json.loads((results / index.INDEX).read_text())
    raw["fingerprint"] = "other code"
    for entry in raw["runs"].values():
        entry["run"]["wall_time_s"] = -1
    (results / index.INDEX).write_text(json.dumps(raw))
    assert index.summaries(store) == expected
