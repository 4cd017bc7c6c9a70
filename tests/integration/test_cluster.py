"""A real 2-worker cluster: bring-up, status, binding, the first slice's workloads, stored runs, teardown.

The cluster's boards have one core (conftest.MECHANICS_BOARD): what is checked here is what sbclab
does; what it measures is test_monitoring.py's."""

import json
import subprocess
import sys

import psutil
import pytest
import yaml

from selenium.webdriver.common.by import By

from sbclab import paths
from sbclab.cluster import cgroups, nodes
from sbclab.cluster.state import ClusterState
from sbclab.experiments import model, orchestrator
from sbclab.experiments.display import LineDisplay
from sbclab.experiments.model import BetweenRuns, ClusterSettings
from sbclab.monitor.settings import MonitorSettings
from sbclab.report import build, html
from sbclab.results.schema import SCHEMA_VERSION
from sbclab.results.store import ResultsStore
from sbclab.stack import config, lifecycle, sizing, versions
from sbclab.stack.choices import StackChoices
from sbclab.studies import tune
from sbclab.workloads import inputs, terasort

from .conftest import NOTHING, leaked, chromium, free_port, host_addresses, listening_sockets, measure, not_blank, \
    prometheus_families, reachable, mechanics_spec, remove_if_left, runner, scraping

NAME = "itest"
COMPRESSED = {"mapred-site": {"mapreduce.map.output.compress": "true",
                              "mapreduce.map.output.compress.codec": "org.apache.hadoop.io.compress.DefaultCodec"}}


@pytest.fixture(scope="module")
def cluster():
    remove_if_left(NAME)
    assert leaked() == NOTHING
    # The 2026 seed's stack: the main job runs here on it, and on the default (current) stack in
    # test_suite.py, which runs every workload there.
    up = lifecycle.up(mechanics_spec(NAME, subnet="10.232.0.0/24"), StackChoices(stack=versions.FIRST))
    try:
        yield up
    finally:
        remove_if_left(NAME)


def test_status_shows_live_datanodes_and_yarn_nodes(cluster):
    """`cluster status` sees both DataNodes with their disks and both NodeManagers with the YARN share sizing gives a
    worker."""
    report = lifecycle.status(cluster)
    assert report["problems"] == []
    assert report["safemode"] == "off"
    assert len(report["datanodes"]) == 2
    worker_addresses = {w.address for w in cluster.spec.worker_nodes}
    for dn in report["datanodes"]:
        assert dn["address"].split(":")[0] in worker_addresses
        assert dn["capacity"] > 1.5 * 2**30
    assert len(report["yarn_nodes"]) == 2
    for nm in report["yarn_nodes"]:
        assert nm["memory_mb"] == sizing.yarn_share(cluster.spec.worker_nodes[0])[0]
        assert nm["vcores"] == sizing.yarn_share(cluster.spec.worker_nodes[0])[1]
    daemons = {row["daemon"] for row in report["addresses"]}
    assert daemons == {"NameNode", "ResourceManager", "JobHistory server", "DataNode", "NodeManager"}


def test_daemons_listen_on_node_addresses_only(cluster):
    """Every daemon binds its node's own address (the shuffle port, which Hadoop cannot bind, excepted)."""
    node_addresses = {n.address for n in cluster.spec.nodes}
    shuffle_ports = {config.port(cluster.spec, n, "shuffle") for n in cluster.spec.nodes}
    for node, sockets in listening_sockets(cluster).items():
        assert sockets, node
        for sock in sockets:
            ip, port = sock.rsplit(":", 1)
            if ip in ("0.0.0.0", "*", "[::]") and int(port) in shuffle_ports:
                continue  # Hadoop's ShuffleHandler has no bind-address setting
            assert ip in node_addresses or ip.startswith("127.0.0."), f"{node} listens on {sock}"


