"""Hadoop's daemons on a cluster: starting them on their nodes, waiting until they serve, asking them how they are.

Master: NameNode, ResourceManager, MapReduce JobHistory server. Each worker: DataNode, NodeManager.
Daemons are plain `java` processes on the Maven-assembled classpath; what the Apache scripts add
(log settings, module flags) is added here.
"""

import hashlib
import json
import shutil
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import requests

from .. import paths
from ..cluster import containers
from ..cluster.spec import NodeSpec
from ..cluster.transport import Transport
from ..errors import SbclabError
from . import classdata, config, heaps, sizing
from .distribution import Distribution
from .java import java_home
from .choices import StackChoices
from .record import ContainerRecord, StackRecord


# A DataNode's finalized replicas on its disk: the block files, not their checksum files.
_FINALIZED_REPLICAS = 'find "$1" -path "*/finalized/*" -name "blk_*" ! -name "*.meta" 2>/dev/null | wc -l'


def awaiting_deletion(queued: int, live_datanodes: dict[str, dict], on_disk: dict[str, int]) -> int:
    """Replicas still to delete: the NameNode's queue, and on each DataNode (by its transfer address,
    host:port, unique where the nodes share a host) the finalized replicas on its disk beyond the
    blocks the NameNode counts there, which it forgot when their file was deleted. A DataNode the
    NameNode does not list is left out (it has nothing to be told)."""
    counted = {str(dn.get("xferaddr") or key): int(dn.get("numBlocks") or 0) for key, dn in live_datanodes.items()}
    return queued + sum(max(0, replicas - counted[address]) for address, replicas in on_disk.items()
                        if address in counted)


@dataclass(frozen=True)
class Daemon:
    key: str
    title: str
    main_class: str
    role: str
    needs_add_opens: bool
    ports: tuple[str, ...]


# HDFS's daemons open java.lang for WebHDFS: Hadoop 3.3's JAXB, writing its JSON, defines classes through
# reflection, which Java 17 refuses (HTTP 500 on every WebHDFS call; the NameNode's file browser is one).
NAMENODE = Daemon("namenode", "NameNode", "org.apache.hadoop.hdfs.server.namenode.NameNode", "master", True,
                  ("namenode_rpc", "namenode_http"))
RESOURCEMANAGER = Daemon("resourcemanager", "ResourceManager",
                         "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager", "master", True, ("rm_http",))
JOBHISTORY = Daemon("historyserver", "JobHistory server", "org.apache.hadoop.mapreduce.v2.hs.JobHistoryServer",
                    "master", True, ("jhs", "jhs_http", "jhs_admin"))
DATANODE = Daemon("datanode", "DataNode", "org.apache.hadoop.hdfs.server.datanode.DataNode", "worker", True,
                  ("datanode", "datanode_http", "datanode_ipc"))
NODEMANAGER = Daemon("nodemanager", "NodeManager", "org.apache.hadoop.yarn.server.nodemanager.NodeManager", "worker",
                     True, ("nm_http", "nm_localizer", "shuffle"))
SPARK_MASTER = Daemon("sparkmaster", "Spark master", "org.apache.spark.deploy.master.Master", "master", False,
                      ("spark_master", "spark_master_http"))
SPARK_WORKER = Daemon("sparkworker", "Spark worker", "org.apache.spark.deploy.worker.Worker", "worker", False,
                      ("spark_worker", "spark_worker_http"))
# Started when asked for (`sbclab cluster ui`), not with the cluster: the event logs it shows are kept anyway.
SPARK_HISTORY = Daemon("sparkhistory", "Spark History Server", "org.apache.spark.deploy.history.HistoryServer", "master",
                       False, ("spark_history_http",))
ALL = (NAMENODE, RESOURCEMANAGER, JOBHISTORY, DATANODE, NODEMANAGER, SPARK_MASTER, SPARK_WORKER, SPARK_HISTORY)


def daemons_of(choices: StackChoices) -> tuple[Daemon, ...]:
    """The daemons a cluster runs: HDFS, and YARN or Spark's standalone manager."""
    if choices.spark_manager == "standalone":
        return NAMENODE, DATANODE, SPARK_MASTER, SPARK_WORKER
    return NAMENODE, RESOURCEMANAGER, JOBHISTORY, DATANODE, NODEMANAGER


