"""The seeds' suite on a real 2-worker cluster: every workload on both engines at a tiny size,
validated; an experiment killed with SIGKILL and resumed; impossible and failing cells.

The cluster uses the processes backend: the same daemons, jobs, validation and stores as an
emulated one, without the CPU quotas that make sixteen jobs take most of an hour on a 2-core
host (and it is the backend of hosts without root, so its own checks are here too). The emulated
backend runs the first slice's jobs in test_cluster.py.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from sbclab import workloads
from sbclab.cluster import reaper
from sbclab.cluster.state import ClusterState
from sbclab.errors import SbclabError
from sbclab.experiments import model, orchestrator, plan
from sbclab.monitor.settings import MonitorSettings
from sbclab.results.store import ResultsStore
from sbclab.stack import clients, config, distribution, lifecycle
from sbclab.workloads import inputs

from .conftest import host_addresses, listening_sockets, measure, module_cluster, reachable, runner

NAME = "suite"
SIZE = 4 * 10**6
TINY = {"pi": {"maps": 2, "samples_per_map": 4000}, "dfsio-write": {"files": 2}, "dfsio-read": {"files": 2},
        "pagerank": {"iterations": 1}, "kmeans": {"iterations": 2}, "logreg": {"iterations": 2},
        "tpch": {"queries": "1,3,18"}}
# The workloads whose job count or reference grows with the input run smaller: TPC-H at the least scale
# factor (an aggregation, a join with a top 10 and a subquery, each a Spark job of its own, checked against
# DuckDB; tests/unit/test_tpch.py runs all six on DuckDB), PageRank on 1,000 nodes for one iteration (a
# MapReduce job an iteration), k-means on 2,000 points for two (its farthest-first start puts a centre in
# each group: the first iteration moves them to the groups' means), logistic regression on 1,421 points for
# two (Newton's first step from zero is already the least-squares discriminant, within 4° of the true normal;
# L-BFGS's second within 14°, one alone 24°: the check allows 18°).
SIZES = {"tpch": 10**6, "pagerank": 17_000, "kmeans": 54_000, "logreg": 54_000}


@pytest.fixture(scope="module")
def cluster():
    # The current stack (Hadoop 3.4, Spark 4), the default: every workload validates on it here;
    # test_cluster.py runs the main job on the 2026 seed's stack.
    with module_cluster(NAME, backend="processes", preset="paper", stack="current") as up:
        yield up


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ResultsStore(tmp_path_factory.mktemp("suite") / "results")


def test_the_processes_backend_serves_each_node_on_loopback_only(cluster):
    """The processes backend (no root needed, no shaping) serves each node on 127.0.0.1 at ports of its own,
    out of reach of this host's other addresses."""
    report = lifecycle.status(cluster)
    assert len(report["datanodes"]) == 2 and len(report["yarn_nodes"]) == 2
    shuffle_ports = {config.port(cluster.spec, n, "shuffle") for n in cluster.spec.nodes}
    for node, sockets in listening_sockets(cluster).items():
        assert sockets, node
        for sock in sockets:
            ip, port = sock.rsplit(":", 1)
            # Hadoop's ShuffleHandler has no bind-address setting; everything else stays on loopback.
            assert ip == "127.0.0.1" or int(port) in shuffle_ports, f"{node}: {sock}"
    for address in host_addresses():
        if not address.startswith("127."):
            assert not reachable(address, config.PORTS["namenode_http"]), address
    assert reachable("127.0.0.1", config.PORTS["namenode_http"])


# The big-data workloads on both engines; the concurrent mix has its own test, node benchmarks theirs
# on bare nodes (test_node_benchmarks.py).
CASES = [(name, engine) for name, w in workloads.WORKLOADS.items() if not name.startswith("mix-")
         for engine in w.engines if engine in ("hadoop", "spark")]


