"""Integration tests bring up real clusters: emulated when root, processes otherwise.

Every fixture removes what it made, also when a test fails, and the tests check the host holds no
namespace, mount, loop device, cgroup, link or process of sbclab's afterwards.
"""

import os
import shutil
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from sbclab import paths
from sbclab import workloads as registry
from sbclab.cluster import nodes, spec
from sbclab.cluster.nodes import default_backend
from sbclab.cluster.state import ClusterState
from sbclab.errors import SbclabError
from sbclab.experiments.document import Provenance
from sbclab.experiments.orchestrator import Runner
from sbclab.monitor.settings import MonitorSettings
from sbclab.results.store import ResultsStore
from sbclab.stack import distribution, lifecycle, versions as stack_versions
from sbclab.stack.choices import StackChoices
from sbclab.workloads.base import new_id

# What leaked() finds on a clean host: no resource of any kind (named, so that a failed check says which).
NOTHING = {kind: [] for kind in ("namespaces", "mounts", "loop_devices", "cgroups", "links", "processes",
                                 "dirty_limits", "containers")}
# How long a resource of no known cluster may take to go before it counts as leaked: another worker's
# cluster is removed resource by resource, and a check that lands mid-way sees what is about to go.
SETTLE_S = 20

# A board for the tests of mechanics (bring-up, binding, runs stored, the report, faults): one core,
# so an emulated node's whole quota is one virtual core. A Pi 5's four cores each get a sixth of a host
# core here, and a JVM starting up, one busy thread, takes most of a minute on one; the fidelity
# tests (measurements, node benchmarks, orderings) keep the seeds' boards.
MECHANICS_BOARD = "test-one-core"
MECHANICS_PROFILE = {
    "description": "sbclab's tests of mechanics: one core, the Pi 5's storage figures",
    "arch": "x86_64", "cores": 1, "clock_ghz": 2.4, "ram_gib": 8, "price_usd": 80, "idle_watts": 5.54,
    "load_watts": 10.31, "nic_mbps": 1000, "storage_interfaces": ["pcie"], "io_like": "rpi5b",
    "sources": {"cores, clock_ghz, ram_gib, price_usd, idle_watts, load_watts, nic_mbps, storage_interfaces":
                "tests/integration/conftest.py: not a board; the rpi5b's figures but one core"}}


# Host cores the tests' clusters are shaped for where fidelity to the host's size is not the point:
# twice what it has. Every node keeps a quota of its own, which is what those tests check, while the
# busy nodes of a job (the workers; the master idles through most of it) use the whole host rather
# than the two thirds their shares of it would give them.
OVERSUBSCRIBED = 2 * spec.host_cores()

