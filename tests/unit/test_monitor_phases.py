"""Phases and intermediate data from the engines' records, and device figures from samples."""

from pathlib import Path

import pytest

from sbclab.cluster import spec
from sbclab.monitor import intermediate, phases
from sbclab.monitor import health
from sbclab.stack.counters import spark_intermediate_by_host, spark_tasks_by_host

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"
EVENTS = FIXTURES / "spark_events_wordcount.jsonl"


def test_spark_jobs_and_stages_from_a_recorded_event_log():
    found = phases.spark_phases(EVENTS)
    names = [p["name"] for p in found]
    assert names[0] == "spark job 0 submitted" and "spark job 0 finished" in names
    stages = [p for p in found if p["name"].startswith("stage ")]
    assert [s["name"] for s in stages] == ["stage 0 flatMapToPair", "stage 1 runJob"]
    assert all(s["end"] > s["start"] > 1.7e9 for s in stages) and stages[0]["end"] <= stages[1]["start"]


def test_spark_intermediate_bytes_per_executor_host():
    by_host = spark_intermediate_by_host(EVENTS)
    assert set(by_host) <= {"worker1", "worker2"} and sum(by_host.values()) > 10**7


def test_hadoop_phases_from_a_jobhistory_record():
    job = {"id": "job_1_0001", "submitTime": 1000_000, "startTime": 1002_000, "finishTime": 1060_000}
    tasks = [{"type": "MAP", "startTime": 1010_000, "finishTime": 1030_000},
             {"type": "MAP", "startTime": 1012_000, "finishTime": 1035_000},
             {"type": "REDUCE", "startTime": 1031_000, "finishTime": 1058_000}]
    found = {p["name"]: (p["start"], p["end"]) for p in phases.hadoop_phases(job, tasks)}
    assert found == {"job_1_0001 submitted": (1000, 1000), "job_1_0001 map phase": (1010, 1035),
                     "job_1_0001 reduce phase": (1031, 1058), "job_1_0001 finished": (1060, 1060)}


def _samples(written_before: int, written_after: int, start: float, end: float) -> list[dict]:
    return [{"t": start - 0.5, "disk": {"write_bytes": written_before}},
            {"t": end + 0.2, "mark": "end job", "disk": {"write_bytes": written_after}}]


def test_device_intermediate_is_device_writes_less_hdfs_blocks():
    nodes = {"master": {"target": {"scope": "node"}, "samples": _samples(0, 10**6, 10, 20)},
             "worker1": {"target": {"scope": "node"}, "samples": _samples(0, 9 * 10**7, 10, 20)}}
    datanodes = [{"t": 9.9, "label": "start job", "nodes": {"worker1": {"bytes_written": 5 * 10**6}}},
                 {"t": 20.1, "label": "end job", "nodes": {"worker1": {"bytes_written": 35 * 10**6}}}]
    counters = {"File System Counters": {"FILE: Number of bytes written": 8 * 10**7}, "Map-Reduce Framework": {}}
    got = intermediate.measure(nodes, datanodes, ["worker1"], 10, 20, "hadoop", counters, 2 * 10**7)
    assert got["nodes"]["worker1"] == {"device_write_bytes": 9 * 10**7, "hdfs_write_bytes": 3 * 10**7,
                                       "intermediate_bytes": 6 * 10**7}
    assert got["device_bytes"] == 6 * 10**7 + 10**6 and got["device_ratio"] == pytest.approx(3.05)
    assert got["engine_bytes"] == 8 * 10**7 and got["engine_ratio"] == 4.0
    shaped = spec.build(backend="emulated", workers=1, cores=2, memory_bytes=24 * 2**30)
    intermediate.attach_engine_by_node(got, {"10.213.0.11": 7 * 10**7, "elsewhere": 5}, shaped)
    assert got["nodes"]["worker1"]["engine_bytes"] == 7 * 10**7 and "elsewhere" in got["notes"][0]


def test_a_host_wide_sampler_subtracts_every_datanode():
    nodes = {"host": {"target": {"scope": "host"}, "samples": _samples(0, 10**8, 10, 20)}}
    datanodes = [{"t": 9.0, "nodes": {"worker1": {"bytes_written": 0}, "worker2": {"bytes_written": 0}}},
                 {"t": 21.0, "nodes": {"worker1": {"bytes_written": 10**7}, "worker2": {"bytes_written": 2 * 10**7}}}]
    got = intermediate.measure(nodes, datanodes, ["worker1", "worker2"], 10, 20, "spark", {}, None)
    assert got["nodes"]["host"]["intermediate_bytes"] == 7 * 10**7 and got["device_ratio"] is None


def test_a_worker_that_ran_no_task_of_a_job_big_enough_for_all_is_flagged():
    shape = spec.build(name="t", backend="processes", workers=2, board="rpi5b", storage="nvme")
    ran = health.tasks_by_worker(spark_tasks_by_host(EVENTS), shape)
    assert set(ran) == {"worker1", "worker2"} and sum(ran.values()) > 0
    # The Spark WordCount: both executors registered, all four tasks ran on worker1.
    [flag] = health.idle_workers(health.tasks_by_worker({"worker1": 4}, shape), 100.0)
    assert flag["node"] == "worker2" and flag["kind"] == "idle_worker" and "none of the job's 4 tasks" in flag["detail"]
    assert health.idle_workers({"worker1": 3, "worker2": 0}, 100.0) == []  # too few tasks to need both
    assert health.idle_workers({"worker1": 3, "worker2": 2}, 100.0) == []
    assert health.idle_workers({"worker1": 9}, 100.0) == []  # one worker is all the cell names


def test_tasks_on_nodes_that_share_one_address_are_not_given_to_one_of_them():
    shape = spec.build(name="t", backend="processes", workers=2, board="rpi5b", storage="nvme")
    address = shape.worker_nodes[0].address
    assert shape.worker_nodes[1].address == address
    assert health.tasks_by_worker({address: 8}, shape) == {"worker1": 0, "worker2": 0}
    assert health.tasks_by_worker({"worker2": 8}, shape) == {"worker1": 0, "worker2": 8}
