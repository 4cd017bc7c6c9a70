"""The progress of an experiment on the terminal: the matrix, the current cell, time spent and left."""

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..results.schema import RunRecord
from .model import Cell


class ProgressDisplay:
    def __init__(self, console: Console):
        self.console = console
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=console,
                                 transient=False)
        self.task = None
        self.outcomes = {"valid": 0, "invalid": 0, "failed": 0}

    def start(self, total: int, skipped: int) -> None:
        if skipped:
            self.say(f"{skipped} cell(s) already stored and valid: skipped")
        self.say(f"{total} run(s) to do")
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total)

    def say(self, message: str) -> None:
        self.console.print(f"[dim]{time.strftime('%H:%M:%S')} sbclab:[/dim] {message}")

    def cell(self, cell: Cell) -> None:
        self.progress.update(self.task, description=cell.label())

    def finished(self, cell: Cell, run: RunRecord) -> None:
        kind = "valid" if run.valid else ("failed" if run.exit_status != 0 else "invalid")
        self.outcomes[kind] += 1
        colour = {"valid": "green", "invalid": "yellow", "failed": "red"}[kind]
        self.say(f"[{colour}]{kind}[/{colour}] {cell.label()}: {run.wall_time_s:.1f} s ({run.run_id})")
        self.progress.advance(self.task)

    def stop(self) -> None:
        self.progress.stop()


class LineDisplay:
    """Progress as plain lines, for the shorthand commands (`run`, `micro`, `hpl`)."""

    def __init__(self, say):
        self.say = say

    def start(self, total: int, skipped: int) -> None:
        if skipped:
            self.say(f"{skipped} run(s) already stored and valid: skipped")

    def cell(self, cell: Cell) -> None:
        self.say(cell.label())

    def finished(self, cell: Cell, run: RunRecord) -> None:
        pass

    def stop(self) -> None:
        pass
