"""The levers `sbclab tune` searches: job settings (read by a job's client when it submits, so one
running cluster serves every configuration tried) and the scheduler's assignments per heartbeat (which
the ResourceManager takes on a refresh, for the run: scheduler.py), each with its choices and why it
might pay on a board.

A choice is a function of the cluster's own configuration (the master's values), so a lever can
double what sbclab sized for the board rather than set a number that suits one board and starves
another. The first choice of every lever, `keep`, is the cluster's configuration as it is.
"""

from dataclasses import dataclass
from typing import Callable

from . import sizing

Settings = dict[str, dict[str, str]]
Choice = Callable[[Settings, int], Settings]  # (the cluster's configuration, workers) -> job settings

# The JVM's client compiler only, and the serial collector: a task's JVM on a board spends a large
# share of its short life compiling and collecting (docs/notes.md measured the start-up).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
HADOOP_ADMIN_OPTS = "-Djava.net.preferIPv4Stack=true -Dhadoop.metrics.log.level=WARN"  # mapred-default.xml


def _keep(config: Settings, workers: int) -> Settings:
    return {}


def _get(config: Settings, file: str, name: str, default: str) -> str:
    return (config.get(file) or {}).get(name, default)


def _with_opts(current: str, extra: str) -> str:
    return current if extra in current else f"{current} {extra}".strip()


@dataclass(frozen=True)
class Lever:
    name: str
    engines: tuple[str, ...]
    why: str
    choices: dict[str, Choice]
    trades: str = ""  # what a choice gives up besides time (durability), where it does
    # Whether a choice depends on the cluster's worker count (one reduce a worker): a preset made on one
    # count is resolved again for another. The other choices depend on the board's sizing alone.
    scales_with_workers: bool = False

    def settings(self, choice: str, config: Settings, workers: int) -> Settings:
        return self.choices[choice](config, workers)


AM_MB_LEAST, AM_HEAP_SHARE = 512, 0.75
# YARN's own defaults (yarn-default.xml), for a configuration that leaves them unset.
NODE_MB_UPSTREAM, ALLOCATION_UNIT_MB_UPSTREAM = 8192, 1024


