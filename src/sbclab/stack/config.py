"""Per-node Hadoop and Spark configuration, rendered from the cluster spec, the node and the preset.

Three layers, later ones winning:
1. what the cluster needs to work here (addresses bound to the node, directories on the node's
   disk, classpaths of the Maven-assembled distribution, Java 17 module flags);
2. sizing from the node's board (sizing.py), so containers never overcommit the board;
3. the preset's overrides (presets.py), the cluster's knobs and the experiment's own settings.
Last, on a node given only a share of its board's RAM, the heaps of what runs in those containers
shrink to fit it (heaps.py), whatever layer sized the containers, and where each task holds a share of
the seed's data, the buffers it fills shrink with that share (buffers.py).
The rendered values are returned too, so every run can record the configuration it ran under.
"""

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from ..cluster.spec import ClusterSpec, NodeSpec
from ..errors import SbclabError
from . import buffers, classdata, heaps, presets, sizing
from .choices import StackChoices
from .distribution import Distribution
from .java import java_home

# Hadoop's YARN web apps (Guice/cglib) reflect into java.lang, closed by default since Java 16.
ADD_OPENS = "--add-opens=java.base/java.lang=ALL-UNNAMED"
# The quick-start knob: C1 only. A short-lived JVM spends much of its start-up CPU in C2 compilations
# it never lives to use (docs/notes.md).
QUICK_START = "-XX:TieredStopAtLevel=1"

PORTS = {
    "namenode_rpc": 8020, "namenode_http": 9870,
    "datanode": 9866, "datanode_http": 9864, "datanode_ipc": 9867,
    "rm_http": 8088, "nm_http": 8042, "nm_localizer": 8040,
    "jhs": 10020, "jhs_http": 19888, "jhs_admin": 10033,
    "shuffle": 13562,
    "spark_master": 7077, "spark_master_http": 8080, "spark_worker": 7078, "spark_worker_http": 8081,
    "spark_history_http": 18080,
}


@dataclass(frozen=True)
class NodeLayout:
    """Where a node keeps its files: configs and logs beside the node, data on its own disk."""

    conf_dir: Path
    disk: Path
    log_dir: Path

    @property
    def spark_events(self) -> Path:
        return self.disk / "spark-events"


def port(spec: ClusterSpec, node: NodeSpec, name: str) -> int:
    """A daemon's port on a node. Processes-backend nodes share 127.0.0.1, so each gets its own block.

    They cannot have addresses of their own: a DataNode's connection to the NameNode leaves from
    127.0.0.1 whatever 127.x address it listens on, and the NameNode registers DataNodes by the
    address a connection comes from.
    """
    return PORTS[name] + (100 * spec.nodes.index(node) if spec.backend == "processes" else 0)


def datanode_dir(layout: "NodeLayout") -> Path:
    """Where a node's DataNode keeps its replicas."""
    return layout.disk / "hdfs" / "datanode"


def web_host(choices: StackChoices, node: NodeSpec) -> str:
    """The address a node's web UIs and REST APIs listen on (choices.web_uis)."""
    return "127.0.0.1" if choices.web_uis == "loopback" else node.address