def pytest_configure(config):
    """The tests keep their clusters' records in a home of their own beside the user's, sharing only
    the fetched stack and the host's calibration: a test never sees or removes a user's cluster, and
    a record a killed test run left is found there by the next run. Each parallel worker (make test
    runs the tests of mechanics several at a time) has a home of its own inside that one, so what it
    leaves is told apart from what the other is running."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    shared_from = paths.home()  # a worker's is the tests' home, set by the run that started it
    _tests_home.append(shared_from if worker else shared_from / "tests")
    test_home = _tests_home[0] / worker if worker else _tests_home[0]
    test_home.mkdir(parents=True, exist_ok=True)
    for shared in ("cache", "calibration"):
        (shared_from / shared).mkdir(exist_ok=True)
        if not (test_home / shared).is_symlink():
            (test_home / shared).symlink_to(shared_from / shared)
    os.environ["SBCLAB_HOME"] = str(test_home)
    boards = test_home / "profiles" / "boards"
    boards.mkdir(parents=True, exist_ok=True)
    (boards / f"{MECHANICS_BOARD}.yaml").write_text(yaml.safe_dump(MECHANICS_PROFILE, sort_keys=False))


# The order make test's workers take the modules in (one at a time each, the next as one ends; the
# Makefile keeps xdist from reordering them by their number of tests): the longest first, so that no
# long module starts late and runs on alone at the end — the suite (about a third of all the test work)
# on one worker, the fault module and then the SSH boards on the others — and the short modules and
# then the unit tests fill the end (durations in docs/notes.md "Test time").
MODULE_ORDER = ("test_suite", "test_faults", "test_small_boards", "test_ssh_boards", "test_containers",
                "test_reproduce", "test_cluster", "test_monitoring", "test_debian13_boards", "test_seed_stacks",
                "test_layouts", "test_wheel")


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if item.path.parent == here:
            item.add_marker(pytest.mark.integration)

    def rank(item) -> tuple[int, int]:
        if item.path.parent != here:
            return (2, 0)  # the unit tests, last
        name = item.path.stem
        return (0, MODULE_ORDER.index(name)) if name in MODULE_ORDER else (1, 0)
    # A stable sort: each module's tests keep their order.
    items.sort(key=rank)


@pytest.fixture(scope="session", autouse=True)
def stack_is_installed():
    # `make test` fetches every stack first; without them every test here would fail for the same reason.
    for name in stack_versions.runnable():
        distribution.installed(name)


@pytest.fixture(scope="session", autouse=True)
def no_abandoned_cluster():
    """Clusters a killed sbclab left on this host (a main job stopped mid-way) are removed first, said aloud:
    the leak checks here are about what the tests make, and a live cluster of someone else's still fails them."""
    for name in ClusterState.names():
        if _backend_of(name) == "ssh":
            # Its boards were a killed test run's namespaces and went with it: asking them would send
            # SSH to addresses no test made.
            shutil.rmtree(paths.cluster_dir(name))
            print(f"forgot the record of boards '{name}' a killed test run left")
    for name in nodes.abandoned():
        leftovers = nodes.down(name, force=True)
        print(f"removed the abandoned cluster '{name}' before the tests", f"(could not remove: {leftovers})" if leftovers else "")
    # What is left is another sbclab's (a user's cluster on this host): the tests answer for what they make.
    _before_the_tests.update(nodes.resources_on_host())
    if any(_before_the_tests.values()):
        print("sbclab resources on this host before the tests, not the tests' own:",
              {kind: len(found) for kind, found in _before_the_tests.items()})


_before_the_tests: dict[str, frozenset[str]] = {}
_tests_home: list[Path] = []  # set once, in pytest_configure


def leaked() -> dict[str, list[str]]:
    """What of sbclab's is on the host now that was not there before the tests began, besides what the
    other parallel workers' clusters hold, by kind; what is still there once it has had SETTLE_S to go."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        found = _unaccounted()
        if not any(found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(1)


def _unaccounted() -> dict[str, list[str]]:
    others = _other_workers_clusters()
    found = nodes.resources_on_host()
    # A record is written before what it records, so a cluster started while we looked is known by now.
    for home, names in _other_workers_clusters().items():
        others.setdefault(home, set()).update(names)
    return {kind: sorted(r for r in items - _before_the_tests.get(kind, frozenset()) if not _of_another_worker(kind, r, others))
            for kind, items in found.items()}


def _other_workers_clusters() -> dict[Path, set[str]]:
    """The clusters recorded in the other parallel workers' homes (none when the tests run one at a time)."""
    me = paths.home()
    if me.parent != _tests_home[0]:
        return {}
    return {home: {d.name for d in (home / "clusters").glob("*")} for home in _worker_homes() if home != me}


def _worker_homes() -> list[Path]:
    return sorted(p for p in _tests_home[0].glob("gw*") if p.is_dir())


