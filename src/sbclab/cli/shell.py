"""`sbclab shell`, `exec` and `env`: the cluster as the user's, with the stack's standard commands."""

import shlex
import sys

import click

from ..errors import SbclabError
from ..stack import launchers, lifecycle

NAME = click.option("--name", default="lab", show_default=True, help="The cluster.")


def _node(cluster, name: str):
    found = next((n for n in cluster.spec.nodes if n.name == name), None)
    if found is None:
        raise SbclabError(f"Cluster '{cluster.spec.name}' has no node '{name}'.",
                          f"Its nodes: {', '.join(n.name for n in cluster.spec.nodes)}.")
    return found


def _on_node(name: str, node_name: str, command: str) -> int:
    """command run by the node's shell with the stack's environment and launchers."""
    cluster = lifecycle.attach(name)
    node = _node(cluster, node_name)
    folder = launchers.install(cluster.stack, node)
    return cluster.transport.attach(node, f". {shlex.quote(str(folder / launchers.ENV_FILE))} && {command}")


@click.command("shell")
@click.argument("node", default="master")
@NAME
def shell_command(node, name):
    """An interactive shell on NODE (default: the master): inside its namespaces and cgroup on an emulated
    cluster, over SSH on boards, with hadoop, hdfs, yarn, mapred, spark-submit, pyspark, spark-sql and
    spark-shell on the PATH."""
    sys.exit(_on_node(name, node, 'exec "$(command -v bash || echo sh)" -i'))


@click.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("node")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@NAME
def exec_command(node, command, name):
    """Run COMMAND on NODE the way `sbclab shell` would (e.g. sbclab exec master -- hdfs dfs -ls /); its exit
    status is this command's."""
    sys.exit(_on_node(name, node, "exec " + shlex.join(command)))


@click.command("env")
@NAME
def env_command(name):
    """The exports that let this host's shell use the cluster's commands: eval "$(sbclab env)"."""
    cluster = lifecycle.attach(name)
    if not cluster.transport.shares_host:
        raise SbclabError(f"Cluster '{name}' runs on boards, whose commands need the boards' own Java and paths.",
                          f"Open a shell on its master instead: sbclab shell master --name {name}.")
    folder = launchers.install(cluster.stack, cluster.spec.master)
    click.echo((folder / launchers.ENV_FILE).read_text(), nl=False)
