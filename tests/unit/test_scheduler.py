"""A run's scheduler settings: set on the running cluster for the run, the cluster's own put back after it."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from sbclab.errors import SbclabError
from sbclab.experiments import model
from sbclab.stack import clients, scheduler
from sbclab.stack.config import check_job_settings

ONE_A_HEARTBEAT = {"capacity-scheduler": {
    "yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled": "false"}}
OWN = {"yarn.scheduler.capacity.maximum-am-resource-percent": "0.5"}


class _Master:
    """A stack whose master keeps the files written to its configuration folder, and the refreshes asked."""

    def __init__(self, hadoop="3.4.2", refresh_status=0):
        master = SimpleNamespace(name="master")
        self.spec = SimpleNamespace(master=master, worker_nodes=[])
        self.record = SimpleNamespace(configuration={"capacity-scheduler": dict(OWN)})
        self.dist = SimpleNamespace(stack=SimpleNamespace(hadoop=hadoop))
        self.transport = SimpleNamespace(put=self._put)
        self.written: list[str] = []
        self.refreshes = 0
        self.refresh_status = refresh_status

    def layout(self, node):
        return SimpleNamespace(conf_dir=Path("/conf"))

    def _put(self, node, folder, files):
        self.written.append(files["capacity-scheduler.xml"])


@pytest.fixture
def master(monkeypatch):
    stack = _Master()

    def refresh(stack_, main_class, args, log, label, timeout_s):
        assert main_class.endswith("RMAdminCLI") and args == ["-refreshQueues"]
        stack_.refreshes += 1
        return SimpleNamespace(exit_status=stack_.refresh_status)
    monkeypatch.setattr(clients, "hadoop_class", refresh)
    return stack


def test_a_runs_scheduler_settings_hold_for_the_run_and_the_clusters_come_back(master, tmp_path):
    with scheduler.for_run(master, ONE_A_HEARTBEAT, tmp_path / "log"):
        assert master.refreshes == 1 and "multiple-assignments-enabled" in master.written[-1]
        assert "maximum-am-resource-percent" in master.written[-1], "the cluster's other settings stay"
    assert master.refreshes == 2 and "multiple-assignments-enabled" not in master.written[-1]


def test_the_clusters_own_come_back_when_the_run_fails(master, tmp_path):
    with pytest.raises(RuntimeError):
        with scheduler.for_run(master, ONE_A_HEARTBEAT, tmp_path / "log"):
            raise RuntimeError("the job failed")
    assert master.refreshes == 2 and "multiple-assignments-enabled" not in master.written[-1]


def test_nothing_is_refreshed_for_a_run_that_asks_for_none_or_for_what_the_cluster_has(master, tmp_path):
    for settings in (None, {"mapred-site": {"mapreduce.job.reduces": "2"}}, {"capacity-scheduler": dict(OWN)}):
        with scheduler.for_run(master, settings, tmp_path / "log"):
            pass
    assert master.refreshes == 0 and master.written == []


def test_a_refresh_the_resourcemanager_refuses_is_one_sentence(master, tmp_path):
    master.refresh_status = 255
    with pytest.raises(SbclabError, match="did not take the scheduler's settings"):
        with scheduler.for_run(master, ONE_A_HEARTBEAT, tmp_path / "log"):
            pass


def test_only_the_assignments_per_heartbeat_are_a_runs_and_only_where_a_refresh_reads_them(master, tmp_path):
    check_job_settings(ONE_A_HEARTBEAT)
    with pytest.raises(SbclabError, match="not a job's setting"):
        check_job_settings({"capacity-scheduler": OWN})
    master.dist.stack.hadoop = "3.1.3"
    with pytest.raises(SbclabError, match="only when it starts"):
        with scheduler.for_run(master, ONE_A_HEARTBEAT, tmp_path / "log"):
            pass
    assert master.refreshes == 0
    raw = {"workloads": ["terasort"], "engines": ["hadoop"], "variants": {"spread": ONE_A_HEARTBEAT}}
    assert model.parse(raw).variants["spread"] == ONE_A_HEARTBEAT
    with pytest.raises(SbclabError, match="stack lee-oh-park-2021: Hadoop 3.1.3"):
        model.parse({**raw, "stacks": ["lee-oh-park-2021"]})