def _of_another_worker(kind: str, resource: str, others: dict[Path, set[str]]) -> bool:
    """Whether a resource is one of another worker's clusters', by the names sbclab gives them (mounts,
    loop devices and processes are only looked for under this worker's own home)."""
    names = set().union(*others.values())
    base = Path(resource).name
    if kind in ("namespaces", "containers"):
        return any(base.startswith(f"sbclab-{name}-") for name in names)
    if kind == "links":
        return any(base.startswith(f"sb-{name}-") for name in names)
    if kind == "cgroups":
        # sbclab's own group holds every cluster's: its files are there while any cluster is.
        return base in names or (bool(names) and not Path(resource).is_dir())
    if kind == "dirty_limits":
        try:
            backing = Path(f"/sys/dev/block/{resource}/loop/backing_file").read_text().strip()
        except OSError:
            return False
        return any(backing.startswith(f"{home}/") for home in others)
    return False


def _everything_of_the_tests() -> dict[str, frozenset[str]]:
    """sbclab's resources on the host under the tests' home and every worker's (the parallel run's own check)."""
    found: dict[str, set[str]] = {}
    for home in [_tests_home[0], *_worker_homes()]:
        for kind, items in nodes.resources_on_host(home).items():
            found.setdefault(kind, set()).update(items)
    return {kind: frozenset(items) for kind, items in found.items()}


def _runs_workers(config) -> bool:
    return config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    if _runs_workers(session.config):
        _before_the_tests.update(_everything_of_the_tests())


def pytest_sessionfinish(session, exitstatus):
    """With parallel workers each test checks only what its own worker leaves; once both are done,
    the host is checked whole."""
    if not _runs_workers(session.config):
        return
    left = {kind: sorted(items - _before_the_tests.get(kind, frozenset()))
            for kind, items in _everything_of_the_tests().items()}
    if any(left.values()):
        print("\nthe tests left on this host:", {kind: items[:3] for kind, items in left.items() if items})
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _backend_of(name: str) -> str | None:
    try:
        return ClusterState.load(name).spec.backend
    except SbclabError:  # a record of another sbclab version is left for 'cluster down' to report
        return None


def small_spec(name: str, backend: str | None = None, knobs: tuple[str, ...] = ("quick-start",), workers: int = 2,
               **kw) -> spec.ClusterSpec:
    """Master + 2 workers (or `workers`) of this host's default backend. The tests' clusters start their JVMs with
    the quick-start knob (C1 only): they check what sbclab does, on data so small that a JVM's
    start-up is most of a job; test_monitoring keeps the default JVMs, whose runs it measures."""
    built = spec.build(name=name, backend=backend or default_backend(), workers=workers, disk_bytes=2 * 2**30, **kw)
    return built.model_copy(update={"knobs": knobs})


def mechanics_spec(name: str, **kw) -> spec.ClusterSpec:
    """A cluster for tests of what sbclab does rather than of what it measures (MECHANICS_BOARD),
    shaped as if this host had twice its cores (OVERSUBSCRIBED)."""
    return small_spec(name, board=MECHANICS_BOARD, cores=OVERSUBSCRIBED, **kw)



@pytest.fixture
def clean_host():
    """Asserts the host holds nothing of sbclab's after the test, whatever the test did."""
    assert leaked() == NOTHING, "a previous run leaked; run 'sbclab cluster down --force'"
    yield
    assert leaked() == NOTHING


def host_addresses() -> list[str]:
    """This host's own IPv4 addresses, other than the emulated cluster's bridges."""
    found = []
    for name, addresses in psutil.net_if_addrs().items():
        if name.startswith("sb-"):
            continue
        found += [a.address for a in addresses if a.family == socket.AF_INET]
    return found