def _half_am(config: Settings, workers: int) -> Settings:
    container = max(AM_MB_LEAST, int(_get(config, "mapred-site", "yarn.app.mapreduce.am.resource.mb",
                                          str(sizing.UPSTREAM_AM_MB))) // 2)
    return {"mapred-site": {"yarn.app.mapreduce.am.resource.mb": str(container),
                            "yarn.app.mapreduce.am.command-opts": f"-Xmx{int(container * AM_HEAP_SHARE)}m"}}


def _at_most_a_node(container: str, count: int) -> Choice:
    """The container (a mapred-site size) of which a node holds at most `count`: YARN rounds a request
    up to its allocation unit, so the least multiple of it above 1/(count + 1) of the node's memory."""
    def choice(config: Settings, workers: int) -> Settings:
        node = int(_get(config, "yarn-site", "yarn.nodemanager.resource.memory-mb", str(NODE_MB_UPSTREAM)))
        unit = int(_get(config, "yarn-site", "yarn.scheduler.minimum-allocation-mb", str(ALLOCATION_UNIT_MB_UPSTREAM)))
        return {"mapred-site": {container: str((node // (count + 1) // unit + 1) * unit)}}
    return choice


def _quick_jvm(config: Settings, tasks: bool) -> Settings:
    mapred = {"yarn.app.mapreduce.am.admin-command-opts": _with_opts(
        _get(config, "mapred-site", "yarn.app.mapreduce.am.admin-command-opts", ""), QUICK_JVM)}
    spark = {"spark.yarn.am.extraJavaOptions": _with_opts(
        _get(config, "spark-defaults", "spark.yarn.am.extraJavaOptions", ""), QUICK_JVM)}
    if tasks:
        for kind in ("map", "reduce"):
            name = f"mapreduce.admin.{kind}.child.java.opts"
            mapred[name] = _with_opts(_get(config, "mapred-site", name, HADOOP_ADMIN_OPTS), QUICK_JVM)
        spark["spark.executor.extraJavaOptions"] = _with_opts(
            _get(config, "spark-defaults", "spark.executor.extraJavaOptions", ""), QUICK_JVM)
    return {"mapred-site": mapred, "spark-defaults": spark}


def _mapred(**properties: str) -> Choice:
    return lambda config, workers: {"mapred-site": {k.replace("_", "."): v for k, v in properties.items()}}


LEVERS: dict[str, Lever] = {lever.name: lever for lever in [
    Lever("map-output-compression", ("hadoop",),
          "map outputs are written to the node's disk and sent over its link; deflate (Java's own zlib, no native "
          "library needed) trades CPU for fewer bytes",
          {"keep": _keep,
           "deflate": lambda c, w: {"mapred-site": {"mapreduce.map.output.compress": "true",
                                                    "mapreduce.map.output.compress.codec":
                                                        "org.apache.hadoop.io.compress.DefaultCodec"}}}),
    Lever("sort-buffer", ("hadoop",),
          "a map spills its buffer to disk each time it fills: twice the buffer sbclab sized for the board, spilled "
          "later, means fewer spills and merges (it must still fit the task's heap)",
          {"keep": _keep,
           "double": lambda c, w: {"mapred-site": {
               "mapreduce.task.io.sort.mb": str(2 * int(_get(c, "mapred-site", "mapreduce.task.io.sort.mb", "100"))),
               "mapreduce.map.sort.spill.percent": "0.9"}}}),
    Lever("merge-factor", ("hadoop",),
          "how many spill files are merged at once: more means fewer merge passes over a slow disk",
          {"keep": _keep, "64": _mapred(mapreduce_task_io_sort_factor="64")}),
    Lever("reduce-slowstart", ("hadoop",),
          "when reduces start fetching: early ones hold containers the maps could use on a board with few slots",
          {"keep": _keep, "half": _mapred(mapreduce_job_reduce_slowstart_completedmaps="0.5"),
           "all-maps": _mapred(mapreduce_job_reduce_slowstart_completedmaps="1.0")}),
    Lever("reduce-in-memory", ("hadoop",),
          "a reduce merges every fetched map output onto its own disk before it reduces (input buffer 0 %); kept in "
          "its heap instead, a job whose map outputs fit skips writing and reading them again on a slow card",
          {"keep": _keep, "on": _mapred(mapreduce_reduce_input_buffer_percent="0.7")}),
    Lever("am-memory", ("hadoop",),
          "the ApplicationMaster's container (1.5 GB upstream) takes half a board's YARN memory, so the node it "
          "lands on runs fewer tasks than the others: half of it (at least 512 MB) tracks the few tasks of a "
          "board's job",
          {"keep": _keep, "half": _half_am}),
    Lever("reduce-placement", ("hadoop",),
          "YARN places containers by memory alone, so a job's reduces can land on one node and share its few slow "
          "cores while another node idles: a reduce container of just over half a node's memory fits once a node",
          {"keep": _keep, "one-a-node": _at_most_a_node("mapreduce.reduce.memory.mb", 1)}),
    Lever("map-placement", ("hadoop",),
          "the CapacityScheduler hands a node every container it can hold in one heartbeat, so a board with "
          "memory for four maps runs all of a small job's maps while another idles: a map container of just "
          "over a third of a node fits twice a node",
          {"keep": _keep, "two-a-node": _at_most_a_node("mapreduce.map.memory.mb", 2)}),
    Lever("split-spread", ("hadoop",),
          "TeraSort places its own splits (TeraScheduler): the first host it looks at takes as many as an old "
          "TaskTracker had map slots (mapreduce.tasktracker.map.tasks.maximum, 4) and each split is pinned to its "
          "host, so a 2-worker job's four splits all run on one board while the other idles. Two a host matches "
          "the two files a worker sbclab's TeraGen writes; `off` leaves the splits on every replica's host",
          {"keep": _keep, "two-a-host": _mapred(mapreduce_tasktracker_map_tasks_maximum="2"),
           "off": _mapred(mapreduce_terasort_use_terascheduler="false")}),
    Lever("heartbeat-assignments", ("hadoop", "spark"),
          "the CapacityScheduler hands a node every container it can hold in one heartbeat, so the board that reports "
          "first may take all of a small job's tasks or executors while another idles: one container a node a "
          "heartbeat (the ResourceManager's setting, set on the running cluster for the run: scheduler.py). It did "
          "not spread TeraSort's maps, which its own split scheduler pins to one host (split-spread)",
          {"keep": _keep, "one": lambda c, w: {"capacity-scheduler": {
              "yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled": "false"}}}),
    Lever("uber", ("hadoop",),
          "a small job's tasks run inside its ApplicationMaster's JVM: no container or JVM start per task",
          {"keep": _keep, "on": _mapred(mapreduce_job_ubertask_enable="true")}),
    Lever("speculation", ("hadoop",),
          "speculative copies of slow tasks compete for a board's few slots and its disk",
          {"keep": _keep, "off": lambda c, w: {"mapred-site": {"mapreduce.map.speculative": "false",
                                                                "mapreduce.reduce.speculative": "false"}}}),
    Lever("reduces", ("hadoop", "spark"),
          "the reduce-side parallelism of both engines (sbclab's jobs read mapreduce.job.reduces): one a worker or "
          "two a worker, against the preset's",
          {"keep": _keep, "per-worker": lambda c, w: {"mapred-site": {"mapreduce.job.reduces": str(w)}},
           "two-per-worker": lambda c, w: {"mapred-site": {"mapreduce.job.reduces": str(2 * w)}}},
          scales_with_workers=True),
    Lever("quick-jvm", ("hadoop", "spark"),
          "C1-only JIT and the serial collector in every task, ApplicationMaster and executor JVM (on), or in the "
          "ApplicationMasters only (masters), whose work is mostly their start: less CPU spent starting a "
          "short-lived JVM on a slow core, where a task that computes for long may lose more by C1's slower code",
          {"keep": _keep, "on": lambda c, w: _quick_jvm(c, tasks=True),
           "masters": lambda c, w: _quick_jvm(c, tasks=False)}),
    Lever("output-replication", ("hadoop", "spark"),
          "the job's output written once rather than the cluster's replication: less disk and network per byte",
          {"keep": _keep, "one": lambda c, w: {"hdfs-site": {"dfs.replication": "1"}}},
          trades="durability: the job's output survives no disk or node loss"),
    Lever("kryo", ("spark",),
          "Kryo serialises shuffled records in fewer bytes and less CPU than Java's serialisation",
          {"keep": _keep, "on": lambda c, w: {"spark-defaults": {
              "spark.serializer": "org.apache.spark.serializer.KryoSerializer"}}}),
    Lever("locality-wait", ("spark",),
          "how long a task waits for a slot on the node holding its data: on a small cluster, any slot now may be "
          "sooner than a local one later",
          {"keep": _keep, "none": lambda c, w: {"spark-defaults": {"spark.locality.wait": "0s"}}}),
]}


def for_engine(engine: str, names: list[str] | None = None) -> list[Lever]:
    found = [lever for lever in LEVERS.values() if engine in lever.engines]
    if names:
        found = [lever for lever in found if lever.name in names]
    return found


def for_workers(settings: Settings, chosen: dict[str, str], workers: int) -> Settings:
    """A tuning's settings, measured on one worker count, for a cluster of another: the choices that
    scale with the workers resolved again, the rest as they were."""
    out = {file: dict(properties) for file, properties in settings.items()}
    for name, choice in chosen.items():
        lever = LEVERS.get(name)
        if lever is not None and lever.scales_with_workers and choice in lever.choices:
            for file, properties in lever.settings(choice, out, workers).items():
                out.setdefault(file, {}).update(properties)
    return out


def merged(levers: list[Lever], chosen: dict[str, str], config: Settings, workers: int) -> Settings:
    """The job settings of a combination of choices."""
    out: Settings = {}
    for lever in levers:
        for file, properties in lever.settings(chosen.get(lever.name, "keep"), config, workers).items():
            out.setdefault(file, {}).update(properties)
    return out


def trades(levers: list[Lever], chosen: dict[str, str]) -> list[str]:
    """What a combination gives up besides time, lever by lever."""
    return [f"{lever.name}={chosen[lever.name]}: {lever.trades}" for lever in levers
            if lever.trades and chosen.get(lever.name, "keep") != "keep"]
