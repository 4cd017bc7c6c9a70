"""MPI programs across the cluster's nodes with OpenMPI. mpirun itself runs on this host, on the
cluster's bridge address (it only starts and watches the ranks), and reaches each node through
sbclab's node shell in place of ssh: it enters the node (its namespaces and cgroup when emulated),
so ranks run inside the nodes they belong to and talk to each other over the cluster's network.
From inside a node the shell could not enter another node's cgroup ('ip netns exec' gives a
command its own /sys, without the cgroup hierarchy)."""

import os
import shlex
import shutil
import socket
import stat
import sys
from pathlib import Path

from ..cluster.remote import address_towards
from ..cluster.spec import NodeSpec
from ..errors import SbclabError
from ..stack.clients import JobOutcome, timed_on
from .base import RunContext


# mpirun runs on this host; each node runs OpenMPI's daemon, which starts the ranks there.
LAUNCHER = "mpirun"
DAEMON = "orted"
# Seconds for every node's daemon to call back to mpirun: generous, as daemons called back within
# seconds on the test boards and on 0.67-core emulated nodes.
DAEMON_STARTUP_S = 300


def agent(ctx: RunContext) -> Path:
    """The remote-shell script OpenMPI calls as `AGENT HOST COMMAND...`."""
    path = ctx.cluster.state.root / "mpi" / "node-shell"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexec {sys.executable} -m sbclab.cluster.node_shell \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def env(ctx: RunContext) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SBCLAB_CLUSTER": ctx.cluster.spec.name,
            "SBCLAB_HOME": os.environ.get("SBCLAB_HOME", ""), "HOME": os.environ.get("HOME", "/root"),
            "OMPI_MCA_plm_rsh_agent": str(agent(ctx))}


# Run by a node's shell: connect back to this host, as OpenMPI's daemon will (skipped without python3).
_CONNECT_BACK = ("if command -v python3 >/dev/null; then python3 -c "
                 + shlex.quote("import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 10)")
                 + ' "$0" "$1"; fi')


def preflight(ctx: RunContext, nodes: list[NodeSpec], program: str, package: str, log: Path) -> None:
    """Every node reachable through the node shell, holding the program and able to connect back to
    this host (where mpirun listens), before anything starts."""
    if not shutil.which("mpirun"):
        raise SbclabError("mpirun is not installed on this host.", "Install Debian's openmpi-bin (apt-get install openmpi-bin).")
    shell = agent(ctx)
    for node in nodes:
        status = ctx.transport.run(ctx.spec.master, [str(shell), node.address, "command", "-v", program],
                                   env(ctx), log, timeout_s=60, label=f"reach {node.name}", on_host=True)
        if status != 0:
            raise SbclabError(f"MPI cannot start '{program}' on {node.name} ({node.address}): exit status {status}.",
                              f"Check that the node is up and that {package} is installed there; read {log}.")
        here = address_towards(node.address)
        with socket.create_server((here, 0)) as listening:
            port = listening.getsockname()[1]
            status = ctx.transport.run(ctx.spec.master, [str(shell), node.address, "sh", "-c",
                                                                       shlex.quote(_CONNECT_BACK), here, str(port)],
                                             env(ctx), log, timeout_s=60, label=f"back from {node.name}", on_host=True)
        if status != 0:
            raise SbclabError(f"{node.name} ({node.address}) cannot connect to this host at {here}: mpirun's daemons "
                              "on the nodes connect back to it.",
                              "Let the nodes reach this machine (one network, no firewall between), or run MPI "
                              f"benchmarks on an emulated cluster; read {log}.")


def mpirun(ctx: RunContext, nodes: list[NodeSpec], ranks_per_node: int, command: list[str], workdir: Path,
           log: Path, label: str, timeout_s: float = 7200) -> tuple[JobOutcome, int | None]:
    """Run command with ranks_per_node ranks on each node, mpirun itself on this host; the outcome and
    the CFS period (µs) the emulated nodes ran under, None elsewhere."""
    spec = ctx.cluster.spec
    argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "-np", str(ranks_per_node * len(nodes)),
            "--host", ",".join(f"{n.address}:{ranks_per_node}" for n in nodes),
            "--wdir", str(workdir),
            # Every node's daemon is started from this host: the node shell works from here only.
            "--mca", "plm_rsh_no_tree_spawn", "1",
            # Ranks waiting for a message give their core away instead of spinning: a board's cores are
            # the node's whole CPU (an emulated node's a share of one), and spinning ranks starve the busy ones.
            "--mca", "mpi_yield_when_idle", "1",
            # Without it each daemon daemonizes; on boards the node shell, seeing its command exit, then
            # stops the command's process group, which the daemon may not have left yet, and mpirun
            # waits for ever for a daemon that was killed. Attached, a daemon lives as long as its shell.
            "--mca", "orte_leave_session_attached", "1",
            # Whatever else keeps a daemon from calling back is an error after this long, not a hang.
            "--mca", "orte_startup_timeout", str(DAEMON_STARTUP_S)]
    networks = ctx.transport.mpi_networks(nodes)
    if networks:
        # Shared memory between ranks of one node, TCP over the cluster network between nodes.
        argv += ["--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", ",".join(networks.ranks),
                 "--mca", "oob_tcp_if_include", ",".join(networks.daemons)]
    # Ranks poll for each other's messages; on emulated nodes that needs short CPU periods (cgroups.py).
    with ctx.transport.short_cpu_periods(nodes) as period:
        outcome = timed_on(ctx.stack, spec.master, [*argv, *command], env(ctx), log, label, timeout_s, on_host=True)
    return outcome, period


class Folder:
    """An MPI run's working folder on its nodes (rank 0, on the first node, reads the input and
    writes the output there) and the local folder its files are brought back to."""

    def __init__(self, ctx: RunContext, nodes: list[NodeSpec], run_id: str, files: dict[str, str]):
        self.transport, self.nodes = ctx.transport, nodes
        self.path = self.transport.common_dir(run_id)
        # Where this host reads rank 0's files: the folder itself where nodes are this host's.
        self.here = self.path if self.transport.shares_host else ctx.cluster.state.root / "mpi" / run_id
        self.here.mkdir(parents=True, exist_ok=True)
        for node in nodes:
            self.transport.make_dirs(node, [self.path])
            if files:
                self.transport.put(node, self.path, files)

    def collect(self, *names: str) -> dict[str, Path]:
        """Rank 0's files where this host reads them (a path that may not exist), then the folder
        gone from the nodes where it is not this host's own."""
        found = {name: self.transport.get(self.nodes[0], self.path / name, self.here / name) or self.here / name
                 for name in names}
        if self.path != self.here:
            for node in self.nodes:
                self.transport.remove(node, self.path)
        return found
