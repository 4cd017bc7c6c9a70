"""`sbclab cluster up|status|down`: bring a cluster up, see how it is, take it down."""

import json
import sys
import time
from pathlib import Path

import click

from ..cluster import nodes
from ..cluster.state import ClusterState
from ..errors import SbclabError
from ..experiments import doctor, plan
from ..stack import lifecycle
from .options import Boards, Shape, board_options, shape_options
from .output import cluster_status, say


@click.group()
def cluster():
    """Bring a cluster up, see how it is, take it down."""


@cluster.command("up")
@shape_options
@board_options
def cluster_up(shape: Shape, boards: Boards):
    """Create the nodes, start HDFS, YARN and the JobHistory server (or Spark's standalone master and
    workers), wait until they serve.

    With --inventory: preflight the boards, install Java where missing, copy the distribution where
    it differs, render the configs, format HDFS on first use, start the daemons. A second 'up' of
    the same boards checks all of that and changes nothing."""
    spec, access = boards.of_inventory(shape.name, shape)
    choices = plan.choices_for(preset=shape.preset, stack=shape.stack, spark_manager=shape.spark_manager,
                               on_boards=spec is not None, expose_web_uis=boards.expose_web_uis)
    if spec is not None:
        doctor.preflight(access.inventory, None, None, shape.preset, Path(access.known_hosts), access.accept_new_host_keys,
                         deploying=True, say=say, tunnels=choices.web_uis == "loopback")
        if shape.name in ClusterState.names():
            lifecycle.still_up(shape.name, spec, choices, access, progress=say)
            cluster_status(lifecycle.status(lifecycle.attach(shape.name)))
            return
    else:
        spec = plan.spec_for(name=shape.name, workers=shape.workers, board=shape.board, storage=shape.storage,
                             backend=plan.backend_for(shape.backend, say), subnet=shape.subnet,
                             disk_size=shape.disk_size, scale_factor=shape.scale_factor, knobs=boards.knobs(),
                             layout=shape.layout, master_board=shape.master_board, master_storage=shape.master_storage,
                             say=say)
    result = lifecycle.up(spec, choices, timeout_s=shape.timeout, progress=say, boards=access, dist_dir=boards.dist_dir)
    cluster_status(lifecycle.status(result))
    say(f"cluster '{shape.name}' is up in {result.stack.record.bring_up_s:.1f} s; take it down with "
        f"'sbclab cluster down --name {shape.name}'.")


@cluster.command("status")
@click.option("--name", default="lab", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def cluster_status_command(name, as_json):
    """Live DataNodes with capacity, YARN nodes with memory and vcores, and every daemon's address."""
    report = lifecycle.status(lifecycle.attach(name))
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        cluster_status(report)
    if report["problems"]:
        sys.exit(1)


@cluster.command("ui")
@click.option("--name", default="lab", show_default=True)
def cluster_ui_command(name):
    """Every web UI with a URL that opens from this host, Spark's History Server started on the master first; on
    boards the SSH forwards behind the URLs are held open until Ctrl-C."""
    cluster = lifecycle.attach(name)
    say("starting Spark's History Server on the master (it reads the event logs of every Spark job run here)")
    cluster.stack.start_spark_history()
    for title, url in cluster.stack.web_uis():
        click.echo(f"{title:32} {url}")
    if cluster.spec.backend == "ssh":
        say("holding the SSH forwards open; Ctrl-C closes them")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


@cluster.command("down")
@click.option("--name", default="lab", show_default=True)
@click.option("--force", is_flag=True, help="Also remove what a crashed or interrupted 'up' left behind.")
@click.option("--abandoned", is_flag=True,
              help="Instead of NAME, remove every cluster a killed sbclab left behind (no process of it runs).")
@click.option("--purge", is_flag=True, help="Real boards: also delete the cluster's data and logs on them (kept by default).")
@click.option("--forget", is_flag=True,
              help="Real boards: drop this host's record of the cluster even if some boards cannot be reached "
                   "(what runs on those stays there).")
def cluster_down(name, force, abandoned, purge, forget):
    """Stop every daemon and remove the nodes: namespaces, links, cgroups, mounts, loop devices, files.

    On real boards: stop every daemon and command of the cluster; its data stays unless --purge."""
    names = nodes.abandoned() if abandoned else [name]
    if abandoned and not names:
        say("no abandoned cluster on this host.")
    for each in names:
        on_boards = _on_boards(each)
        leftovers = nodes.down(each, force=force or abandoned, purge=purge, forget=forget)
        if leftovers and forget:
            say(f"cluster '{each}' forgotten; left where it was: {', '.join(leftovers)}.")
            continue
        if leftovers:
            raise SbclabError(f"Could not remove: {', '.join(leftovers)}.",
                              f"Reach those boards and run 'sbclab cluster down --name {each}' again, or add --forget "
                              "to drop this host's record of the cluster." if on_boards else
                              f"Run 'sbclab cluster down --force --name {each}' again, as root.")
        say(f"cluster '{each}' removed.")


def _on_boards(name: str) -> bool:
    try:
        return ClusterState.load(name).spec.backend == "ssh"
    except SbclabError:
        return False