# The label of a node's one long-lived container, where the stack runs when the runtime is container.
NODE_CONTAINER = "node"


def logs_dir(cluster: str) -> Path:
    """Node logs live outside the cluster directory so they outlive a failed `up` for reading."""
    return paths.home() / "logs" / cluster


class CommandMarks(Protocol):
    """What is told of every command the stack runs while a run is measured (the run's recorder)."""

    def command_started(self, label: str) -> None: ...

    def command_finished(self, label: str, started_at: datetime, finished_at: datetime, exit_status: int) -> None: ...


class Stack:
    def __init__(self, transport: Transport, dist: Distribution, record: StackRecord):
        self.transport = transport
        self.spec = transport.spec
        self.dist = dist
        self.record = record
        # A job's own settings over the master's configuration, while one runs (job_settings()).
        self.job_conf_dir: Path | None = None
        self.job_values: dict[str, dict[str, str]] | None = None
        self._started: list[tuple[Daemon, NodeSpec, object]] = []  # handles answer poll()
        # The run being measured, if any: told the start and end of every command (clients.py).
        self.marks: CommandMarks | None = None

    @property
    def choices(self) -> StackChoices:
        """What was chosen to run on the cluster: the record's, the one place they are kept."""
        return self.record.choices

    @contextmanager
    def marking(self, marks: CommandMarks):
        """Every command the stack runs in the block is told to marks; inside a block already marked
        (a job made on the way to another), the outer marks go on."""
        if self.marks is not None:
            yield
            return
        self.marks = marks
        try:
            yield
        finally:
            self.marks = None

    # --- where things are ------------------------------------------------------------------

    def layout(self, node: NodeSpec) -> config.NodeLayout:
        """Configs beside the node, data on its disk, logs on this host where the node is this host
        (they outlive a failed `up` for reading), else beside the node."""
        transport = self.transport
        logs = (logs_dir(self.spec.name) / node.name if transport.shares_host
                else transport.node_dir(node) / "logs")
        return config.NodeLayout(conf_dir=transport.node_dir(node) / "conf", disk=transport.node_disk(node),
                                 log_dir=logs)

    def java_home(self, node: NodeSpec) -> Path:
        """The Java the node runs the stack on: a board's own, this host's for local nodes."""
        found = self.record.java.get(node.name)
        return Path(found.home) if found else java_home(self.dist.stack.java)

    def client_logs(self) -> Path:
        """Where the output of commands sbclab runs is kept on this host (job logs)."""
        return logs_dir(self.spec.name) / self.spec.master.name

    def conf_dir(self, node: NodeSpec, client: bool = False) -> Path:
        """The node's configuration directory; a job's client on the master reads the job's own
        settings over it while job_settings() holds them."""
        if client and self.job_conf_dir is not None and node.name == self.spec.master.name:
            return self.job_conf_dir
        return self.layout(node).conf_dir

    @contextmanager
    def job_settings(self, job_settings: dict[str, dict[str, str]] | None):
        """Jobs submitted meanwhile read these settings over the cluster's (MapReduce's job.xml,
        Spark's application settings), from a configuration directory of their own on the master;
        yields the master's values with them, which the run records."""
        master = self.spec.master
        layout = self.layout(master)
        values = self.record.configuration
        if not job_settings:
            yield values
            return
        config.check_job_settings(job_settings)
        merged = config.with_job_settings(values, job_settings)
        digest = hashlib.sha256(json.dumps(job_settings, sort_keys=True).encode()).hexdigest()[:12]
        folder = layout.disk / "tmp" / f"job-conf-{digest}"
        self.transport.make_dirs(master, [folder], fresh=[folder])
        self.transport.put(master, folder, config.files_of(self.spec, merged))
        self.job_conf_dir, self.job_values = folder, merged
        try:
            yield merged
        finally:
            self.job_conf_dir, self.job_values = None, None
            self.transport.remove(master, folder)

    def env(self, node: NodeSpec, client: bool = False) -> dict[str, str]:
        layout = self.layout(node)
        conf_dir = self.conf_dir(node, client)
        return {
            **self.transport.base_env(node),
            "LANG": "C.UTF-8",
            "JAVA_HOME": str(self.java_home(node)),
            "HADOOP_CONF_DIR": str(conf_dir),
            "HADOOP_HOME": str(self.dist.hadoop_home),
            "SPARK_HOME": str(self.dist.spark_home),
            "SPARK_CONF_DIR": str(conf_dir),
            # Spark's launcher asks for it outside a source tree it can inspect.
            "SPARK_SCALA_VERSION": self.dist.stack.scala,
            # A Python job's executors read PySpark where every node has it, rather than each job
            # uploading it to HDFS for YARN to hand out.
            "PYSPARK_ARCHIVES_PATH": ",".join(f"local:{archive}" for archive in self.dist.pyspark_archives),
            "PYSPARK_PYTHON": "python3",
            # Spark's web UIs (a job's driver's too) bind SPARK_LOCAL_IP, else every interface: the
            # processes backend's nodes are all this host's loopback, and so are their UIs.
            **({"SPARK_LOCAL_IP": "127.0.0.1"} if self.spec.backend == "processes" else {}),
        }

    def spark_class_data(self, node: NodeSpec) -> classdata.ClassData | None:
        """Spark's class-data archive where the node's Spark JVMs map it: quick-start clusters whose
        nodes run this host's Java and distribution."""
        if not config.maps_class_data(self.spec):
            return None
        return classdata.of(self.dist.spark_home, self.java_home(node))

    def java(self, node: NodeSpec, main_class: str, args: list[str], *, heap_mb: int | None = None,
             add_opens: bool = False, log_file: str | None = None, client: bool = False) -> list[str]:
        """A `java` command line on the node's Hadoop classpath, the way bin/hadoop would build it."""
        layout = self.layout(node)
        argv = [str(self.java_home(node) / "bin" / "java"), *config.jvm_flags(self.spec.knobs)]
        if heap_mb:
            argv.append(f"-Xmx{heap_mb}m")
        argv += ["-Djava.net.preferIPv4Stack=true", f"-Dhadoop.home.dir={self.dist.hadoop_home}",
                 f"-Dhadoop.log.dir={layout.log_dir}", f"-Dyarn.log.dir={layout.log_dir}"]
        if log_file:
            argv += [f"-Dhadoop.log.file={log_file}", f"-Dyarn.log.file={log_file}", "-Dhadoop.root.logger=INFO,RFA"]
        if add_opens and self.dist.stack.has_modules:  # Java 8 has no modules and refuses the flag
            argv.append(config.ADD_OPENS)
        argv += ["-cp", f"{self.conf_dir(node, client)}:{self.dist.hadoop_classpath}", main_class, *args]
        return argv

    def spark_java(self, node: NodeSpec, main_class: str, args: list[str], heap_mb: int) -> list[str]:
        """A `java` command line on the node's Spark classpath, the way sbin/start-*.sh would build it."""
        layout = self.layout(node)
        classpath = f"{layout.conf_dir}:{self.dist.spark_jars}/*"
        found = self.spark_class_data(node)
        flags, classpath = ([], classpath) if found is None else (found.flags(), f"{found.classpath_jar}:{classpath}")
        return [str(self.java_home(node) / "bin" / "java"), *config.jvm_flags(self.spec.knobs), *flags,
                f"-Xmx{heap_mb}m", "-cp", classpath, main_class, *args]

    # --- where commands run: on the node, or in its container ----------------------------------

    def in_container(self) -> bool:
        return self.record.container is not None

    def _runtime(self) -> containers.Runtime:
        c = self.record.container
        return containers.Runtime(c.runtime, c.version, tuple(c.options), tuple(c.run_options))

    def node_container(self, node: NodeSpec) -> str:
        return containers.container_name(self.spec.name, node.name, NODE_CONTAINER)

    def command(self, node: NodeSpec, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """A command of the stack as the node runs it: directly, or inside the node's container,
        where it finds the same paths, network, host name and limits (the cluster's runtime)."""
        if not self.in_container():
            return argv, env
        inside = containers.exec_argv(self._runtime(), self.node_container(node), argv, env,
                                      entry=self.transport.container_entry(node))
        return inside, self.transport.base_env(node)

    def container_mounts(self, node: NodeSpec) -> tuple[containers.Mount, ...]:
        """What of the node its container sees at the same paths: the distribution, the jobs, Java and
        Spark's class-data archive read-only; the node's folder, disk and logs as they are."""
        layout = self.layout(node)
        shared = (self.dist.hadoop_home, self.dist.spark_home, self.dist.jobs_jar.parent, self.java_home(node),
                  *((found.archive.parent,) if (found := self.spark_class_data(node)) else ()))
        own = dict.fromkeys((self.transport.node_dir(node), layout.disk, layout.log_dir))
        return (tuple(containers.Mount(path.resolve(), path, read_only=True) for path in shared)
                + tuple(containers.Mount(path.resolve(), path) for path in own))

    def start_containers(self, timeout_s: float) -> None:
        """Each node's container, running for the cluster's life: its daemons and the jobs' clients
        are exec'd into it (Hajji & Tso ran one Docker container per Pi holding Spark and Hadoop). Its
        processes stay in the node's cgroup and network namespace."""
        record = self.record.container
        image = containers.Image(record.image, record.image_digest, "", 0)
        runtime = self._runtime()
        for node in self.spec.nodes:
            layout = self.layout(node)
            self.transport.make_dirs(node, [path for path in (self.transport.node_dir(node), layout.disk,
                                                              layout.log_dir)])
            argv, _ = containers.wrap(self.transport, node, runtime, image, ["sleep", "infinity"], NODE_CONTAINER,
                                      network="host", mounts=self.container_mounts(node), init=True)
            self.transport.start(node, argv, self.transport.base_env(node), layout.log_dir / "container.out",
                                 label="container", owned=False)
        for node in self.spec.nodes:
            deadline = time.monotonic() + timeout_s
            while True:
                probe, env = self.command(node, ["true"], {})
                if self.transport.capture(node, probe, env, timeout_s=60).status == 0:
                    break
                if time.monotonic() > deadline:
                    raise SbclabError(f"The container on {node.name} did not start within {timeout_s:.0f} s.",
                                      f"Read {self.transport.where(node, self.layout(node).log_dir / 'container.out')}.")
                time.sleep(0.5)

    def _daemon_command(self, daemon: Daemon, node: NodeSpec) -> tuple[list[str], dict[str, str]]:
        heap = heaps.daemon_heap_mb(daemon.key, node)
        env = self.env(node)
        if daemon is SPARK_HISTORY:
            env = {**env, "SPARK_LOCAL_IP": config.web_host(self.choices, node), "SPARK_LOG_DIR": str(self.layout(node).log_dir)}
            return self.spark_java(node, daemon.main_class, [], heap), env
        if daemon not in (SPARK_MASTER, SPARK_WORKER):
            return self.java(node, daemon.main_class, [], heap_mb=heap, add_opens=daemon.needs_add_opens,
                             log_file=f"{daemon.key}.log"), env
        # The RPC endpoints bind the node's address (--host); the web UI binds SPARK_LOCAL_IP.
        env = {**env, "SPARK_LOCAL_IP": config.web_host(self.choices, node), "SPARK_LOG_DIR": str(self.layout(node).log_dir)}
        where = ["--host", node.address, "--port", str(config.port(self.spec, node, daemon.ports[0])),
                 "--webui-port", str(config.port(self.spec, node, daemon.ports[1]))]
        if daemon is SPARK_MASTER:
            return self.spark_java(node, daemon.main_class, where, heap), env
        master = self.spec.master
        memory_mb, cores = sizing.yarn_share(node)
        args = [f"spark://{master.address}:{config.port(self.spec, master, 'spark_master')}", *where,
                "--cores", str(cores), "--memory", f"{memory_mb}M", "--work-dir", str(self.layout(node).disk / "spark-work")]
        return self.spark_java(node, daemon.main_class, args, heap), env

    def daemon_log(self, daemon: Daemon, node: NodeSpec) -> str:
        return self.transport.where(node, self.layout(node).log_dir / f"{daemon.key}.log")

    def nodes_for(self, daemon: Daemon) -> list[NodeSpec]:
        return [self.spec.master] if daemon.role == "master" else self.spec.worker_nodes

    # --- bring-up -----------------------------------------------------------------------

    def render(self) -> dict[str, dict[str, str]]:
        """Write every node's configuration; return the master's, which clients use.

        The previous cluster of this name's logs are removed first: they were kept for reading
        after it went down, and would otherwise be mistaken for this cluster's."""
        shutil.rmtree(logs_dir(self.spec.name), ignore_errors=True)
        rendered = {}
        for node in self.spec.nodes:
            layout = self.layout(node)
            self.transport.make_dirs(node, [layout.disk / "tmp", layout.spark_events, layout.conf_dir],
                                     fresh=[layout.log_dir])
            rendered[node.name], files = config.render(self.spec, self.choices, node, layout, self.dist)
            self.transport.put(node, layout.conf_dir, files)
        return rendered[self.spec.master.name]

    def formatted(self) -> bool:
        """Whether HDFS on the master holds a file system already (a real board's, kept between ups)."""
        name_dir = self.layout(self.spec.master).disk / "hdfs" / "namenode" / "current" / "VERSION"
        return self.transport.read_text(self.spec.master, name_dir) is not None

    def format_namenode(self) -> None:
        node = self.spec.master
        log = self.client_logs() / "namenode-format.log"
        argv = self.java(node, NAMENODE.main_class, ["-format", "-nonInteractive", "-force",
                                                     "-clusterId", f"sbclab-{self.spec.name}"],
                         heap_mb=heaps.daemon_heap_mb(NAMENODE.key, node))
        status = self.transport.run(node, *self.command(node, argv, self.env(node)), log, timeout_s=180,
                                    label="namenode -format")
        if status != 0:
            raise SbclabError(f"Formatting HDFS on {node.name} failed (exit {status}).", f"Read {log}.")

    def start(self, daemon: Daemon, nodes: list[NodeSpec] | None = None) -> None:
        """The daemon on its nodes (or on these of them)."""
        for node in self.nodes_for(daemon) if nodes is None else nodes:
            if self.spec.backend == "processes":
                for port_name in daemon.ports:
                    _check_port_free(node, config.port(self.spec, node, port_name), daemon.title)
            layout = self.layout(node)
            argv, env = self.command(node, *self._daemon_command(daemon, node))
            # A daemon outlives the command that started it: not owned, stopped at teardown.
            proc = self.transport.start(node, argv, env, layout.log_dir / f"{daemon.key}.out",
                                        cwd=layout.log_dir, label=daemon.key, owned=False)
            self._started.append((daemon, node, proc))

    def _check_alive(self) -> None:
        for daemon, node, proc in self._started:
            if proc.poll() is not None:
                raise SbclabError(f"The {daemon.title} on {node.name} exited during start-up (status {proc.returncode}).",
                                  f"Read {self.daemon_log(daemon, node)} and its .out file beside it.")

    def _wait(self, what: str, ready, timeout_s: float, daemon: Daemon, node: NodeSpec) -> None:
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                if ready():
                    return
            except (requests.RequestException, ValueError, KeyError, IndexError) as err:
                last = err
            time.sleep(0.5)
        raise SbclabError(f"{what} on {node.name} was not ready within {timeout_s:.0f} s"
                          + (f" (last answer: {type(last).__name__})." if last else "."),
                          f"Read {self.daemon_log(daemon, node)}.")

    def start_all(self, timeout_s: float = 180) -> None:
        """Start every daemon and wait until HDFS is out of safe mode and every NodeManager is registered.

        HDFS is formatted on first use only: a real board's data outlives `cluster down`."""
        if not self.formatted():
            self.format_namenode()
        workers = len(self.spec.worker_nodes)
        master = self.spec.master
        if self.choices.spark_manager == "standalone":
            self.start(NAMENODE)
            self.start(SPARK_MASTER)
            self.start(DATANODE)
            self._wait("HDFS (all DataNodes live, out of safe mode)",
                       lambda: self.hdfs_ready(workers), timeout_s, NAMENODE, master)
            self._wait("The Spark master", lambda: self.spark_workers() is not None, timeout_s, SPARK_MASTER, master)
            self.start(SPARK_WORKER)
            self._wait("Spark (all workers registered)", lambda: len(self.spark_workers() or []) >= workers,
                       timeout_s, SPARK_WORKER, self.spec.worker_nodes[0])
            return
        self.start(NAMENODE)
        self.start(RESOURCEMANAGER)
        self.start(DATANODE)
        self.start(NODEMANAGER)
        self._wait("HDFS (all DataNodes live, out of safe mode)",
                   lambda: self.hdfs_ready(workers), timeout_s, NAMENODE, master)
        self.start(JOBHISTORY)
        self._wait("YARN (all NodeManagers registered)",
                   lambda: len(self.yarn_nodes()) >= workers, timeout_s, NODEMANAGER, self.spec.worker_nodes[0])
        self._wait("The JobHistory server", self.history_ready, timeout_s, JOBHISTORY, master)

    # --- asking the daemons ----------------------------------------------------------------

    def web_url(self, node: NodeSpec, port: str) -> str:
        """How this host reaches one of a node's web endpoints (directly, or through SSH on boards)."""
        return self.transport.reach(node, config.web_host(self.choices, node), config.port(self.spec, node, port))

    def _get(self, port: str, path: str) -> dict:
        answer = requests.get(self.web_url(self.spec.master, port) + path, timeout=5)
        answer.raise_for_status()
        return answer.json()

    def namenode_info(self) -> dict:
        beans = self._get("namenode_http", "/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")["beans"]
        return beans[0]

    def live_datanodes(self) -> dict[str, dict]:
        return json.loads(self.namenode_info()["LiveNodes"])

    def replicas_awaiting_deletion(self) -> int | None:
        """Replicas HDFS was asked to delete and has not yet removed from the DataNodes' disks; None
        if HDFS did not answer. A deleted file's blocks go seconds later: the NameNode queues them,
        tells each DataNode on its next heartbeat, and the DataNode removes the files in the background."""
        try:
            queued = int(self._get("namenode_http", "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystem")
                         ["beans"][0].get("PendingDeletionBlocks") or 0)
            live = self.live_datanodes()
        except (requests.RequestException, ValueError, KeyError, IndexError):
            return None
        on_disk = {}
        for node in self.spec.worker_nodes:
            where = str(config.datanode_dir(self.layout(node)))
            try:
                done = self.transport.capture(node, ["sh", "-c", _FINALIZED_REPLICAS, "sh", where], timeout_s=60)
            except (SbclabError, OSError):
                return None
            if done.status != 0:
                return None
            on_disk[f"{node.address}:{config.port(self.spec, node, 'datanode')}"] = int(done.stdout.decode().strip() or 0)
        return awaiting_deletion(queued, live, on_disk)

    def datanodes_counted(self) -> int | None:
        """The DataNodes the NameNode counts live (by itself: Hadoop 2 keys LiveNodes by host name
        alone, one entry for every DataNode of the processes backend, all on 127.0.0.1)."""
        state = self._get("namenode_http", "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"]
        return int(state[0].get("NumLiveDataNodes", 0)) if state else None

    def hdfs_ready(self, workers: int) -> bool:
        info = self.namenode_info()
        counted = self.datanodes_counted()
        return not info.get("Safemode") and counted is not None and counted >= workers

    def namenode_health(self) -> dict[str, int] | None:
        """What HDFS is short of now: dead DataNodes, under-replicated, pending and missing blocks;
        None when the NameNode does not answer."""
        try:
            state = self._get("namenode_http", "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"][0]
            system = self._get("namenode_http", "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystem")["beans"][0]
        except (requests.RequestException, ValueError, KeyError, IndexError):
            return None
        return {"dead_datanodes": int(state.get("NumDeadDataNodes", 0)),
                "under_replicated_blocks": int(system.get("UnderReplicatedBlocks", 0)),
                "pending_replication_blocks": int(system.get("PendingReplicationBlocks", 0)),
                "missing_blocks": int(system.get("MissingBlocks", 0))}

    def yarn_health(self) -> dict[str, int] | None:
        """NodeManagers the ResourceManager counts lost or unhealthy; None when it does not answer."""
        try:
            metrics = self._get("rm_http", "/ws/v1/cluster/metrics")["clusterMetrics"]
        except (requests.RequestException, ValueError, KeyError):
            return None
        return {"lost_nodemanagers": int(metrics.get("lostNodes", 0)),
                "unhealthy_nodemanagers": int(metrics.get("unhealthyNodes", 0))}

    def running_applications(self, since_ms: int) -> list[dict]:
        """YARN applications running now that started at or after since_ms (epoch milliseconds)."""
        try:
            apps = (self._get("rm_http", "/ws/v1/cluster/apps?states=RUNNING").get("apps") or {}).get("app") or []
        except (requests.RequestException, ValueError):
            return []
        return [a for a in apps if int(a.get("startedTime", 0)) >= since_ms]

    def mapreduce_job(self, app_id: str) -> dict | None:
        """The running MapReduce job of an application, as its ApplicationMaster reports it (through
        the ResourceManager's proxy); None while it does not answer."""
        try:
            jobs = (self._get("rm_http", f"/proxy/{app_id}/ws/v1/mapreduce/jobs").get("jobs") or {}).get("job") or []
        except (requests.RequestException, ValueError):
            return None
        return jobs[0] if jobs else None

    def application_attempts(self, app_id: str) -> int | None:
        """How many ApplicationMaster attempts YARN made for an application; None if not known."""
        try:
            attempts = self._get("rm_http", f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
        except (requests.RequestException, ValueError, KeyError, TypeError):
            return None
        return len(attempts)

    def yarn_nodes(self) -> list[dict]:
        nodes = (self._get("rm_http", "/ws/v1/cluster/nodes").get("nodes") or {}).get("node") or []
        return [n for n in nodes if n.get("state") == "RUNNING"]

    def spark_workers(self) -> list[dict] | None:
        """The workers alive at Spark's standalone master; None while it does not answer."""
        try:
            answer = self._get("spark_master_http", "/json/")
        except requests.RequestException:
            return None
        return [w for w in answer.get("workers") or [] if w.get("state") == "ALIVE"]

    def kill_applications(self) -> list[str]:
        """Kill every YARN application that has not finished; return their ids."""
        base = self.web_url(self.spec.master, "rm_http") + "/ws/v1/cluster/apps"
        try:
            apps = (self._get("rm_http", "/ws/v1/cluster/apps?states=NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING")
                    .get("apps") or {}).get("app") or []
            for app in apps:
                requests.put(f"{base}/{app['id']}/state", json={"state": "KILLED"}, timeout=10)
        except requests.RequestException:
            return []
        return [app["id"] for app in apps]

    def applications_submitted(self) -> int | None:
        """Applications the ResourceManager has taken since it started; None when it does not answer."""
        try:
            return int(self._get("rm_http", "/ws/v1/cluster/metrics")["clusterMetrics"]["appsSubmitted"])
        except (requests.RequestException, KeyError, ValueError):
            return None

    def application(self, app_id: str) -> dict:
        """A YARN application as the ResourceManager reports it (launchTime: its ApplicationMaster
        started; times in epoch ms)."""
        return self._get("rm_http", f"/ws/v1/cluster/apps/{app_id}")["app"]

    def history_job(self, job_id: str) -> tuple[dict, list[dict]]:
        """A finished MapReduce job and its tasks as the JobHistory server reports them (times in epoch ms)."""
        job = self._get("jhs_http", f"/ws/v1/history/mapreduce/jobs/{job_id}")["job"]
        tasks = (self._get("jhs_http", f"/ws/v1/history/mapreduce/jobs/{job_id}/tasks").get("tasks") or {}).get("task") or []
        return job, tasks

    def history_work_by_node(self, job_id: str, tasks: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
        """Per node (by NodeManager address): FILE_BYTES_WRITTEN of each task's successful attempt, summed,
        and the number of tasks that succeeded there."""
        by_node: dict[str, int] = {}
        tasks_by_node: dict[str, int] = {}
        base = f"/ws/v1/history/mapreduce/jobs/{job_id}/tasks"
        for task in tasks:
            attempt = task.get("successfulAttempt")
            if not attempt:
                continue
            where = self._get("jhs_http", f"{base}/{task['id']}/attempts/{attempt}")["taskAttempt"]
            host = where.get("nodeHttpAddress", "?").rsplit(":", 1)[0]
            tasks_by_node[host] = tasks_by_node.get(host, 0) + 1
            groups = self._get("jhs_http", f"{base}/{task['id']}/attempts/{attempt}/counters")
            for group in (groups.get("jobTaskAttemptCounters") or {}).get("taskAttemptCounterGroup") or []:
                for counter in group.get("counter") or []:
                    if counter.get("name") == "FILE_BYTES_WRITTEN":
                        by_node[host] = by_node.get(host, 0) + int(counter["value"])
        return by_node, tasks_by_node

    def datanode_counters(self) -> dict[str, dict[str, int]]:
        """Each DataNode's own byte counters (DataNodeActivity): what HDFS wrote and read on that node."""
        found = {}
        for node in self.spec.worker_nodes:
            url = self.web_url(node, "datanode_http") + "/jmx?qry=Hadoop:service=DataNode,name=DataNodeActivity-*"
            answer = requests.get(url, timeout=5)
            answer.raise_for_status()
            bean = answer.json()["beans"][0]
            found[node.name] = {"bytes_written": int(bean["BytesWritten"]), "bytes_read": int(bean["BytesRead"])}
        return found

    def spark_history_running(self) -> bool:
        try:
            return isinstance(self._get("spark_history_http", "/api/v1/applications?limit=1"), list)
        except (requests.RequestException, ValueError):
            return False

    def start_spark_history(self, timeout_s: float = 180) -> None:
        """Spark's History Server on the master, once: stopped with the cluster like every daemon."""
        if self.spark_history_running():
            return
        self._started = []
        self.start(SPARK_HISTORY)
        self._wait("Spark's History Server", self.spark_history_running, timeout_s, SPARK_HISTORY, self.spec.master)

    def web_uis(self) -> list[tuple[str, str]]:
        """(title, URL from this host) of every web UI the cluster has running."""
        found = []
        for daemon in [*daemons_of(self.choices), SPARK_HISTORY]:
            for node in self.nodes_for(daemon):
                for port_name in daemon.ports:
                    if port_name.endswith("_http") and (daemon is not SPARK_HISTORY or self.spark_history_running()):
                        where = f" ({node.name})" if daemon.role == "worker" else ""
                        found.append((daemon.title + where, self.web_url(node, port_name)))
        return found

    def history_ready(self) -> bool:
        return "historyInfo" in self._get("jhs_http", "/ws/v1/history/info")

    def addresses(self) -> list[tuple[str, str, str]]:
        """(daemon, node, address) of every daemon's RPC and web endpoints."""
        rows = []
        for daemon in daemons_of(self.choices):
            for node in self.nodes_for(daemon):
                for port_name in daemon.ports:
                    host = config.web_host(self.choices, node) if port_name.endswith("_http") else node.address
                    rows.append((daemon.title, node.name,
                                 f"{host}:{config.port(self.spec, node, port_name)} ({port_name.replace('_', ' ')})"))
        if RESOURCEMANAGER in daemons_of(self.choices):
            rows.append(("ResourceManager", self.spec.master.name, f"{self.spec.master.address}:8032 (rpc)"))
        return rows


def _check_port_free(node: NodeSpec, port: int, daemon: str) -> None:
    """Nodes that share this host's network (processes) find a port taken before their daemon does."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((node.address, port))
        except OSError as err:
            raise SbclabError(
                f"Port {port} on {node.address} ({node.name}, {daemon}) is in use: {err.strerror}.",
                "Stop whatever holds it (see 'ss -ltnp'), or remove an old cluster with 'sbclab cluster down --force'.") from err
