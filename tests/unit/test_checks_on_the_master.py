"""Checks that are jobs (TeraValidate, SortCheck) run in one JVM on the master for small data, on the
cluster above CHECKED_ON_THE_MASTER_BYTES."""

from pathlib import Path
from types import SimpleNamespace

from sbclab.workloads import sort, terasort
from sbclab.workloads.base import CHECKED_ON_THE_MASTER_BYTES


def _ctx():
    return SimpleNamespace(job_log=lambda run_id, name: Path("/nonexistent") / name,
                           hdfs=lambda args, log, check=True: SimpleNamespace(output="checksum\t2a\n"))


def test_teravalidate_runs_in_mapreduces_local_runner_up_to_the_limit(monkeypatch):
    submitted = []
    monkeypatch.setattr(terasort, "hadoop_example", lambda ctx, run_id, label, args: submitted.append(args) or
                        SimpleNamespace(exit_status=0, wall_time_s=1.0, job_ids=["job_local1_0001"]))
    for size in (CHECKED_ON_THE_MASTER_BYTES, CHECKED_ON_THE_MASTER_BYTES + 1):
        checks, result = terasort.teravalidate(_ctx(), "r", "/out", {"bytes": size, "checksum": 0x2a})
        assert all(c.passed for c in checks)
    small, large = submitted
    assert small[:2] == ["teravalidate", "-Dmapreduce.framework.name=local"] and "-Dmapreduce.framework.name=local" not in large
    assert result["validated_on"] == "the cluster"


def test_sortcheck_runs_in_sparks_local_mode_up_to_the_limit(monkeypatch):
    where = []
    found = {"records": 1, "bytes": 0, "checksum": 7, "unordered_pairs": 0, "boundary_violations": 0}
    monkeypatch.setattr(sort, "spark_job", lambda ctx, run_id, label, main_class, args, on_the_master=False:
                        where.append(on_the_master) or (SimpleNamespace(exit_status=0), found, {}, {}))
    said = []
    for size in (CHECKED_ON_THE_MASTER_BYTES, CHECKED_ON_THE_MASTER_BYTES + 1):
        checks, figures = sort.Sort()._validate(_ctx(), "r", "/out", {**found, "bytes": size}, total_order=True)
        said.append(figures["validated_on"])
    assert where == [True, False] and said == ["the master (Spark's local mode)", "the cluster"]
