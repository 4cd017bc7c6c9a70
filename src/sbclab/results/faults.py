"""Faults as data: one declared in an experiment (FaultSpec) and one as a run document keeps it
(FaultRun), with what the cluster's engines did about it (FaultEffects). sbclab.faults applies them."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The Java main classes a fault can aim at on a worker, by the name an experiment gives them.
PROCESSES = {
    "datanode": r"org\.apache\.hadoop\.hdfs\.server\.datanode\.DataNode",
    "nodemanager": r"org\.apache\.hadoop\.yarn\.server\.nodemanager\.NodeManager",
    "sparkworker": r"org\.apache\.spark\.deploy\.worker\.Worker",
    "task": r"org\.apache\.hadoop\.mapred\.YarnChild",
    "executor": r"org\.apache\.spark\.executor\.\w*ExecutorBackend",
    "appmaster": r"org\.apache\.hadoop\.mapreduce\.v2\.app\.MRAppMaster|org\.apache\.spark\.deploy\.yarn\."
                 r"(ApplicationMaster|ExecutorLauncher)",
}
# Every JVM of the cluster on a node: what a paused board stops.
ANY_JAVA = r"(^|/)java "


class FaultSpec(BaseModel):
    """One fault of an experiment, applied in a run of each of its cells (beside the unfaulted run)."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="kill, pause, partition, fill-disk")
    node: str = Field("random", description="the worker it hits, or random (chosen from the run's id)")
    at_s: float = Field(10.0, ge=0, le=86_400, description="seconds after the job starts, or after `phase` does")
    phase: str | None = Field(None, pattern=r"^(map|shuffle|reduce|stage \d{1,6})$",
                              description="a job phase to wait for first: map, shuffle, reduce (MapReduce) or "
                                          "'stage N' (Spark)")
    for_s: float | None = Field(None, gt=0, le=86_400, description="how long it lasts (pause, partition)")
    process: str | None = Field(None, description=f"kill: {', '.join(PROCESSES)}")
    loss_pct: float | None = Field(None, gt=0, le=100, description="partition: the share of packets to and from "
                                   "the other nodes dropped (100, the default: cut off)")
    level_pct: float | None = Field(None, gt=0, le=100, description="fill-disk: how full the node's data disk is made")
    speed_pct: float | None = Field(None, gt=0, lt=100, description="slow-disk: the share of its medium's rates and "
                                    "IOPS the node's disk keeps")
    workloads: list[str] | None = Field(None, description="the workloads whose cells it is applied to (default: all)")

    @property
    def label(self) -> str:
        what = self.kind
        if self.kind == "kill":
            what = f"kill {self.process}"
        elif self.kind == "partition" and self.loss_pct and self.loss_pct < 100:
            what = f"{self.loss_pct:g} % packet loss"
        elif self.kind == "fill-disk" and self.level_pct:
            what = f"fill disk to {self.level_pct:g} %"
        elif self.kind == "slow-disk" and self.speed_pct:
            what = f"disk slowed to {self.speed_pct:g} %"
        when = f"{self.at_s:g} s into {self.phase}" if self.phase else f"{self.at_s:g} s"
        return (f"{what} on {self.node} at {when}"
                + (f" for {self.for_s:g} s" if self.for_s else ""))


class FaultRun(BaseModel):
    """A fault as applied during a run: where, when (seconds after the job started), what it did."""

    model_config = ConfigDict(extra="forbid")

    spec: FaultSpec
    node: str
    phase_s: float | None = Field(None, description="when its phase began (seconds after the job started)")
    applied_s: float | None = None
    healed_s: float | None = None
    detail: str = ""
    problems: list[str] = []


class FaultEffects(BaseModel):
    """What Hadoop and Spark did about a run's faults, from their own counters, logs and masters, and
    how long the cluster took to be whole again."""

    model_config = ConfigDict(extra="forbid")

    completed: bool
    cause: str | None = Field(None, description="why the job failed, from its log, where it did")
    reactions: dict[str, Any] = Field(default_factory=dict, description="failed and killed task attempts, "
                                      "ApplicationMaster attempts, lost executors, resubmitted stages")
    hdfs: dict[str, Any] = Field(default_factory=dict, description="the NameNode's worst during the run: "
                                 "dead DataNodes, under-replicated and missing blocks")
    recovered_s: float | None = Field(None, description="from the first fault to the cluster whole again (every "
                                      "daemon live, no block under-replicated or missing); None: not within the wait")
    recovery: list[str] = Field(default_factory=list, description="what was done to make it whole")
