"""The results directory: runs/<run_id>.json (one document per run), logs/<run_id>/ and series/.

Runs are written atomically as each finishes, so an interrupted suite loses nothing already run
and leaves no half-written document. A document with an unknown schema version is refused.

A damaged document (not JSON, not UTF-8, not an object, not a run) is set aside: left where it is,
named in one warning, and the other runs are read. It is not moved, because reading must not change
what a results directory stores (it may be read-only, shared, or being written by a running
experiment), and because a repaired or restored document is read again as it is.

One process writes to a results directory at a time (`writing`): it holds `.lock` with flock, which
the kernel releases when the process ends however it ends, so a killed run leaves no stale lock.
"""

import fcntl
import json
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from .. import atomic
from ..errors import SbclabError
from .schema import SCHEMA_VERSION, RunRecord

LOCK = ".lock"
# The results directories this process holds, and how deep: flock() refuses a second open file of the
# same process, so a holder taking its directory again must be told it already has it.
_HELD: dict[Path, int] = {}
# What a killed writer leaves: atomic.open_for_write's temporary files (a document's, a series', the
# index's), bundle imports' staging folders.
_UNFINISHED_FILE = re.compile(r"^\..+\.tmp$")
_UNFINISHED_FOLDER = ".import."
# Where a document names the series and logs it owns (its logs, its measurements, its idle baseline's series).
_NAMED = re.compile(rb'"((?:series|logs)/[^"/]+)')
_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class DamagedDocument(SbclabError):
    """A file of runs/ that is no readable run document; a store sets it aside and reads the others."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path} is not a readable run document: {reason}.",
                         "Restore it from a backup, or move it out of the results directory.")
        self.path, self.reason = Path(path), reason


@dataclass(frozen=True)
class SetAside:
    """A document of runs/ that could not be read, left where it is, and why."""

    path: Path
    reason: str


def set_aside_warning(results: Path, set_aside: list[SetAside], shown: int = 5) -> str:
    """One warning naming the documents set aside (the first few, with why) and what to do."""
    named = "; ".join(f"{s.path.name} ({s.reason})" for s in set_aside[:shown])
    more = f"; and {len(set_aside) - shown} more" if len(set_aside) > shown else ""
    return (f"{len(set_aside)} run document(s) in {Path(results) / 'runs'} could not be read and were left out: "
            f"{named}{more}. Restore them from a backup or move them out of runs/; the other runs are read as usual.")


class ResultsStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        # The damaged documents the last reading met.
        self.set_aside: list[SetAside] = []

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def series_dir(self) -> Path:
        return self.root / "series"

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
        path = self.series_dir / f"{run_id}.json"
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

    def documents(self) -> list[Path]:
        return sorted(self.runs_dir.glob("*.json"))

    def runs(self) -> list[RunRecord]:
        """Every readable run, oldest first; the damaged documents are in `set_aside`."""
        if not self.root.exists():
            raise SbclabError(f"There is no results directory {self.root}.",
                              "Give the directory you passed to 'sbclab run --results'.")
        runs, self.set_aside = [], []
        for path in self.documents():
            try:
                runs.append(load(path))
            except DamagedDocument as err:
                self.set_aside.append(SetAside(path, err.reason))
            except FileNotFoundError:
                continue  # removed since it was listed
        return sorted(runs, key=lambda r: r.started_at)

    @contextmanager
    def writing(self, command: list[str]):
        """This process alone writes to the results directory while the block runs; another is refused,
        naming the process that holds it. Taken again by the process that holds it (a reproduction's
        rounds, each an experiment), it is already held: no other writer gets in between."""
        key = self.root.resolve()
        if _HELD.get(key):
            _HELD[key] += 1
            try:
                yield self
            finally:
                _HELD[key] -= 1
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            handle = open(self.root / LOCK, "a+")
        except OSError as err:
            raise SbclabError(f"Cannot write to the results directory {self.root} ({err.strerror}).",
                              "Give a results directory this user may write to.") from err
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise SbclabError(f"{self.root} is being written by another sbclab ({holder}).",
                                  "Wait for it to finish, or give this one another results directory.") from None
            handle.seek(0)
            handle.truncate()
            started = datetime.now(timezone.utc).isoformat(timespec="seconds")
            handle.write(f"pid {os.getpid()}, '{' '.join(command)}', since {started}\n")
            handle.flush()
            _HELD[key] = 1
            yield self
        finally:
            _HELD.pop(key, None)
            handle.close()  # closing releases the lock; the file stays, as taking it again needs no cleanup

    def remove_orphans(self) -> list[Path]:
        """Remove the series and logs that no stored document owns and the temporary files of an
        unfinished write: what a killed run left before its document was written. Only under
        `writing`, so no live process is still writing them. The paths removed, relative to the root."""
        owned, stored = set(), {p.stem for p in self.documents()}
        for path in self.documents():
            try:
                owned.update(name.decode(errors="replace") for name in _NAMED.findall(path.read_bytes()))
            except OSError:
                continue
        removed = []
        for path in sorted(self.series_dir.glob("*.json")) if self.series_dir.is_dir() else []:
            if path.stem not in stored and f"series/{path.name}" not in owned:
                path.unlink(missing_ok=True)
                removed.append(path)
        logs = self.root / "logs"
        for path in sorted(logs.iterdir()) if logs.is_dir() else []:
            if path.name not in stored and f"logs/{path.name}" not in owned:
                _remove(path)
                removed.append(path)
        for folder in (self.root, self.runs_dir, self.series_dir):
            for path in sorted(folder.iterdir()) if folder.is_dir() else []:
                if _UNFINISHED_FILE.match(path.name):
                    path.unlink(missing_ok=True)
                    removed.append(path)
        for path in sorted(self.root.glob(f"{_UNFINISHED_FOLDER}*")):
            _remove(path)
            removed.append(path)
        return [p.relative_to(self.root) for p in removed]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def migrate(raw: dict) -> dict:
    """An older run document in the current schema. Version 1 had no measurements: it gets none;
    version 2 knew only the Hadoop and Spark engines, which version 3 still has."""
    return {**raw, "schema_version": SCHEMA_VERSION}


def load(path: Path) -> RunRecord:
    path = Path(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise  # not damaged: gone, which a caller listing runs/ may meet and pass over
    except OSError as err:
        raise DamagedDocument(path, f"unreadable ({err.strerror})") from err
    try:
        raw = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as err:
        line = text.count(b"\n", 0, err.start) + 1
        raise DamagedDocument(path, f"not UTF-8 text: byte 0x{text[err.start]:02x} on line {line}") from err
    except json.JSONDecodeError as err:
        raise DamagedDocument(path, f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from err
    if not isinstance(raw, dict):
        raise DamagedDocument(path, f"a JSON {_JSON_TYPES.get(type(raw), 'value')}, not an object")
    version = raw.get("schema_version")
    if type(version) is not int or version < 1:  # a boolean is no version either
        raise DamagedDocument(path, f"no schema version (found {json.dumps(version)[:40]})")
    if version > SCHEMA_VERSION:
        raise SbclabError(f"{path} has schema version {version}; this sbclab reads versions 1 to {SCHEMA_VERSION}.",
                          "Read it with the sbclab version that wrote it, or upgrade sbclab.")
    if version < SCHEMA_VERSION:
        raw = migrate(raw)
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise DamagedDocument(path, f"not the run schema at '{where}': {first['msg']}") from err


def existing(results: Path) -> ResultsStore:
    """The store of a results directory; a path that is none is refused in its own words."""
    results = Path(results)
    if not results.is_dir():
        raise SbclabError(f"There is no results directory {results}.",
                          "Give the directory you passed to 'sbclab run --results' or 'sbclab bench --results'.")
    if not (results / "runs").is_dir():
        raise SbclabError(f"{results} is not an sbclab results directory (it has no runs/ folder).",
                          "Give the directory you passed to 'sbclab run --results'; runs are stored in its runs/ folder.")
    return ResultsStore(results)


def some(found: list, store: ResultsStore) -> list:
    """What was read, refused when it is nothing."""
    if found:
        return found
    if store.set_aside:
        raise SbclabError(f"{store.root} holds no run document this sbclab can read.",
                          set_aside_warning(store.root, store.set_aside))
    raise SbclabError(f"{store.root} holds no runs yet.", f"Run 'sbclab run --results {store.root}' first.")


def read_runs(results: Path) -> tuple[list[RunRecord], list[SetAside]]:
    """Every readable run of a results directory, oldest first, and the documents set aside; a
    directory without a readable run is refused."""
    store = existing(results)
    runs = some(store.runs(), store)
    return runs, store.set_aside
