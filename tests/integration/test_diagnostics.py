"""A run on a host kept busy outside the cluster is flagged too busy to benchmark, and the report
says why: bare emulated nodes (no Hadoop or Spark) and a node benchmark of a second, so it is cheap."""

import os
import shutil
import subprocess

import pytest

from sbclab import workloads
from sbclab.experiments.orchestrator import cluster_for
from sbclab.monitor.settings import MonitorSettings
from sbclab.report import build, html
from sbclab.results.store import ResultsStore

from .conftest import NOTHING, leaked, remove_if_left, runner, small_spec

# The hog would flag the runs of any test beside it, and the check reads the whole host: make test runs it
# with the measurement tests, alone.
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="emulated nodes (root): the host they share is checked"),
              pytest.mark.measurement]

NAME = "idiag"
SETTINGS = MonitorSettings(hz=2, margin_s=0.5, idle_baseline_s=0)


@pytest.fixture
def hog(tmp_path):
    """A busy loop on every core of this host, outside the cluster, under a name of its own (`yes`
    copied: the kernel names a process after its program)."""
    program = tmp_path / "busy-hog"
    shutil.copy("/usr/bin/yes", program)
    started = [subprocess.Popen([str(program)], stdout=subprocess.DEVNULL) for _ in range(os.cpu_count() or 1)]
    try:
        yield program.name
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_a_run_beside_a_cpu_hog_is_flagged_too_busy_and_the_report_says_why(hog, tmp_path):
    remove_if_left(NAME)
    assert leaked() == NOTHING
    store = ResultsStore(tmp_path / "results")
    with cluster_for(small_spec(NAME, subnet="10.246.0.0/24"), bare=True) as cluster:
        idle = workloads.get("idle")
        run = runner(cluster, store, SETTINGS).measure(idle, "node", idle.parameters(None, {"node": "worker1",
                                                                                            "seconds": 1}))
    assert leaked() == NOTHING
    assert run.valid and run.status == "flagged"
    busy = run.measurements.diagnostics.busy.machines["host"]
    assert busy.outside_pct > SETTINGS.busy_max_pct and hog in [p.name for p in busy.top], busy
    [flag] = [f for f in run.measurements.flags if f.kind == "too_busy"]
    assert flag.node == "host" and flag.detail.startswith("too busy to benchmark: host ") and hog in flag.detail
    assert run.measurements.diagnostics.clock["host"].unavailable.startswith("emulated: the node's CPU is a quota")
    residency = run.measurements.diagnostics.residency["host"]
    assert bool(residency.unavailable) != bool(residency.policies), "this host's steps, or why there are none"

    page = html.write(build.build(store.root), tmp_path / "report")["html"].read_text()
    assert "too busy to benchmark: host" in page, "the excluded runs say why"
    assert "the host was" in page and f"{hog} " in page, "the run's diagnostics name what explains it"
