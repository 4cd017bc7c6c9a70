"""The census of a cluster's daemons before and after a run, its repair, and the flag a lost daemon raises."""


import pytest

from sbclab.cluster import spec as cluster_spec
from sbclab.errors import SbclabError
from sbclab.results.schema import Liveness
from sbclab.stack import liveness
from sbclab.stack.choices import StackChoices
from sbclab.stack.daemons import DATANODE, NODEMANAGER, SPARK_WORKER, daemons_of

from .test_results import make_run


class _State:
    def __init__(self, entries):
        self.entries = entries

    def forget(self, entry):
        self.entries.remove(entry)


class _Transport:
    """Sessions by daemon key and node; `dead` holds the (key, node) whose process has ended."""

    def __init__(self, spec, choices, dead=()):
        self.dead = set(dead)
        self.state = _State([{"label": d.key, "node": n.name}
                             for d in daemons_of(choices) for n in (spec.worker_nodes if d.role == "worker" else [spec.master])])

    def sessions(self, label):
        return [e for e in self.state.entries if e["label"] == label]

    def still_running(self, entries):
        return [(e["label"], e["node"]) not in self.dead for e in entries]


class _Stack:
    """What liveness asks of a Stack, with the masters' counts set by the test."""

    def __init__(self, spec, dead=(), counts=None, restart_heals=True, choices=StackChoices()):
        self.spec, self.choices, self.transport = spec, choices, _Transport(spec, choices, dead)
        self.counts = {"datanode": spec.workers, "nodemanager": spec.workers, "sparkworker": spec.workers, **(counts or {})}
        self.restart_heals, self.started = restart_heals, []

    def nodes_for(self, daemon):
        return [self.spec.master] if daemon.role == "master" else self.spec.worker_nodes

    def datanodes_counted(self):
        return self.counts["datanode"]

    def yarn_nodes(self):
        return [{}] * self.counts["nodemanager"]

    def spark_workers(self):
        n = self.counts["sparkworker"]
        return None if n is None else [{}] * n

    def start(self, daemon, nodes):
        self.started.append((daemon.key, [n.name for n in nodes]))
        if self.restart_heals:
            for n in nodes:
                self.transport.dead.discard((daemon.key, n.name))
                self.transport.state.entries.append({"label": daemon.key, "node": n.name})


def _spec(**kw):
    return cluster_spec.build(backend="emulated", board="rpi4b-4gb", storage="microsd-evo", workers=3, cores=2, **kw)


def test_a_whole_cluster_misses_nothing():
    found = liveness.census(_Stack(_spec()))
    assert found.whole and found.expected == {"NameNode": 1, "ResourceManager": 1, "JobHistory server": 1,
                                              "DataNode": 3, "NodeManager": 3}


def test_an_ended_process_is_missing_even_while_its_master_still_counts_it():
    found = liveness.census(_Stack(_spec(), dead=[("datanode", "worker2")]))
    assert found.missing == ["DataNode on worker2: its process has ended"]


def test_a_node_its_master_no_longer_counts_is_missing_though_every_process_runs():
    """A paused or cut-off node: its processes live, its master has given up on it."""
    found = liveness.census(_Stack(_spec(), counts={"nodemanager": 2}))
    assert found.missing == ["NodeManager: 2 of 3 counted live by the ResourceManager"]
    silent = liveness.census(_Stack(_spec(), counts={"datanode": None}))
    assert silent.missing == ["DataNode: the NameNode did not answer"]


def test_spark_standalone_counts_its_workers_at_the_spark_master():
    found = liveness.census(_Stack(_spec(), dead=[("sparkworker", "worker3")], counts={"sparkworker": 2},
                                   choices=StackChoices(spark_manager="standalone")))
    assert SPARK_WORKER.title in found.expected and "NodeManager" not in found.expected
    # The ended process says it, not its master's lagging count again.
    assert found.missing == ["Spark worker on worker3: its process has ended"]


def test_repair_restarts_what_ended_forgets_its_dead_session_and_waits_until_whole():
    stack = _Stack(_spec(), dead=[("datanode", "worker2"), ("nodemanager", "worker2")])
    found, repairs = liveness.ensure_whole(stack, timeout_s=5)
    assert found.whole and repairs == ["DataNode restarted on worker2", "NodeManager restarted on worker2"]
    assert stack.started == [("datanode", ["worker2"]), ("nodemanager", ["worker2"])]
    assert len(stack.transport.sessions(DATANODE.key)) == 3  # the dead one's record gone, the new one's kept


def test_a_cluster_that_stays_short_is_refused_with_what_is_missing():
    stack = _Stack(_spec(), counts={"nodemanager": 1})
    with pytest.raises(SbclabError) as err:
        liveness.ensure_whole(stack, timeout_s=0)
    assert "short of daemons" in str(err.value) and "1 of 3 counted live" in str(err.value)
    assert NODEMANAGER.key not in [k for k, _ in stack.started]


def test_what_a_run_lost_flags_it_and_what_was_missing_before_does_not():
    run = make_run()
    assert not run.flagged
    kept = Liveness(expected={"DataNode": 3}, before=["DataNode: 2 of 3 counted live by the NameNode"],
                    after=["DataNode: 2 of 3 counted live by the NameNode"])
    assert not run.model_copy(update={"liveness": kept}).flagged
    lost = Liveness(expected={"DataNode": 3}, after=["DataNode on worker2: its process has ended"])
    flagged = run.model_copy(update={"liveness": lost})
    assert flagged.flagged and flagged.status == "flagged" and not flagged.headline
    assert flagged.flag_reasons == ["lost DataNode on worker2: its process has ended"]
    assert liveness.lost_between(liveness.Census(expected={}), liveness.Census(expected={"DataNode": 3},
                                 ended={"DataNode": ["worker2"]})) == ["DataNode on worker2: its process has ended"]