def settings(spec: ClusterSpec, choices: StackChoices, node: NodeSpec, layout: NodeLayout,
             dist: Distribution) -> dict[str, dict[str, str]]:
    master = spec.master.address
    me = node.address

    def mine(name: str) -> str:
        return f"{me}:{port(spec, node, name)}"

    def web(name: str, where: NodeSpec = node) -> str:
        return f"{web_host(choices, where)}:{port(spec, where, name)}"

    max_container_mb, max_container_vcores = sizing.largest_container(spec)
    node_mb, node_vcores = sizing.yarn_share(node)
    classpath = f"$HADOOP_CONF_DIR,{dist.hadoop_classpath}"
    values = {
        "core-site": {
            "fs.defaultFS": f"hdfs://{master}:{PORTS['namenode_rpc']}",
            "hadoop.tmp.dir": str(layout.disk / "tmp"),
            # Every daemon's metrics at /prom on its web port, for Prometheus (docs/measurements.md).
            "hadoop.prometheus.endpoint.enabled": "true",
        },
        "hdfs-site": {
            "dfs.namenode.rpc-address": f"{master}:{PORTS['namenode_rpc']}",
            "dfs.namenode.http-address": web("namenode_http", spec.master),
            "dfs.namenode.secondary.http-address": f"{master}:9868",
            "dfs.namenode.name.dir": str(layout.disk / "hdfs" / "namenode"),
            "dfs.datanode.data.dir": str(datanode_dir(layout)),
            "dfs.datanode.address": mine("datanode"),
            "dfs.datanode.http.address": web("datanode_http"),
            "dfs.datanode.ipc.address": mine("datanode_ipc"),
            "dfs.datanode.hostname": me,
            # Nodes are known by address, not by a name a DNS would resolve.
            "dfs.namenode.datanode.registration.ip-hostname-check": "false",
            # A freshly formatted NameNode has nothing to wait for; the 30 s extension only delays start-up.
            "dfs.namenode.safemode.extension": "1000",
        },
        "yarn-site": {
            "yarn.resourcemanager.hostname": master,
            "yarn.resourcemanager.webapp.address": web("rm_http", spec.master),
            "yarn.nodemanager.hostname": me,
            "yarn.nodemanager.address": f"{me}:0",
            "yarn.nodemanager.localizer.address": mine("nm_localizer"),
            "yarn.nodemanager.webapp.address": web("nm_http"),
            "yarn.nodemanager.local-dirs": str(layout.disk / "yarn" / "local"),
            "yarn.nodemanager.log-dirs": str(layout.log_dir / "userlogs"),
            "yarn.nodemanager.aux-services": "mapreduce_shuffle",
            "yarn.nodemanager.aux-services.mapreduce_shuffle.class": "org.apache.hadoop.mapred.ShuffleHandler",
            "yarn.nodemanager.env-whitelist": "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,"
                                              "CLASSPATH_PREPEND_DISTCACHE,HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ",
            "yarn.application.classpath": classpath,
            # Java 17 reserves far more virtual memory than 2.1x the heap; the physical check stays on.
            # It kills a container only above its size, so one whose heap an emulated node shrank
            # (heaps.py) is never killed for holding less than YARN accounts it.
            "yarn.nodemanager.vmem-check-enabled": "false",
            # Node filesystems are sized for the experiment, so a full one is expected, not a fault.
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.5",
            # Sizing from the board (sizing.py): containers never exceed it, and an emulated node,
            # whatever share of its board's RAM it is given, holds the board's.
            "yarn.nodemanager.resource.memory-mb": str(node_mb or max_container_mb),
            "yarn.nodemanager.resource.cpu-vcores": str(node_vcores or max_container_vcores),
            "yarn.scheduler.minimum-allocation-mb": str(sizing.smallest_container(spec)),
            "yarn.scheduler.maximum-allocation-mb": str(max_container_mb),
            "yarn.scheduler.maximum-allocation-vcores": str(max_container_vcores),
        },
        "mapred-site": {
            "mapreduce.framework.name": "yarn",
            "mapreduce.jobhistory.address": f"{master}:{PORTS['jhs']}",
            "mapreduce.jobhistory.webapp.address": web("jhs_http", spec.master),
            "mapreduce.jobhistory.admin.address": f"{master}:{PORTS['jhs_admin']}",
            "mapreduce.application.classpath": classpath,
            "mapreduce.shuffle.port": str(port(spec, node, "shuffle")),
            # A job's client asks the JobHistory server for the final status once the ApplicationMaster
            # is gone, and upstream gives up after 3 tries 100 ms apart: a scaled-down master's history
            # server, still loading the job's history file, answered "Unknown Job" to a job YARN had
            # finished SUCCEEDED, and the client exited 255. Thirty tries wait about 3 s.
            "yarn.app.mapreduce.client.max-retries": "30",
            **({"yarn.app.mapreduce.am.admin-command-opts": ADD_OPENS} if dist.stack.has_modules else {}),
            **sizing.mapreduce_memory(spec),
        },
        "spark-defaults": {
            "spark.master": "yarn",
            "spark.submit.deployMode": "client",
            "spark.driver.host": master,
            "spark.driver.bindAddress": master,
            # Every node sees the same distribution path, so nothing is uploaded per job.
            "spark.yarn.jars": f"local:{dist.spark_jars}/*",
            # Spark's jars carry their own (shaded) Hadoop client; don't mix in the cluster's.
            "spark.yarn.populateHadoopClasspath": "false",
            # Jobs start only once every executor YARN can hold has registered (the ratio is set
            # below): under small CPU quotas executors start slowly, and with Spark's 30 s a
            # "2-worker" job ran all its tasks on the one executor that was there first.
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": f"file://{layout.spark_events}",
            # sbclab reads each application's event log as one file of JSON lines; Spark 4 compresses
            # it and rolls it over a folder of files by default.
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
            # Spark's History Server (`sbclab cluster ui` starts it on the master) reads the same event logs.
            "spark.history.fs.logDirectory": f"file://{layout.spark_events}",
            "spark.history.ui.port": str(port(spec, spec.master, "spark_history_http")),
            **(_spark_prometheus() if dist.stack.spark_major >= 3 else {}),
            # Where a Python job's executors find PySpark (YARN adds the same; a standalone Worker does not).
            "spark.executorEnv.PYTHONPATH": ":".join(str(archive) for archive in dist.pyspark_archives),
            **(sizing.spark_memory(spec) if choices.spark_manager == "yarn" else {}),
        },
    }
    values["capacity-scheduler"] = {
        **_shipped_properties("capacity-scheduler.xml"),
        # The tarball's 10 % lets one ApplicationMaster run at a time on a few small nodes, so the
        # 2026 seed's four jobs "submitted together" would run one after another; on its eight 8 GB
        # workers 10 % held all four. Half the cluster's memory for AMs keeps the seed's behaviour
        # on the smaller clusters this host emulates.
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
    }
    if choices.web_uis == "loopback":
        # The driver's UI listens on every interface (or SPARK_LOCAL_IP, which moves the driver too);
        # sbclab reads a run's phases from its event log, so the UI is simply off.
        values["spark-defaults"]["spark.ui.enabled"] = "false"
    for file, overrides in presets.overrides(spec, choices.preset).items():
        values[file].update(overrides)
    for file, overrides in knob_overrides(spec.knobs).items():
        values[file].update(overrides)
    for file, overrides in _class_data_settings(spec, dist, values).items():
        values[file].update(overrides)
    for file, name, value in choices.settings:
        values[file][name] = value
    spark = values["spark-defaults"]
    if choices.spark_manager == "yarn":
        board = dict(values["mapred-site"])
        values["mapred-site"].update(heaps.mapreduce_settings(spec, board))
        values["mapred-site"].update(buffers.mapreduce_settings(choices.data_scale, board, values["mapred-site"]))
    if choices.spark_manager == "standalone":
        spark["spark.master"] = f"spark://{master}:{port(spec, spec.master, 'spark_master')}"
        for key, value in sizing.spark_standalone_memory(spec).items():
            spark.setdefault(key, value)
        board = dict(spark)
        spark.update(heaps.spark_settings(spec, board, choices.spark_manager == "standalone"))
        spark.update(buffers.spark_settings(choices.data_scale, board, spark))
        # The job waits for executors holding every core the workers can give it (standalone counts
        # cores, not executors): the same guard against a "2-worker" job run on the first worker to
        # register. A worker gives as many executors as its cores and memory both hold.
        executor_mb = sizing.jvm_megabytes(spark["spark.executor.memory"])
        held = 0
        for worker in spec.worker_nodes:
            memory_mb, cores = sizing.yarn_share(worker)
            per_executor = int(spark.get("spark.executor.cores", cores))
            held += min(cores // per_executor, int(memory_mb // executor_mb)) * per_executor
        spark.setdefault("spark.cores.max", str(held))
        spark.setdefault("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        return values
    board = dict(spark)
    spark.update(heaps.spark_settings(spec, board, choices.spark_manager == "standalone"))
    spark.update(buffers.spark_settings(choices.data_scale, board, spark))
    asked = int(spark.get("spark.executor.instances", SPARK_DEFAULT_EXECUTORS))
    fit = sizing.executors_that_fit(spec, *_spark_containers_mb(spark))
    spark.setdefault("spark.scheduler.minRegisteredResourcesRatio", f"{min(1.0, fit / asked):.4g}" if asked else "1.0")
    return values


def _spark_prometheus() -> dict[str, str]:
    """Executors' metrics on the driver's UI (/metrics/executors/prometheus), and every Spark daemon's
    and driver's own metrics at /metrics/prometheus on its web UI: Spark 3 and later (Spark 2 fails
    to start a sink it does not have)."""
    return {"spark.ui.prometheus.enabled": "true",
            "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
            "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus"}


# The files whose properties an experiment may set over the preset (StackChoices.settings).
SETTINGS_FILES = ("core-site", "hdfs-site", "yarn-site", "mapred-site", "capacity-scheduler", "spark-defaults")
SPARK_DEFAULT_EXECUTORS = 2  # spark.executor.instances on YARN without dynamic allocation
NODEMANAGER_MB = "yarn.nodemanager.resource.memory-mb"
YARN_MEGABYTES = (NODEMANAGER_MB, "yarn.scheduler.minimum-allocation-mb", "yarn.scheduler.maximum-allocation-mb",
                  "yarn.app.mapreduce.am.resource.mb")
TASK_MEGABYTES = ("mapreduce.map.memory.mb", "mapreduce.reduce.memory.mb")
SPARK_SIZES = ("spark.executor.memory", "spark.executor.memoryOverhead", "spark.yarn.am.memory",
               "spark.yarn.am.memoryOverhead", "spark.driver.memory")
CONTAINER_SIZES = (*YARN_MEGABYTES, *TASK_MEGABYTES, *SPARK_SIZES)
_WHOLE = re.compile(r"[0-9]+")
_JVM_SIZE = re.compile(r"[0-9]+(\.[0-9]+)?[kmgt]?b?", re.I)


def _share(text: str) -> bool:
    try:
        return 0 < float(text) <= 1
    except ValueError:
        return False


# Settings sbclab sizes the cluster by, read as numbers: what each must be, and the test of it.
_NUMBERS = {
    **dict.fromkeys((*YARN_MEGABYTES, buffers.SORT_MB, "spark.executor.cores"),
                    ("a whole number above 0", lambda v: bool(_WHOLE.fullmatch(v)) and int(v) > 0)),
    "spark.executor.instances": ("a whole number", lambda v: bool(_WHOLE.fullmatch(v))),
    # Hadoop 3 derives a task's container from its heap where this is -1.
    **dict.fromkeys(TASK_MEGABYTES,
                    ("a whole number of megabytes, or -1", lambda v: v == "-1" or (bool(_WHOLE.fullmatch(v)) and int(v) > 0))),
    **dict.fromkeys(SPARK_SIZES,
                    ("a size such as 512m or 2g", lambda v: bool(_JVM_SIZE.fullmatch(v)) and sizing.jvm_megabytes(v) > 0)),
    **dict.fromkeys((heaps.RATIO, buffers.SPILL_PERCENT, buffers.SHUFFLE_BUFFER, buffers.SPARK_FRACTION),
                    ("a share above 0 and at most 1, such as 0.8", _share)),
}


# Where a daemon listens or is reached (an RPC or web address, a bind host, the driver's host). sbclab
# binds each to its node's own address, a board's web UIs to its loopback (DESIGN.md: daemons bind to
# the cluster network only), and reads them there; `true`/`false` are switches such as
# dfs.client.use.datanode.hostname, not addresses.
_LISTENS = re.compile(r"(address|bind-host|bindaddress|\.hostname|\.host)$", re.I)


# A credential would be written as given into every node's configuration and stored in every run
# document (DESIGN.md: no secret in logs, results or rendered configs). Hadoop's own channel for them,
# a credential provider, is named by properties that hold a path or class names, not a secret.
_SECRET = re.compile(r"secret|password|passwd|credential|access\.key|account\.key|session\.token", re.I)
_SECRETS_CHANNEL = re.compile(r"provider(\.path)?s?$", re.I)


def check_settings(settings: dict[str, dict[str, str]]) -> None:
    """Refuse what an experiment may not set over the preset: a number the cluster is sized by that is
    none, where a daemon listens, and a credential."""
    for file, properties in settings.items():
        for name, value in properties.items():
            if _SECRET.search(name) and not _SECRETS_CHANNEL.search(name):
                raise SbclabError(f"{file} {name} holds a credential, which would be written as given into every "
                                  f"node's {file} and stored in every run document.",
                                  "Leave it out, and keep it in a Hadoop credential store on the nodes "
                                  "(hadoop.security.credential.provider.path names it).")
            if _LISTENS.search(name) and value.strip().lower() not in ("true", "false"):
                raise SbclabError(f"{file} {name} would have a daemon listen on '{value}', not on its node's own "
                                  "address.", "Leave it out (on boards, --expose-web-uis puts the web UIs on their "
                                  "addresses).")
            if name in _NUMBERS and not _NUMBERS[name][1](value.strip()):
                raise SbclabError(f"{file} {name} is '{value}', not {_NUMBERS[name][0]}.",
                                  "Correct it, or leave it out for sbclab's sizing.")


def _spark_containers_mb(spark: dict[str, str]) -> tuple[int, int]:
    """(an executor's, the ApplicationMaster's) containers in MB, as the Spark settings size them."""
    return (sizing.spark_container_mb(spark.get("spark.executor.memory", "1g"), spark.get("spark.executor.memoryOverhead")),
            sizing.spark_container_mb(spark.get("spark.yarn.am.memory", "512m"), spark.get("spark.yarn.am.memoryOverhead")))


def check_memory(spec: ClusterSpec, choices: StackChoices, engines=("hadoop", "spark")) -> None:
    """Refuse a cluster on which a job of these engines could never start: an ApplicationMaster and
    one task (a MapReduce task, a Spark executor) that do not fit the workers as the preset and the
    experiment's settings size them, or whose heaps, shrunk to an emulated node, it cannot hold
    beside its daemons (heaps.py); named with the numbers."""
    given = _memory_overrides(spec, choices)
    _check_nodemanager_memory(spec, choices)
    if choices.spark_manager == "standalone":
        heaps.check(spec, _check_standalone(spec, engines, given), standalone=True)
        return
    unit = int(given.get(("yarn-site", "yarn.scheduler.minimum-allocation-mb"), sizing.smallest_container(spec)))
    worker_mb = int(given.get(("yarn-site", "yarn.nodemanager.resource.memory-mb"),
                              min(sizing.yarn_share(w)[0] for w in spec.worker_nodes)))
    rounded = lambda mb: -(-int(mb) // unit) * unit  # noqa: E731
    jobs = {}
    if "hadoop" in engines:
        mapreduce = {k: v for k, v in sizing.mapreduce_memory(spec).items()}
        for (file, key), value in given.items():
            if file == "mapred-site":
                mapreduce[key] = value
        master, task = (rounded(mapreduce.get("yarn.app.mapreduce.am.resource.mb", sizing.UPSTREAM_AM_MB)),
                        rounded(max(int(mapreduce.get("mapreduce.map.memory.mb", sizing.UPSTREAM_TASK_MB)),
                                    int(mapreduce.get("mapreduce.reduce.memory.mb", sizing.UPSTREAM_TASK_MB)))))
        jobs["a MapReduce job"] = (master, task, "task", heaps.mapreduce_job(mapreduce, master + task <= worker_mb))
    if "spark" in engines:
        spark = dict(sizing.spark_memory(spec))
        spark.update({key: value for (file, key), value in given.items() if file == "spark-defaults"})
        executor, master = (rounded(mb) for mb in _spark_containers_mb(spark))
        jobs["a Spark job"] = (master, executor, "executor", heaps.spark_job(spark, master + executor <= worker_mb, False))
    sized_by_settings = any(name in CONTAINER_SIZES for _, name, _ in choices.settings)
    for job, (master, task, what, _) in jobs.items():
        board = spec.worker_nodes[0].board
        if max(master, task) > worker_mb or (spec.workers == 1 and master + task > worker_mb):
            raise SbclabError(
                f"{job} needs {master} MB for its ApplicationMaster and {task} MB for {'an' if what == 'executor' else 'a'} {what}"
                f"{' on the one worker' if spec.workers == 1 else ''}; a {board} worker has {worker_mb} MB of "
                f"containers (preset {choices.preset}{', and cluster.settings' if sized_by_settings else ''}).",
                "Give smaller containers in cluster.settings, or leave their sizes to sbclab." if sized_by_settings
                else "Use more workers, the stock preset, or a board with more RAM."
                + (" Spark's standalone manager needs no YARN." if what == "executor" else ""))
    heaps.check(spec, tuple(found for *_, found in jobs.values()))


def _check_nodemanager_memory(spec: ClusterSpec, choices: StackChoices) -> None:
    """Refuse an experiment's NodeManager memory beyond its board's RAM: YARN would place containers
    the board cannot hold, and they would be killed or swap mid-run."""
    asked = next((value for file, name, value in choices.settings if (file, name) == ("yarn-site", NODEMANAGER_MB)), None)
    if asked is None or not spec.worker_nodes:
        return
    worker = min(spec.worker_nodes, key=sizing.board_memory_bytes)
    ram_mb = sizing.board_memory_bytes(worker) // 2**20
    if int(asked) > ram_mb:
        raise SbclabError(f"cluster.settings give each worker's NodeManager {asked} MB of containers ({NODEMANAGER_MB}) "
                          f"and a {worker.board} has {ram_mb} MB of RAM.",
                          f"Give it at most {ram_mb} MB ({sizing.yarn_share(worker)[0]} MB is what sbclab leaves a "
                          f"{worker.board}'s containers beside its daemons), or leave it out.")


def _check_standalone(spec: ClusterSpec, engines, given: dict[tuple[str, str], str]) -> tuple[heaps.Job, ...]:
    """A cluster on Spark's standalone manager runs no YARN, so no MapReduce; its executors' heaps
    must fit the memory each Spark worker offers. Returns the jobs whose heaps its nodes must hold."""
    if "hadoop" in engines:
        raise SbclabError("MapReduce jobs need YARN, which a cluster on Spark's standalone manager does not run.",
                          "Run the Hadoop cells with spark_manager: yarn, or only Spark on this cluster.")
    if "spark" not in engines:
        return ()
    spark = {**sizing.spark_standalone_memory(spec),
             **{key: value for (file, key), value in given.items() if file == "spark-defaults"}}
    executor = sizing.jvm_megabytes(spark["spark.executor.memory"])
    offered = min(sizing.yarn_share(w)[0] for w in spec.worker_nodes)
    if executor > offered:
        raise SbclabError(f"A Spark executor of {executor:.0f} MB does not fit the {offered} MB a {spec.board} worker "
                          "offers Spark's standalone manager.", "Give spark.executor.memory 512m, or a board with more RAM.")
    return (heaps.spark_job(spark, True, standalone=True),)


def _memory_overrides(spec: ClusterSpec, choices: StackChoices) -> dict[tuple[str, str], str]:
    """Memory settings the preset, the knobs and the experiment set over sbclab's sizing."""
    found = {}
    for source in (presets.overrides(spec, choices.preset), knob_overrides(spec.knobs)):
        for file, properties in source.items():
            found.update({(file, key): value for key, value in properties.items()})
    for file, key, value in choices.settings:
        found[(file, key)] = value
    return found


def jvm_flags(knob_names) -> list[str]:
    """Flags every JVM of the cluster starts with, from its knobs."""
    return [QUICK_START] if "quick-start" in knob_names else []


def maps_class_data(spec: ClusterSpec) -> bool:
    """Whether the cluster's Spark JVMs map the stack's class-data archive (classdata.py): the quick-start
    knob's, where every node runs this host's Java and distribution (a board runs its own)."""
    return "quick-start" in spec.knobs and spec.backend != "ssh"


SPARK_OPTS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions", "spark.yarn.am.extraJavaOptions")


def _class_data_settings(spec: ClusterSpec, dist: Distribution, values: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Spark's archive in the java options of its driver, ApplicationMaster and executors, and its
    classpath jar first on their class path (the extraClassPath settings come first)."""
    found = classdata.of(dist.spark_home, java_home(dist.stack.java)) if maps_class_data(spec) else None
    if found is None:
        return {}
    extra = " ".join(found.flags())
    return {"spark-defaults": {**{key: f"{values['spark-defaults'].get(key, '')} {extra}".strip() for key in SPARK_OPTS},
                               "spark.driver.extraClassPath": str(found.classpath_jar),
                               "spark.executor.extraClassPath": str(found.classpath_jar)}}


def knob_overrides(knob_names) -> dict[str, dict[str, str]]:
    """The configuration properties the cluster's knobs set, by file (cluster/knobs.py lists them)."""
    found: dict[str, dict[str, str]] = {}
    if "crc-off" in knob_names:
        found["hdfs-site"] = {"dfs.checksum.type": "NULL"}
    if "quick-start" in knob_names:
        # Without -Xmx here, MapReduce sizes each heap from its container, as it does by default.
        found["mapred-site"] = {"mapreduce.map.java.opts": QUICK_START, "mapreduce.reduce.java.opts": QUICK_START,
                                "yarn.app.mapreduce.am.command-opts": QUICK_START}
        # YARN's heartbeats stay upstream's second: at 250 ms a tiny job was no sooner and the cluster
        # used more CPU, idle and in its jobs (docs/notes.md, "JVM start-up and the quick-start knob").
        # No driver web UI either: Jetty's start-up is a share of a short job's, and Spark 4.2's driver can
        # die of a race between its UI attaching its handlers and YARN's ApplicationMaster sending its web
        # filter (ConcurrentModificationException in SparkUI.attachAllHandlers; docs/notes.md).
        found["spark-defaults"] = {"spark.driver.extraJavaOptions": QUICK_START,
                                   "spark.executor.extraJavaOptions": QUICK_START,
                                   "spark.yarn.am.extraJavaOptions": QUICK_START, "spark.ui.enabled": "false"}
    return found


def _shipped_properties(name: str) -> dict[str, str]:
    """The properties of a configuration file sbclab ships with the tarball's values."""
    root = ElementTree.fromstring(resources.files(__package__).joinpath("files", name).read_text())
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


def _xml(properties: dict[str, str]) -> str:
    rows = "\n".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
                     for k, v in properties.items())
    return f'<?xml version="1.0"?>\n<!-- Rendered by sbclab; edits are overwritten at the next cluster up. -->\n<configuration>\n{rows}\n</configuration>\n'


# What a job's client reads when it submits, so that runs on one running cluster can differ in it: a
# MapReduce job's own configuration (job.xml, from the client's mapred-site and hdfs-site) and a Spark
# application's settings. The daemons read the rest when they start, so it takes a cluster of its own,
# but for the CapacityScheduler's assignments per heartbeat, which the ResourceManager reads again when
# its queues are refreshed: a run sets them for its own job (scheduler.py).
JOB_FILES = ("mapred-site", "hdfs-site", "spark-defaults", "capacity-scheduler")
RUN_SCHEDULER_SETTINGS = ("yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled",
                          "yarn.scheduler.capacity.per-node-heartbeat.maximum-container-assignments")
_JOB_PREFIXES = {"mapred-site": ("mapreduce.", "yarn.app.mapreduce."), "hdfs-site": ("dfs.client.",),
                 "spark-defaults": ("spark.",)}
_JOB_HDFS = ("dfs.replication", "dfs.blocksize")  # the client writes its files with them
# Job-file properties a daemon or sbclab's own plumbing reads, which a job must not move.
_NOT_A_JOB_SETTING = re.compile(r"^(mapreduce\.jobhistory\.|mapreduce\.framework\.name$|mapreduce\.shuffle\.|"
                                r"spark\.master$|spark\.submit\.|spark\.eventLog\.|spark\.history\.|spark\.driver\.host$|"
                                r"spark\.driver\.bindAddress$|spark\.yarn\.(jars|archive|stagingDir)$)")


def check_job_settings(job_settings: dict[str, dict[str, str]]) -> None:
    """Refuse a job setting the job's client does not read, or one that would move sbclab's plumbing."""
    check_settings(job_settings)
    for file, properties in job_settings.items():
        if file not in JOB_FILES:
            raise SbclabError(f"{file} is read by the daemons when they start, not by a job.",
                              "Set it in cluster.settings (a cluster of its own), or use mapred-site, hdfs-site, "
                              "spark-defaults or the scheduler's assignments per heartbeat (capacity-scheduler).")
        for name in properties:
            ours = (name in RUN_SCHEDULER_SETTINGS if file == "capacity-scheduler" else
                    name.startswith(_JOB_PREFIXES[file]) or (file == "hdfs-site" and name in _JOB_HDFS))
            if not ours or _NOT_A_JOB_SETTING.match(name):
                raise SbclabError(f"{file} {name} is not a job's setting (the daemons or sbclab itself read it).",
                                  "Set it in cluster.settings, or leave it out.")


def with_job_settings(values: dict[str, dict[str, str]], job_settings: dict[str, dict[str, str]] | None
                      ) -> dict[str, dict[str, str]]:
    """A node's configuration values with a job's settings over them."""
    merged = {file: dict(properties) for file, properties in values.items()}
    for file, properties in (job_settings or {}).items():
        merged.setdefault(file, {}).update(properties)
    return merged


def files_of(spec: ClusterSpec, values: dict[str, dict[str, str]]) -> dict[str, str]:
    """The files of a configuration directory holding these values."""
    files = {}
    for file, properties in values.items():
        if file == "spark-defaults":
            files["spark-defaults.conf"] = "".join(f"{k} {v}\n" for k, v in properties.items())
        else:
            files[f"{file}.xml"] = _xml(properties)
    shipped = resources.files(__package__).joinpath("files")
    files["log4j.properties"] = shipped.joinpath("log4j.properties").read_text()
    files["hadoop-metrics2.properties"] = shipped.joinpath("hadoop-metrics2.properties").read_text()
    files["workers"] = "".join(w.address + "\n" for w in spec.worker_nodes)
    return files


def render(spec: ClusterSpec, choices: StackChoices, node: NodeSpec, layout: NodeLayout,
           dist: Distribution) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The node's configuration: (the values, the files of its configuration directory by name)."""
    values = settings(spec, choices, node, layout, dist)
    return values, files_of(spec, values)
