"""The results directory: runs/<run_id>.json (one document per run) and logs/<run_id>/.

Runs are written atomically as each finishes, so an interrupted suite loses nothing already run
and leaves no half-written document. A document with an unknown schema version is refused.
"""

import json
import shutil
from pathlib import Path

from pydantic import ValidationError

from .. import atomic, utf8
from ..errors import SbclabError
from .schema import SCHEMA_VERSION, RunRecord

DAMAGED = "Move it out of the results directory, or restore it from a backup."


class ResultsStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    def logs_dir(self, run_id: str) -> Path:
        return self.root / "logs" / run_id

    def write(self, run: RunRecord) -> Path:
        path = self.runs_dir / f"{run.run_id}.json"
        if path.exists():
            raise SbclabError(f"A run with id {run.run_id} is already stored in {self.root}.",
                              "Run ids are unique; this is a bug, please report it.")
        atomic.write_text(path, run.model_dump_json(indent=1) + "\n")
        return path

    def write_series(self, run_id: str, document: dict) -> Path:
        """A run's time series, beside its document (series/RUN_ID.json)."""
        path = self.root / "series" / f"{run_id}.json"
        atomic.write_text(path, json.dumps(document, separators=(",", ":")) + "\n")
        return path

    def keep_log(self, run_id: str, source: Path, name: str | None = None) -> str | None:
        """Copy a log file or folder into the store; return its path relative to the results directory."""
        source = Path(source)
        if not source.exists():
            return None
        target = self.logs_dir(run_id) / (name or source.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
        return str(target.relative_to(self.root))

    def runs_matching(self, run_ids: set) -> list[RunRecord]:
        return [load(self.runs_dir / f"{i}.json") for i in sorted(i for i in run_ids if i)
                if (self.runs_dir / f"{i}.json").exists()]

    def runs(self) -> list[RunRecord]:
        if not self.root.exists():
            raise SbclabError(f"There is no results directory {self.root}.",
                              "Give the directory you passed to 'sbclab run --results'.")
        runs = [load(path) for path in sorted(self.runs_dir.glob("*.json"))]
        return sorted(runs, key=lambda r: r.started_at)


def migrate(raw: dict) -> dict:
    """An older run document in the current schema. Version 1 had no measurements: it gets none;
    version 2 knew only the Hadoop and Spark engines, which version 3 still has."""
    return {**raw, "schema_version": SCHEMA_VERSION}


def load(path: Path) -> RunRecord:
    try:
        raw = json.loads(utf8.read(path, DAMAGED))
    except (OSError, json.JSONDecodeError) as err:
        raise SbclabError(f"{path} is not a readable run document ({err}).", DAMAGED) from err
    if not isinstance(raw, dict):
        raise SbclabError(f"{path} is not a run document: it holds {json.dumps(raw)[:40]} where a run's fields belong.",
                          DAMAGED)
    version = raw.get("schema_version")
    if isinstance(version, int) and 1 <= version < SCHEMA_VERSION:
        raw = migrate(raw)
    elif version != SCHEMA_VERSION:
        raise SbclabError(f"{path} has schema version {version}; this sbclab reads versions 1 to {SCHEMA_VERSION}.",
                          "Read it with the sbclab version that wrote it, or upgrade sbclab.")
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        raise SbclabError(f"{path} does not match the run schema at '{'.'.join(map(str, first['loc']))}': {first['msg']}.",
                          "Move it out of the results directory.") from err


def load_runs(results: Path) -> list[RunRecord]:
    """Every run of a results directory, oldest first; a directory that holds none is refused."""
    results = Path(results)
    if not results.is_dir():
        raise SbclabError(f"There is no results directory {results}.",
                          "Give the directory you passed to 'sbclab run --results' or 'sbclab bench --results'.")
    if not (results / "runs").is_dir():
        raise SbclabError(f"{results} is not an sbclab results directory (it has no runs/ folder).",
                          "Give the directory you passed to 'sbclab run --results'; runs are stored in its runs/ folder.")
    runs = ResultsStore(results).runs()
    if not runs:
        raise SbclabError(f"{results} holds no runs yet.", f"Run 'sbclab run --results {results}' first.")
    return runs
