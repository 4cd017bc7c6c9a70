"""What HDFS has still to delete before a job's opening trim, and the wait for it.

A run measured by fstrim (the 2026 seed's intermediate data) must not count the previous run's
output, which its validation deleted: the DataNodes remove those files seconds later.
"""

from types import SimpleNamespace

from sbclab.experiments import orchestrator
from sbclab.stack.daemons import awaiting_deletion

HADOOP3 = {"10.0.0.11:9866": {"xferaddr": "10.0.0.11:9866", "numBlocks": 4},
           "10.0.0.12:9866": {"xferaddr": "10.0.0.12:9866", "numBlocks": 2}}


def test_nothing_awaits_deletion_when_every_disk_holds_what_the_namenode_counts():
    assert awaiting_deletion(0, HADOOP3, {"10.0.0.11:9866": 4, "10.0.0.12:9866": 2}) == 0


def test_the_namenodes_queue_and_the_replicas_a_datanode_still_holds_both_count():
    assert awaiting_deletion(3, HADOOP3, {"10.0.0.11:9866": 4, "10.0.0.12:9866": 2}) == 3
    assert awaiting_deletion(0, HADOOP3, {"10.0.0.11:9866": 9, "10.0.0.12:9866": 2}) == 5
    assert awaiting_deletion(1, HADOOP3, {"10.0.0.11:9866": 9, "10.0.0.12:9866": 3}) == 7


def test_a_replica_the_namenode_has_not_yet_heard_of_is_not_one_to_delete():
    """A block just written is on the disk before its DataNode reports it; fewer on disk than
    counted is such a lag the other way, and never a negative count."""
    assert awaiting_deletion(0, HADOOP3, {"10.0.0.11:9866": 1, "10.0.0.12:9866": 2}) == 0


def test_hadoop_2s_datanodes_keyed_by_host_name_are_matched_by_their_transfer_address():
    hadoop2 = {"worker1": {"xferaddr": "10.0.0.11:50010", "numBlocks": 1}}
    assert awaiting_deletion(0, hadoop2, {"10.0.0.11:50010": 3}) == 2


def test_datanodes_sharing_a_host_are_told_apart_by_their_ports():
    """The processes backend runs every DataNode on this host's address."""
    shared = {"127.0.0.1:9866": {"xferaddr": "127.0.0.1:9866", "numBlocks": 1},
              "127.0.0.1:9966": {"xferaddr": "127.0.0.1:9966", "numBlocks": 0}}
    assert awaiting_deletion(0, shared, {"127.0.0.1:9866": 1, "127.0.0.1:9966": 1}) == 1


def test_a_datanode_the_namenode_does_not_list_is_left_out():
    assert awaiting_deletion(0, HADOOP3, {"10.0.0.11:9866": 4, "10.0.0.99:9866": 7}) == 0


class FakeStack:
    def __init__(self, answers):
        self.answers = list(answers)
        self.asked = 0

    def replicas_awaiting_deletion(self):
        self.asked += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def runner_with(stack, monkeypatch):
    trims = []
    monkeypatch.setattr(orchestrator.nodeops, "fstrim", lambda transport: trims.append(transport) or ["worker1"])
    monkeypatch.setattr(orchestrator.time, "sleep", lambda s: None)
    cluster = SimpleNamespace(stack=stack, transport="the transport")
    runner = orchestrator.Runner.__new__(orchestrator.Runner)
    runner.cluster = cluster
    return runner, trims


def test_the_opening_trim_waits_until_hdfs_has_deleted_what_it_was_asked_to(monkeypatch):
    stack = FakeStack([6, 6, 2, 0])
    runner, trims = runner_with(stack, monkeypatch)
    assert runner._trim_before_job() == []
    assert stack.asked == 4 and trims == ["the transport"]


def test_deletions_that_never_finish_are_noted_and_the_job_still_runs(monkeypatch):
    clock = iter(range(0, 10_000, 30))
    monkeypatch.setattr(orchestrator.time, "monotonic", lambda: next(clock))
    runner, trims = runner_with(FakeStack([5]), monkeypatch)
    notes = runner._trim_before_job()
    assert trims == ["the transport"]
    assert notes == ["HDFS still had 5 replica(s) to delete when the job began: the trim after it may count them"]


def test_hdfs_that_does_not_answer_is_noted_without_waiting(monkeypatch):
    stack = FakeStack([None])
    runner, trims = runner_with(stack, monkeypatch)
    assert runner._trim_before_job() == ["HDFS did not say what it had left to delete before the job"]
    assert stack.asked == 1 and trims == ["the transport"]