def reachable(address: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((address, port)) == 0


def listening_sockets(cluster: lifecycle.Cluster) -> dict[str, list[str]]:
    """Listening TCP addresses per node ('ip:port')."""
    result = {}
    if cluster.spec.backend == "emulated":
        for node in cluster.spec.nodes:
            ns = cluster.transport.netns(node)
            out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-ltnH"], capture_output=True, text=True).stdout
            result[node.name] = [line.split()[3] for line in out.splitlines() if line.strip()]
        return result
    pids_by_node: dict[str, set[int]] = {}
    for entry in cluster.state.of_kind("process"):
        try:
            proc = psutil.Process(entry["pid"])
            pids_by_node.setdefault(entry["node"], set()).update({proc.pid, *(c.pid for c in proc.children(True))})
        except psutil.Error:
            pass
    for node, pids in pids_by_node.items():
        result[node] = [f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.net_connections("tcp")
                        if c.status == psutil.CONN_LISTEN and c.pid in pids]
    return result


@contextmanager
def module_cluster(name: str, preset: str = "stock", spark_manager: str = "yarn", stack: str = stack_versions.DEFAULT,
                   **kw):
    """A cluster for a test module, removed afterwards whatever happened, on a host left clean."""
    remove_if_left(name)
    assert leaked() == NOTHING
    up = lifecycle.up(small_spec(name, **kw), StackChoices(preset=preset, spark_manager=spark_manager, stack=stack))
    try:
        yield up
    finally:
        remove_if_left(name)
    assert leaked() == NOTHING


def remove_if_left(name: str) -> None:
    if os.path.exists(paths.cluster_dir(name) / "state.json"):
        nodes.down(name, force=True)


# The too-busy check is test_diagnostics': a test of mechanics shares this host
# with two others, so each of its runs would be flagged, and the check's window costs every run 2 s.
MECHANICS_MONITOR = MonitorSettings(busy_window_s=0)


def runner(cluster, results, monitor: MonitorSettings | None = None) -> Runner:
    """The run path on a test's cluster, storing into `results`."""
    store = results if isinstance(results, ResultsStore) else ResultsStore(results)
    return Runner(cluster, store, monitor or MECHANICS_MONITOR, Provenance(new_id("exp", "test")))


def measure(cluster, results, workload: str, engine: str, params: dict | None = None, size_bytes: int | None = None,
            monitor: MonitorSettings | None = None, job_settings: dict | None = None):
    """One run of a workload down the run path; the stored run."""
    chosen = registry.get(workload)
    return runner(cluster, results, monitor).measure(chosen, engine, chosen.parameters(size_bytes, params),
                                                     variant="test" if job_settings else None,
                                                     job_settings=job_settings)


@contextmanager
def chromium():
    """Debian's headless Chromium driven through its own chromedriver (no driver download)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def not_blank(png) -> bool:
    """A screenshot with more than a handful of colours: something was drawn."""
    from matplotlib import image
    pixels = image.imread(png)
    return len({tuple(p) for p in pixels[::7, ::7].reshape(-1, pixels.shape[-1]).tolist()}) > 20


@contextmanager
def scraping(url: str, wanted: str):
    """Prometheus text read from url every half second while the block runs; yields the list that gets
    every scrape holding the metric family `wanted`, parsed by prometheus_client's own parser."""
    found: list[dict] = []
    done = threading.Event()

    def scrape():
        while not done.is_set():
            try:
                families = {f.name: f.samples for f in text_string_to_metric_families(requests.get(url, timeout=5).text)}
            except (requests.RequestException, ValueError):
                families = {}
            if wanted in families:
                found.append(families)
            done.wait(0.5)

    thread = threading.Thread(target=scrape, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        done.set()
        thread.join()


def prometheus_families(url: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(requests.get(url, timeout=10).text)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_second_windows(columns: dict) -> list[float]:
    """Host cores used, averaged over two seconds: the quota holds per CFS period and the balancer
    moves threads between virtual cores, so one half-second sample may hold a little more."""
    used, dts = columns["cpu_cores_used"], columns["dt"]
    return [sum(u * d for u, d in zip(used[i:i + 4], dts[i:i + 4])) / sum(dts[i:i + 4])
            for i in range(len(used) - 3) if None not in used[i:i + 4]]