def test_daemons_are_not_reachable_on_the_hosts_other_addresses(cluster):
    """No daemon of the cluster answers on the host's own addresses: the nodes' network is private. (Another
    cluster may: the processes backend's serves on this host's loopback, and make test runs one beside this.)"""
    ports = [config.PORTS[p] for p in ("namenode_rpc", "namenode_http", "rm_http", "jhs_http", "datanode", "nm_http")]
    ours = {proc.pid for proc in cluster.transport.live_processes()}
    for address in host_addresses():
        for port in ports:
            if reachable(address, port):
                # Sockets of this host's own network namespace, with their owners: none may be this cluster's.
                owners = {c.pid for c in psutil.net_connections("tcp")
                          if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
                assert owners and not owners & ours, f"{address}:{port} answers, served by {owners & ours}"
    assert reachable(cluster.spec.master.address, config.PORTS["namenode_http"])


@pytest.fixture(scope="module")
def first_slice(cluster, tmp_path_factory):
    """TeraGen, TeraSort (its map output compressed by a job setting of its own) and Spark Pi, stored
    (and sampled, as every run is)."""
    store = ResultsStore(tmp_path_factory.mktemp("first-slice") / "results")
    sort = measure(cluster, store, "terasort", "hadoop", size_bytes=5 * 10**6, job_settings=COMPRESSED)
    # Spark Pi is also served to Prometheus while it runs, and scraped.
    address = f"127.0.0.1:{free_port()}"
    with scraping(f"http://{address}/metrics", "sbclab_node_cpu_percent") as scraped:
        estimate = measure(cluster, store, "pi", "spark", {"maps": 4, "samples_per_map": 5000},
                           monitor=MonitorSettings(prometheus=address, busy_window_s=0))
    return store, store.runs_matching({sort.parameters["input_run_id"]})[0], sort, estimate, scraped


def test_a_run_in_progress_is_served_to_prometheus_and_hadoops_daemons_serve_their_own(cluster, first_slice):
    """While a run goes on, sbclab's endpoint has every node's newest interval and the run's marks (read by
    prometheus_client's parser); the NameNode and the ResourceManager serve their own metrics at /prom."""
    *_, estimate, scraped = first_slice
    assert scraped, "scraped while Spark Pi ran"
    last = scraped[-1]
    assert {s.labels["node"] for s in last["sbclab_node_cpu_percent"]} == {n.name for n in cluster.spec.nodes}
    assert {s.labels["run_id"] for s in last["sbclab_run_info"]} == {estimate.run_id}
    assert any(s.labels["mark"].startswith("start ") for s in last["sbclab_run_mark_timestamp_seconds"])
    assert {s.labels["node"] for s in last["sbclab_node_power_watts"]} == {n.name for n in cluster.spec.nodes}
    master = cluster.spec.master
    for daemon in ("namenode_http", "rm_http"):
        served = prometheus_families(f"http://{config.web_host(cluster.choices, master)}:"
                                     f"{config.port(cluster.spec, master, daemon)}/prom")
        assert any(name.startswith("jvm_metrics") for name in served), (daemon, sorted(served)[:5])


def test_terasort_and_spark_pi_end_to_end(cluster, first_slice):
    """TeraGen, TeraSort and Spark Pi run, validate and are stored with counters, versions, scale and logs, in order."""
    store, gen, sort, estimate, _ = first_slice

    assert gen.valid and sort.parameters["input_run_id"] == gen.run_id
    assert gen.result["rows"] == 50_000 and gen.result["checksum"]
    assert sort.succeeded and sort.validity.valid
    assert {c.name for c in sort.validity.checks} >= {"TeraValidate error rows", "checksum equals TeraGen's"}
    fs = sort.counters["File System Counters"]
    assert fs["HDFS: Number of bytes written"] == 5 * 10**6
    assert fs["FILE: Number of bytes written"] > 0
    assert sort.counters["Job Counters"]["Launched reduce tasks"] >= 1
    # The job's own setting reached its tasks (the cluster's configuration leaves map output raw), and
    # the run records it; the TeraGen before it ran without.
    framework = sort.counters["Map-Reduce Framework"]
    assert framework["Map output materialized bytes"] < 0.9 * framework["Map output bytes"], framework
    assert sort.configuration["mapred-site"]["mapreduce.map.output.compress"] == "true"
    assert "mapreduce.map.output.compress=true" in sort.parameters["job_settings"]
    assert "mapreduce.map.output.compress" not in gen.configuration["mapred-site"]
    assert "job_settings" not in gen.parameters
    assert estimate.succeeded and abs(estimate.result["estimate"] - 3.14159) < 0.1
    assert estimate.counters["tasks"]["tasks"] == 4

    stored = store.runs()
    assert [r.run_id for r in stored] == [gen.run_id, sort.run_id, estimate.run_id]
    for run in stored:
        raw = json.loads((store.runs_dir / f"{run.run_id}.json").read_text())
        assert raw["schema_version"] == SCHEMA_VERSION
        assert raw["versions"]["hadoop"] == "3.3.6" and raw["versions"]["spark"] == "3.5.0"
        assert raw["cluster"]["backend"] == cluster.spec.backend and raw["cluster"]["stack"] == versions.FIRST
        assert raw["host"]["cgroup_version"] == cgroups.version(), "the hierarchy the nodes were shaped on"
        assert raw["scale"]["factor"] == cluster.spec.scale.factor
        assert (store.root / raw["logs"]["client"]).exists()
        assert raw["wall_time_s"] > 0


def test_the_report_of_these_runs_in_a_real_browser(first_slice, tmp_path):
    """Headless Chromium renders the report: not blank, every plot loaded, no console error, and the
    numbers in the page equal the stored runs'."""
    store = first_slice[0]
    report = build.build(store.root)
    written = html.write(report, tmp_path / "report")
    with chromium() as browser:
        browser.get(written["html"].as_uri())
        screenshot = tmp_path / "report.png"
        browser.save_screenshot(str(screenshot))
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete && i.naturalWidth > 0])")
        shown = {row.get_attribute("data-run"): row.find_element(By.CSS_SELECTOR, "[data-field=wall_time_s]").text
                 for row in browser.find_elements(By.CSS_SELECTOR, "#runs-table tr[data-run]")}
        text = browser.find_element(By.TAG_NAME, "body").text
        browser.set_window_size(390, 844)  # a phone: wide tables scroll inside their box, the page does not
        browser.get(written["html"].as_uri())
        page_width, view_width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert page_width <= view_width
    assert not errors, errors
    assert len(images) >= 3 and all(ok for _, ok in images), images
    assert not_blank(screenshot)
    stored = {r.run_id: r.wall_time_s for r in store.runs()}
    assert shown == {run_id: f"{t:,.2f}" for run_id, t in stored.items()}
    assert "emulated" in text.lower() if report.emulated else True
    assert "Warnings" in text and "Bottlenecks" in text


