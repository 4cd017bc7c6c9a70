"""Real boards before and around a cluster: `sbclab doctor`, `sbclab knobs` and `knobs apply`."""

import json
import sys
from pathlib import Path

import click

from ..cluster import inventory, knobs, remote
from ..errors import SbclabError
from ..experiments import doctor
from ..units import format_size
from .options import KNOWN_HOSTS, HostKeys, host_key_options
from .values import size
from .output import console, table

INVENTORY = click.option("--inventory", "inventory_file", required=True,
                         type=click.Path(dir_okay=False, path_type=Path),
                         help="The boards, as a YAML inventory (examples/inventory.yml).")


@click.command("doctor")
@INVENTORY
@click.option("--workload", default="terasort", show_default=True, help="The workload whose disk need is checked.")
@click.option("--size", "size_bytes", default="1GB", show_default=True, callback=size,
              help="Its data size: each worker needs its share of the input's replicas, intermediate data and output.")
@host_key_options
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def doctor_command(inventory_file, workload, size_bytes, keys: HostKeys, as_json):
    """Preflight of the boards in an inventory: reachable, Java, free space, RAM, clocks, hostname,
    governor, and on Pis throttling, temperature, power supply, fstrim and PCIe. Exits 1 on a blocker."""
    hosts = inventory.load(inventory_file)
    access = keys.access(hosts)
    need = doctor.need_per_node(workload, size_bytes, len(hosts.workers))
    findings = doctor.examine(hosts, need, Path(access.known_hosts), access.accept_new_host_keys)
    blocking = doctor.blockers(findings)
    if as_json:
        click.echo(json.dumps({"findings": doctor.as_dicts(findings), "blockers": len(blocking)}, indent=2))
    else:
        colour = {"ok": "green", "warning": "yellow", "blocker": "red"}
        console.print(table(f"Preflight of {inventory_file} ({workload} at {format_size(size_bytes)})",
                            ["node", "check", "result", "finding", "fix"],
                            [[f.node, f.check, f"[{colour[f.severity]}]{f.severity}[/]", f.finding, f.fix]
                             for f in findings], fold=True))
        console.print(f"{len(blocking)} blocker(s)" if blocking else "no blockers")
    if blocking:
        sys.exit(1)


@click.group("knobs", invoke_without_command=True)
@click.pass_context
def knobs_group(ctx):
    """The Raspberry Pi knobs the seeds turned: what each changes, where, and its risk. None is applied
    unless asked for: cluster knobs with --knob on 'cluster up' and 'run', firmware knobs with 'knobs apply'."""
    if ctx.invoked_subcommand is not None:
        return
    rows = []
    for k in knobs.KNOBS:
        how = ("--knob" if k.name in knobs.CLUSTER_KNOBS else "knobs apply" if k.name in knobs.BOARD_KNOBS
               else "always (the master is a node of its own)")
        rows.append([k.name, k.what, k.change, k.where, "yes" if k.reboot else "no", how, k.source, k.risk])
    console.print(table("Pi knobs (documented; applied only when asked)",
                        ["knob", "what", "change", "where", "reboot", "applied by", "source", "risk"], rows, fold=True))


@knobs_group.command("apply")
@click.argument("knob_name", metavar="KNOB", type=click.Choice(list(knobs.BOARD_KNOBS)))
@INVENTORY
@click.option("--hosts", default=None, help="Only these hosts of the inventory, comma-separated (default: all).")
@click.option("--revert", is_flag=True, help="Remove the knob's lines instead (the rest of config.txt is kept as it is).")
@KNOWN_HOSTS
def knobs_apply_command(knob_name, inventory_file, hosts, revert, known_hosts):
    """Write a firmware knob into each Raspberry Pi 5's config.txt (between sbclab's marker comments,
    the original kept as config.txt.sbclab-backup); it takes effect at the next boot. Runs record the
    knobs found on the boards at 'cluster up', marked when a board was not rebooted since."""
    inv = inventory.load(inventory_file)
    chosen = list(inv.hosts)
    if hosts:
        chosen = [inv.host(n.strip()) for n in hosts.split(",") if n.strip()]
    connections = remote.connect(chosen, known_hosts or remote.DEFAULT_KNOWN_HOSTS)
    try:
        reachable = [c for c in connections.values() if isinstance(c, remote.Connection)]
        done = remote.in_parallel(reachable, lambda c: knobs.apply_on_board(c, knob_name, revert), lambda c: c.host.name)
    finally:
        for conn in connections.values():
            if isinstance(conn, remote.Connection):
                conn.close()
    rows, failed = [], 0
    for host in chosen:
        got = connections[host.name] if isinstance(connections[host.name], SbclabError) else done[host.name]
        if isinstance(got, SbclabError):
            failed += 1
            rows.append([host.name, f"[red]{got.message}[/red] {got.hint or ''}"])
        else:
            rows.append([host.name, got])
    console.print(table(f"{'Reverting' if revert else 'Applying'} {knob_name}", ["host", "result"], rows, fold=True))
    if failed:
        sys.exit(1)
