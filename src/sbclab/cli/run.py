"""`sbclab run`: the main job, TeraGen → TeraSort → TeraValidate and Spark Pi, every run stored."""

from pathlib import Path

import click

from ..experiments import builtin
from ..experiments.display import LineDisplay
from ..units import parse_size
from ..workloads import pi
from .options import Boards, Monitoring, Shape, board_options, monitor_options, shape_options
from .values import FiniteRange
from .output import say
from .running import run_and_report


@click.command("run")
@shape_options
@click.option("--size", default="256MB", show_default=True, help="TeraGen/TeraSort data size, e.g. 256MB, 1GB, 2GiB.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True,
              help="Directory the run documents and logs are written to.")
@click.option("--repetitions", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Times each benchmark runs (the seeds used 5).")
@click.option("--pi-maps", type=click.IntRange(1, pi.MOST_MAPS), default=pi.DEFAULT_MAPS, show_default=True,
              help="Pi: maps (Spark slices).")
@click.option("--pi-samples", type=click.IntRange(1, pi.MOST_SAMPLES_PER_MAP), default=pi.DEFAULT_SAMPLES,
              show_default=True, help="Pi: samples per map.")
@click.option("--fault", "faults", multiple=True, metavar="KIND,KEY=VALUE...",
              help="A fault while each job runs, beside the unfaulted run: e.g. 'kill,process=datanode,at=20,"
                   "node=worker2', 'pause,for=30', 'partition,for=30,loss=100', 'fill-disk,level=95' (repeatable).")
@click.option("--idle-wait", type=FiniteRange(0, 3600), default=60, show_default=True,
              help="Before each run, seconds to wait at most for the nodes to idle (CPU under 20 %); 0 does not wait.")
@monitor_options
@board_options
def run_command(shape: Shape, size, results, repetitions, pi_maps, pi_samples, faults, idle_wait, monitoring: Monitoring,
                boards: Boards):
    """The main job: TeraGen → TeraSort → TeraValidate and Spark Pi on a cluster, every run stored.

    It uses a running cluster of the same name and shape, else brings one up for the job and takes
    it down afterwards. With --inventory it runs on the boards (preflighted first), stopping the
    daemons it started afterwards."""
    size_bytes = parse_size(size)
    spec, access = boards.of_inventory(shape.name)
    settings = shape.settings(boards.knobs())
    workers, storage = shape.workers, shape.storage
    if spec is not None:
        settings = settings.model_copy(update={"backend": "ssh", "board": spec.board,
                                               "expose_web_uis": boards.expose_web_uis})
        workers, storage = spec.workers, spec.storage
    experiment = builtin.main_job(settings, storage, shape.preset, workers, size_bytes, repetitions, pi_maps,
                                  pi_samples, monitoring.settings(), layout=shape.layout,
                                  stack=shape.stack, faults=[fault_flag(f) for f in faults], idle_wait_s=idle_wait)
    run_and_report(experiment, results, LineDisplay(say), access, boards.dist_dir, purge_boards=False)


_FAULT_KEYS = {"at": "at_s", "for": "for_s", "loss": "loss_pct", "level": "level_pct"}


def fault_flag(text: str) -> dict:
    """'kill,process=datanode,at=20s' as an experiment's fault (units s and % may be written)."""
    kind, *pairs = [part.strip() for part in text.split(",") if part.strip()] or [""]
    fault = {"kind": kind}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"'{pair}' is not KEY=VALUE (e.g. at=20)", param_hint="--fault")
        fault[_FAULT_KEYS.get(key, key)] = value.removesuffix("s").removesuffix("%") if key in _FAULT_KEYS else value
    return fault