@pytest.mark.parametrize("name, engine", CASES, ids=[f"{w}-{e}" for w, e in CASES])
def test_every_workload_on_both_engines_is_validated(cluster, store, name, engine):
    """Each workload runs on Hadoop and on Spark, is validated by at least two checks and stores its counters and
    samples."""
    run = measure(cluster, store, name, engine, TINY.get(name), SIZES.get(name, SIZE), monitor=QUICK_SAMPLING)
    failed = [c for c in run.validity.checks if not c.passed]
    assert run.exit_status == 0, f"{name}/{engine} failed; logs: {run.logs}"
    assert run.valid, f"{name}/{engine} invalid: {failed}"
    assert len(run.validity.checks) >= 2 or name == "pi"
    assert run.counters, "engine counters are stored with the run"
    assert set(run.measurements.nodes) == {"host"}, "one host-wide sampler on the processes backend"
    assert run.measurements.nodes["host"].scope == "host" and not run.measurements.power
    if engine == "spark":
        assert run.counters["tasks"]["tasks"] > 0 and "task_metrics" in run.counters
        stages = {g: m for g, m in run.counters.items() if g.startswith("stage ")}
        assert stages and sum(m["tasks"] for m in stages.values()) == \
            run.counters["tasks"]["tasks"], "the job's tasks, stage by stage"
    else:
        assert "Job Counters" in run.counters
    if (name, engine) == ("grep", "hadoop"):
        # Hadoop's Grep is a search job and a sort job: both jobs' counters are kept, added up.
        assert len(run.job_ids) == 2 and run.counters["Job Counters"]["Launched reduce tasks"] >= 2


def test_a_datanodes_byte_counters_include_a_write_just_made(cluster, tmp_path):
    """A run's HDFS bytes are its DataNodes' BytesWritten at its marks: a write just made must be in them.
    (The daemons' /jmx answers were cached for ten seconds, and an input made just before a run counted
    as the run's own writes.)"""
    local = tmp_path / "blob"
    local.write_bytes(os.urandom(2 * 2**20))
    before = cluster.stack.datanode_counters()
    clients.fs(cluster.stack, ["-put", str(local), "/tmp/fresh-counters"], tmp_path / "put.log")
    after = cluster.stack.datanode_counters()
    assert sum(after[n]["bytes_written"] - before[n]["bytes_written"] for n in after) >= local.stat().st_size


def test_hdfs_has_nothing_left_to_delete_only_once_a_deleted_files_replicas_left_the_disks(cluster, tmp_path):
    """What a run measured by fstrim waits for before the trim that opens its job: the last run's
    output, deleted by its validation, leaves the DataNodes' disks seconds later."""
    def replicas_on_disk() -> int:
        return sum(1 for node in cluster.spec.worker_nodes
                   for f in config.datanode_dir(cluster.stack.layout(node)).rglob("blk_*")
                   if "finalized" in f.parts and f.suffix != ".meta")
    def settled() -> int | None:
        deadline = time.monotonic() + orchestrator.DELETIONS_TIMEOUT_S
        while (left := cluster.stack.replicas_awaiting_deletion()) and time.monotonic() < deadline:
            time.sleep(0.5)
        return left
    local = tmp_path / "doomed"
    local.write_bytes(os.urandom(2 * 2**20))
    assert settled() == 0  # what earlier tests deleted is gone first
    held_before = replicas_on_disk()
    clients.fs(cluster.stack, ["-put", str(local), "/tmp/doomed"], tmp_path / "put.log")
    assert replicas_on_disk() > held_before
    clients.fs(cluster.stack, ["-rm", "-skipTrash", "/tmp/doomed"], tmp_path / "rm.log")
    assert settled() == 0
    assert replicas_on_disk() == held_before


def test_generated_input_is_made_once_per_cluster(cluster, store):
    """A generated input (the airline data) is made once per cluster and size and reused by later cells."""
    datasets = inputs.known(runner(cluster, store).context())
    airline = [d for k, d in datasets.items() if k.startswith("airline/")]
    assert len(airline) == 1 and airline[0]["tokens"] == airline[0]["lines"] > 30_000
    assert airline[0]["bytes"] <= SIZE


EXPERIMENT = {
    "name": "resume", "cluster": {"name": NAME, "backend": "processes"}, "engines": ["hadoop", "spark"],
    "stacks": ["current"],
    "workloads": ["pi"], "workers": [2], "sizes": ["4MB"], "presets": ["paper"], "repetitions": 2,
    "parameters": {"pi": {"maps": 2, "samples_per_map": 1000}},
    # The processes backend's idle check reads this host, which the other test workers keep busy: a wait
    # would only run out (the idle wait itself is checked on emulated nodes, whose own CPU is read).
    "between_runs": {"idle_timeout_s": 0},
    # Measured as every run is, with a short baseline and margins: test_monitoring checks the figures.
    # The too-busy check off, as for every test of mechanics (conftest.MECHANICS_MONITOR).
    "monitor": {"idle_baseline_s": 2, "margin_s": 0.5, "busy_window_s": 0},
}
QUICK_SAMPLING = MonitorSettings(margin_s=0.5, busy_window_s=0)


def _bench(path, results) -> list[str]:
    return [sys.executable, "-m", "sbclab.cli", "bench", str(path), "--results", str(results)]


