"""The command line: a thin layer over the library, one small module per group of commands; each
parses, calls the library and prints. Every command is a function tests can call.

Command modules are imported when their command is used, so `sbclab data generate` (run once per
worker while input is generated) does not pay for the plotting and statistics libraries the report
needs."""

import importlib
import sys

import click

from .. import __version__
from ..errors import SbclabError

# command name -> (module, attribute), in the order `sbclab --help` lists them.
COMMANDS = {
    "cluster": ("cluster", "cluster"),
    "run": ("run", "run_command"),
    "bench": ("bench", "bench_command"),
    "reproduce": ("reproduce", "reproduce_command"),
    "micro": ("nodes", "micro_command"),
    "hpl": ("nodes", "hpl_command"),
    "results": ("results", "results_group"),
    "report": ("results", "report_command"),
    "shell": ("shell", "shell_command"),
    "exec": ("shell", "exec_command"),
    "env": ("shell", "env_command"),
    "compare": ("results", "compare_command"),
    "plan": ("plan", "plan_command"),
    "tune": ("tune", "tune_command"),
    "diff": ("query", "diff_command"),
    "query": ("query", "query_command"),
    "doctor": ("boards", "doctor_command"),
    "knobs": ("boards", "knobs_group"),
    "stack": ("software", "stack_group"),
    "profiles": ("software", "profiles_group"),
    "calibrate": ("software", "calibrate_command"),
    "data": ("data", "data_group"),
}


class Commands(click.Group):
    """A group whose commands are loaded from their modules when asked for."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sbclab")
def main_group():
    """Deploy Hadoop and Spark on a single-board-computer cluster (real or emulated), benchmark it, report it."""


def main(argv: list[str] | None = None) -> None:
    """Run a command; a user's mistake is one sentence and what to do next, never a traceback."""
    try:
        main_group(args=argv, standalone_mode=False)
    except SbclabError as err:
        click.echo(f"error: {err.message}", err=True)
        if err.hint:
            click.echo(err.hint, err=True)
        sys.exit(2)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted; everything sbclab started was stopped and removed.", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
