"""What the commands that run experiments share: running one, and saying how it went."""

import sys
from pathlib import Path

from ..cluster.inventory import BoardAccess
from ..experiments import orchestrator
from ..experiments.model import Experiment
from ..results.store import ResultsStore
from .output import err_console, runs_summary


def run_and_report(experiment: Experiment, results: Path, display, boards: BoardAccess | None = None,
                   dist_dir: str | None = None, purge_boards: bool = True) -> None:
    """Run the experiment, print the runs it stored, exit 1 when any failed or is invalid."""
    options = orchestrator.Options(results=results, display=display, boards=boards, dist_dir=dist_dir,
                                   purge_boards=purge_boards)
    stored = orchestrator.run(experiment, options)
    if stored:
        runs_summary(ResultsStore(results), {r.run_id for r in stored})
    bad = [r for r in stored if not r.valid]
    if bad:
        err_console.print(f"[yellow]{len(bad)} run(s) failed or invalid; they are stored, excluded from statistics, "
                          f"and run again when the experiment is re-run.[/yellow]")
        sys.exit(1)