def test_a_killed_experiment_resumes_without_losing_or_repeating_runs(cluster, tmp_path):
    """An experiment killed mid-way resumes: stored cells are skipped, no partial document remains, every cell runs
    once."""
    path = tmp_path / "e.yaml"
    # Two repetitions of Spark Pi, the cheapest cells: killed in the second, which is then run once.
    path.write_text(yaml.safe_dump({**EXPERIMENT, "engines": ["spark"]}))
    results = tmp_path / "results"
    runs_dir = results / "runs"
    proc = subprocess.Popen(_bench(path, results), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not (runs_dir.exists() and any(runs_dir.glob("*.json"))):
            time.sleep(0.5)
        time.sleep(3)  # into the next run
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    first = ResultsStore(results).runs()
    assert len(first) == 1
    assert not [p for p in runs_dir.iterdir() if p.suffix != ".json"], "no partial document is left"
    done = subprocess.run(_bench(path, results), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "already stored and valid: skipped" in done.stderr
    runs = ResultsStore(results).runs()
    keys = [r.cell["key"] for r in runs if r.valid]
    assert len(set(keys)) == 2 and len(keys) == 2, "every cell once, the stored ones not run again"
    assert {r.run_id for r in first} <= {r.run_id for r in runs}
    left = ClusterState.load(NAME).of_kind("process")
    assert not [e for e in left if "owner_pid" in e], "the killed sbclab's commands were stopped and forgotten"


def test_a_cell_that_fails_is_stored_as_failed_and_the_experiment_goes_on(cluster, tmp_path):
    """A failing cell is stored as failed with its reason and the next cell still runs."""
    experiment = model.parse({**EXPERIMENT, "workloads": ["wordcount", "pi"], "engines": ["hadoop"],
                              "repetitions": 1, "parameters": {**EXPERIMENT["parameters"],
                                                               "wordcount": {"source": "/nonexistent/2006.csv"}}})
    found = plan.prepare(experiment, tmp_path / "results")

    class Quiet:
        def start(self, **kw): pass
        def say(self, message): pass
        def cell(self, cell): pass
        def finished(self, cell, run): pass
        def stop(self): pass

    stored = orchestrator.execute(found, orchestrator.Options(tmp_path / "results", Quiet()))
    by_workload = {r.workload: r for r in stored}
    assert by_workload["wordcount"].exit_status != 0 and not by_workload["wordcount"].valid
    assert "does not exist" in by_workload["wordcount"].validity.checks[0].detail
    assert by_workload["pi"].valid


@pytest.mark.parametrize("change, message", [
    ({"workers": [40]}, "cannot run cell"),
    ({"workloads": ["terasort"], "sizes": ["1TB"]}, "storage|disks"),
])
def test_an_impossible_cell_is_refused_before_anything_starts(tmp_path, change, message):
    """A cell the plan cannot hold (40 workers, 1 TB on these disks) is refused before any node is created."""
    experiment = model.parse({**EXPERIMENT, "cluster": {"name": "nope"}, **change})
    with pytest.raises(SbclabError, match=message):
        plan.prepare(experiment, tmp_path / "results")
    assert "nope" not in ClusterState.names()


def test_the_concurrent_mix_stores_both_modes_with_every_job_validated(cluster, store):
    """The mix runs its jobs one after the other and together (YARN running every ApplicationMaster at once, the
    share that allows it recorded); both are stored with every job validated."""
    experiment = model.parse({**EXPERIMENT, "workloads": ["pi"], "engines": ["spark"], "repetitions": 1,
                              "concurrent": {"engine": "spark", "workloads": ["wordcount", "pi"], "size": "4MB"}})
    mixes = [c for c in model.cells(experiment) if c.workload.startswith("mix-")]
    on = runner(cluster, store, QUICK_SAMPLING)
    runs = [on.run_cell(cell, experiment.between_runs) for cell in mixes]
    assert [r.workload for r in runs] == ["mix-sequential", "mix-concurrent"]
    for run in runs:
        assert run.valid, [c for c in run.validity.checks if not c.passed]
        assert set(run.result["jobs"]) == {"wordcount", "pi"}
        assert all(job["exit_status"] == 0 and job["wall_time_s"] > 0 for job in run.result["jobs"].values())
        assert {c.name.split(":")[0] for c in run.validity.checks} == {"wordcount", "pi"}
        assert run.cell["workload"] == run.workload
    sequential, concurrent = runs
    assert sequential.wall_time_s >= max(j["wall_time_s"] for j in sequential.result["jobs"].values())
    # YARN ran the jobs together (every ApplicationMaster at once), not queued behind each other.
    assert concurrent.result["together_s"] > 0 > sequential.result["together_s"]
    assert concurrent.configuration["capacity-scheduler"]["yarn.scheduler.capacity.maximum-am-resource-percent"]


def _sbclab(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    # A process of its own: `sbclab exec` replaces itself with the node's command, as ssh would.
    return subprocess.run([sys.executable, "-m", "sbclab.cli", *args], capture_output=True, text=True, input=stdin,
                          timeout=600, env=env)


def test_the_stacks_commands_run_through_exec_and_env(cluster, tmp_path):
    """`sbclab exec master -- …` puts the stack's commands on the PATH: hdfs dfs -put/-cat round-trips, spark-submit
    runs the jobs jar and a user's PySpark script on YARN, spark-sql answers statements, pyspark's shell has `sc`;
    `sbclab env` does the same for this host's shell; a cluster that is not up is refused with the command that brings
    one up."""
    local = tmp_path / "words.txt"
    local.write_text("one two two\nthree three three\n")
    on_master = ("exec", "master", "--name", NAME, "--")
    put = _sbclab(*on_master, "hdfs", "dfs", "-put", "-f", str(local), "/tmp/words.txt")
    assert put.returncode == 0, put.stderr[-2000:]
    cat = _sbclab(*on_master, "hdfs", "dfs", "-cat", "/tmp/words.txt")
    assert cat.returncode == 0 and cat.stdout == local.read_text()

    jar = distribution.installed(cluster.choices.stack, check=False).jobs_jar
    pi = _sbclab(*on_master, "spark-submit", "--class", "org.sbclab.jobs.SparkPi", str(jar), "2", "1000")
    assert pi.returncode == 0 and '"samples": 2000' in pi.stdout, pi.stderr[-2000:]

    script = tmp_path / "count.py"
    script.write_text("from pyspark.sql import SparkSession\n"
                      "spark = SparkSession.builder.appName('a user script').getOrCreate()\n"
                      "words = spark.sparkContext.textFile('/tmp/words.txt').flatMap(str.split)\n"
                      "print('DISTINCT', words.distinct().count(), 'ALL', words.count())\n"
                      "spark.stop()\n")
    mine = _sbclab(*on_master, "spark-submit", str(script))
    assert mine.returncode == 0 and "DISTINCT 3 ALL 6" in mine.stdout, mine.stderr[-2000:]

    # spark-sql, one application (each costs four JVMs): its options, then statements typed at its prompt
    # (piped through exec), one over two lines; a bad statement is Spark's one-line refusal.
    typed = _sbclab(*on_master, "spark-sql", "--conf", "spark.sql.shuffle.partitions=2", stdin=(
        "CREATE TEMPORARY VIEW lines USING text OPTIONS (path '/tmp/words.txt');\n"
        "SELECT word, count(*) FROM lines LATERAL VIEW explode(split(value, ' ')) AS word GROUP BY word ORDER BY word;\n"
        "SELECT 6 *\n7;\nSELECT nope FROM nowhere;\nexit;\n"))
    assert typed.returncode == 0 and typed.stdout.split() == ["one", "1", "three", "3", "two", "2", "42"], \
        (typed.stdout, typed.stderr[-2000:])
    assert "Fetched 3 row(s)" in typed.stderr and "Error in query" in typed.stderr, typed.stderr[-2000:]

    # The current stack has no Spark REPL to give (test_cluster.py runs spark-shell on lee-park-2026).
    no_repl = _sbclab(*on_master, "spark-shell")
    assert no_repl.returncode == 1 and "spark-shell is not in the current stack" in no_repl.stderr
    assert "pyspark or spark-sql" in no_repl.stderr

    # Python reads a piped stdin as a script and skips the shell's start-up file (what a terminal would run first).
    shell = _sbclab(*on_master, "pyspark", stdin="import os; exec(open(os.environ['PYTHONSTARTUP']).read())\n"
                                                 "print('WORDS', sc.textFile('/tmp/words.txt').count())\n")
    assert shell.returncode == 0 and "WORDS 2" in shell.stdout, (shell.stdout[-1000:], shell.stderr[-2000:])

    exports = _sbclab("env", "--name", NAME)
    assert exports.returncode == 0 and "export HADOOP_CONF_DIR=" in exports.stdout
    here = subprocess.run(["bash", "-c", exports.stdout + "hdfs dfs -cat /tmp/words.txt"], capture_output=True,
                          text=True, timeout=300)
    assert here.returncode == 0 and here.stdout == local.read_text()

    ui = _sbclab("cluster", "ui", "--name", NAME)
    assert ui.returncode == 0, ui.stderr[-2000:]
    urls = {line.rsplit(None, 1)[0].strip(): line.rsplit(None, 1)[1] for line in ui.stdout.splitlines() if "http" in line}
    assert {"NameNode", "ResourceManager", "JobHistory server", "Spark History Server"} <= set(urls), urls
    apps = requests.get(urls["Spark History Server"] + "/api/v1/applications", timeout=30).json()
    assert "a user script" in {a["name"] for a in apps}, "the History Server reads the event logs sbclab keeps"

    refused = _sbclab("exec", "master", "--name", "no-such-cluster", "--", "true")
    assert refused.returncode != 0 and "sbclab cluster up" in refused.stderr and "Traceback" not in refused.stderr
    unknown = _sbclab("exec", "worker9", "--name", NAME, "--", "true")
    assert unknown.returncode != 0 and "worker1" in unknown.stderr


def test_a_command_through_exec_on_the_processes_backend_is_one_of_the_clusters_processes(cluster):
    """With no namespace or cgroup to hold it, what `sbclab exec` (or `shell`) runs on the processes backend is
    recorded with the cluster's processes, which `cluster down` stops; once it has ended, the next sbclab
    forgets it."""
    command = subprocess.Popen([sys.executable, "-m", "sbclab.cli", "exec", "master", "--name", NAME, "--", "sleep", "600"])

    def recorded():
        return [e for e in ClusterState.load(NAME).of_kind("process") if e["pid"] == command.pid]

    try:
        deadline = time.monotonic() + 60
        while not recorded() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [e["label"] for e in recorded()] == ["shell on master"]
        assert [p.pid for p in reaper.recorded(recorded())] == [command.pid], "what cluster down stops"
    finally:
        command.kill()
        command.wait()
    lifecycle.attach(NAME).transport.stop_orphans()
    assert recorded() == []
    # The earlier tests' commands through exec have ended: once one more has run, its record is the only one.
    assert _sbclab("exec", "master", "--name", NAME, "--", "true").returncode == 0
    assert len([e for e in ClusterState.load(NAME).of_kind("process") if e.get("label") == "shell on master"]) == 1


REPOSITORY = Path(__file__).resolve().parents[2]


def test_a_users_own_jobs_are_measured_validated_and_reported(cluster, tmp_path):
    """An experiment's own jobs: the example PySpark analysis with its plain-Python check is valid and carries its
    Spark stages; a command that writes outside its output folder is invalid; one past its timeout is failed, and
    the experiment goes on; the report holds them."""
    jobs = REPOSITORY / "examples" / "jobs"
    experiment = {**EXPERIMENT, "engines": ["spark", "hadoop"], "repetitions": 1,
                  "workloads": ["delay-by-carrier", "rogue", "sleeper"], "parameters": {},
                  "jobs": {"delay-by-carrier": {"pyspark": str(jobs / "delay_by_carrier.py"), "args": ["{input}", "{output}"],
                                                "input": "airline",
                                                "validate": f"python3 {jobs / 'check_delay_by_carrier.py'} {{input}} {{output}}"},
                           "rogue": {"command": "hdfs dfs -touchz /rogue-{run_id}", "engine": "hadoop"},
                           "sleeper": {"command": "sleep 120", "engine": "hadoop", "timeout_s": 5}}}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(experiment))
    results = tmp_path / "results"
    done = subprocess.run(_bench(path, results), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 1, done.stderr[-3000:]  # the two bad jobs make it exit 1, after every cell ran
    runs = {r.workload: r for r in ResultsStore(results).runs()}
    analysis = runs["delay-by-carrier"]
    assert analysis.valid and analysis.engine == "spark", analysis.validity.checks
    assert {c.name.split(":")[0] for c in analysis.validity.checks} >= {
        "job finished", "wrote nothing in HDFS outside its output folder", "validation command exits 0"}
    assert any(g.startswith("stage ") for g in analysis.counters) and analysis.parameters["kind"] == "pyspark"
    rogue = runs["rogue"]
    assert rogue.exit_status == 0 and not rogue.valid
    assert "/rogue-" in next(c for c in rogue.validity.checks if not c.passed).detail
    assert runs["sleeper"].exit_status != 0 and not runs["sleeper"].valid
    report = subprocess.run([sys.executable, "-m", "sbclab.cli", "report", str(results)], capture_output=True, text=True,
                            timeout=300)
    assert report.returncode == 0 and "delay-by-carrier" in (results / "report" / "report.html").read_text()
    subprocess.run([sys.executable, "-m", "sbclab.cli", "exec", "master", "--name", NAME, "--", "hdfs", "dfs", "-rm",
                    "-f", "/rogue-*"], capture_output=True, timeout=300)