def test_spark_shell_on_the_2026_stack_runs_scala_on_the_cluster(cluster):
    """The lee-park-2026 stack has Spark's REPL: `spark-shell` through `sbclab exec` evaluates Scala with `sc`
    on YARN's executors (a closure the REPL compiled, fetched by the executors from the driver)."""
    done = subprocess.run([sys.executable, "-m", "sbclab.cli", "exec", "master", "--name", NAME, "--", "spark-shell"],
                          input="println(\"SUM \" + sc.parallelize(1 to 100, 2).map(_ * 2).sum.toLong)\n:quit\n",
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "SUM 10100" in done.stdout, (done.stdout[-1500:], done.stderr[-2000:])


def test_sparks_jvms_map_the_class_data_archive_stack_fetch_recorded(cluster):
    """The quick-start knob gives the driver, the ApplicationMaster and the executors Spark's archive with
    its classpath jar first (stack/classdata.py), and the master maps it on a Spark daemon's class path:
    -Xshare:on refuses to start a JVM that could not."""
    stack, master = cluster.stack, cluster.spec.master
    found = stack.spark_class_data(master)
    assert found is not None, "stack fetch records the archive of a stack on Java 13 or later"
    spark = cluster.configuration["spark-defaults"]
    assert all(f"-XX:SharedArchiveFile={found.archive}" in spark[key] for key in config.SPARK_OPTS)
    assert spark["spark.driver.extraClassPath"] == spark["spark.executor.extraClassPath"] == str(found.classpath_jar)
    argv = stack.spark_java(master, "org.apache.spark.deploy.SparkSubmit", ["--version"], 128)
    done = stack.transport.capture(master, *stack.command(master, [argv[0], "-Xshare:on", *argv[1:]], stack.env(master)),
                                   timeout_s=120)
    assert done.status == 0 and b"version" in done.stdout + done.stderr, done.stderr[-1500:]


def test_teragen_input_is_reused_by_later_repetitions(cluster, tmp_path):
    """A TeraSort input already in HDFS is found and reused, and making it stores no run of its own."""
    store = ResultsStore(tmp_path / "r")
    assert terasort.tera_input(runner(cluster, store).context(), 5 * 10**6)["rows"] == 50_000
    assert not store.runs_dir.exists()
    assert [k for k in inputs.known(runner(cluster, store).context()) if k.startswith("/sbclab/terasort/")]


def test_one_real_trial_of_the_tuner_on_this_cluster(cluster, tmp_path):
    """`sbclab tune`'s loop once for real: uber mode with one container a node a heartbeat against the
    cluster's settings, two WordCount runs a side alternating on the running cluster, judged; the
    scheduler's setting is the ResourceManager's for the candidate's runs only; the preset file names
    the runs."""
    shape = cluster.spec
    experiment = model.Experiment(
        name="tune", cluster=ClusterSettings(name=NAME, board=shape.board, backend=shape.backend,
                                             subnet="10.232.0.0/24"),
        workloads=["wordcount"], engines=["hadoop"], workers=[shape.workers], sizes=[2 * 10**6],
        storage=[shape.storage], presets=[cluster.choices.preset], stacks=[cluster.choices.stack], repetitions=2,
        # The tests of mechanics share this host with two others, so the too-busy check is off: the tuner
        # judges counted runs only, and what is checked is its loop.
        monitor=MonitorSettings(idle_baseline_s=0, busy_window_s=0), between_runs=BetweenRuns(idle_timeout_s=0))
    options = orchestrator.Options(results=tmp_path / "r", display=LineDisplay(print))
    searched, document, target = tune.run_study(experiment, options, lever_names=["uber", "heartbeat-assignments"],
                                                budget_s=3600, repetitions=2, max_trials=1, out=None, say=print,
                                                first="uber=on,heartbeat-assignments=one")
    assert [t.chosen for t in searched.trials] == [{"uber": "on", "heartbeat-assignments": "one"}]
    trial = searched.trials[0]
    runs = {r.run_id: r for r in ResultsStore(tmp_path / "r").runs()}
    sides = {side: [runs[i] for i in ids] for side, ids in trial.runs.items()}
    assert [len(sides["incumbent"]), len(sides["candidate"])] == [2, 2]
    assert all(r.valid for rs in sides.values() for r in rs)
    assert all(r.configuration["mapred-site"]["mapreduce.job.ubertask.enable"] == "true" for r in sides["candidate"])
    assert all("mapreduce.job.ubertask.enable" not in r.configuration["mapred-site"] for r in sides["incumbent"])
    one_a_heartbeat = "yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled"
    assert all(r.configuration["capacity-scheduler"][one_a_heartbeat] == "false" for r in sides["candidate"])
    assert all(one_a_heartbeat not in r.configuration["capacity-scheduler"] for r in sides["incumbent"])
    # Set for each candidate run and put back after it: two refreshes a run, and the cluster's own file at the end.
    assert one_a_heartbeat not in cluster.transport.read_text(
        cluster.spec.master, cluster.stack.layout(cluster.spec.master).conf_dir / "capacity-scheduler.xml")
    rm_log = (cluster.stack.client_logs() / "resourcemanager.log").read_text()
    assert (rm_log.count("assignMultipleEnabled = false"), rm_log.count("assignMultipleEnabled = true")) == (2, 2)
    order = [r.parameters["variant"] for r in sorted(runs.values(), key=lambda r: r.started_at) if r.cell]
    assert order == [f"t{trial.number}-{side}" for side in ("incumbent", "candidate") * 2], order
    assert trial.speedup is not None and trial.accepted == (trial.speedup.ci_low > 1.0)
    written = yaml.safe_load(target.read_text())
    assert written["trials"][0]["runs"] == trial.runs and written["question"]["workload"] == "wordcount"
    assert (tmp_path / "r" / "tuning").is_dir()
    assert NAME in ClusterState.names(), "the module's cluster stays up"


def test_down_leaves_nothing_behind(cluster):
    """`cluster down` removes every namespace, mount, loop device, cgroup, link, process and the record."""
    assert nodes.down(NAME) == []
    assert leaked() == NOTHING
    assert not paths.cluster_dir(NAME).exists()
