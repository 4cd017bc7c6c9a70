"""A result set as one archive: runs, logs, series (and a report), to share and re-report elsewhere.

The bundle is a gzip'd tar with BUNDLE.json first: the sbclab version and schema it was made with
and the SHA-256 of every file. Importing checks every file against it before anything lands, takes
only the folders a results directory has (no absolute path, no `..`, no link), and adds runs to the
target without replacing one: a run already there with the same content is skipped, with other
content it is refused. What is imported appears whole or not at all.
"""

import io
import json
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from .. import __version__, atomic
from ..digest import sha256
from ..errors import SbclabError
from .schema import SCHEMA_VERSION
from .store import ResultsStore, SetAside, load

MANIFEST = "BUNDLE.json"
FOLDERS = ("runs", "logs", "series", "report")


def _files(root: Path, folder: str) -> list[Path]:
    base = root / folder
    return sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink()) if base.is_dir() else []


def _run_of(name: str) -> str:
    """The run a file of runs/, logs/ or series/ belongs to: runs/ID.json, logs/ID/..., series/ID.json."""
    return PurePosixPath(name).parts[1].removesuffix(".json")


def export(results: Path, bundle: Path, report: Path | None = None, set_aside: list[SetAside] = ()) -> int:
    """Write the results directory (and a report folder, stored as report/) into `bundle`; the
    number of runs in it. The documents set aside are left out with their logs and series (an
    import would refuse them), and listed in the manifest with why."""
    results = Path(results)
    left_out = {s.path.stem: s.reason for s in set_aside}
    runs = [p for p in _files(results, "runs") if p.stem not in left_out]
    if not runs:
        raise SbclabError(f"{results} holds no runs to export.", "Give the directory you passed to 'sbclab run --results'.")
    members = {str(p.relative_to(results)): p for folder in ("runs", "logs", "series") for p in _files(results, folder)}
    members = {name: path for name, path in members.items() if _run_of(name) not in left_out}
    if report is not None:
        members.update({f"report/{p.relative_to(report)}": p for p in sorted(Path(report).rglob("*")) if p.is_file()})
    manifest = {"sbclab": __version__, "schema_version": SCHEMA_VERSION, "source": str(results.resolve()),
                "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "runs": len(runs),
                "files": {name: sha256(path) for name, path in members.items()}}
    if left_out:
        manifest["left_out"] = {f"runs/{run}.json": why for run, why in sorted(left_out.items())}
    try:
        with atomic.open_for_write(bundle, "wb") as out, tarfile.open(fileobj=out, mode="w:gz") as tar:
            text = json.dumps(manifest, indent=1).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime = len(text), int(datetime.now(timezone.utc).timestamp())
            tar.addfile(info, io.BytesIO(text))
            for name, path in members.items():
                tar.add(path, arcname=name, recursive=False)
        Path(bundle).chmod(0o644)  # to be shared: readable like any other file one writes
    except OSError as err:
        raise SbclabError(f"Cannot write the bundle {bundle}: {err.strerror or err}.",
                          "Give --bundle a path in a folder you can write to.") from err
    return len(runs)


@dataclass
class Imported:
    added: list[str]     # run ids
    skipped: list[str]   # run ids already there, identical
    manifest: dict


def _safe_name(name: str) -> bool:
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and len(path.parts) >= 2 and path.parts[0] in FOLDERS


def import_bundle(bundle: Path, results: Path) -> Imported:
    """Add a bundle's runs, logs, series and report to the results directory `results`."""
    bundle, results = Path(bundle), Path(results)
    hint = "Export it again with 'sbclab results export'."
    try:
        archive = tarfile.open(bundle, mode="r:gz")
    except (OSError, tarfile.TarError) as err:
        raise SbclabError(f"{bundle} is not an sbclab bundle ({err}).", hint) from err
    results.mkdir(parents=True, exist_ok=True)
    # An experiment removes what an interrupted import left: the two never write here at once.
    with ResultsStore(results).writing(["sbclab", "results", "import", str(bundle)]):
        return _staged(archive, bundle, results, hint)


def _staged(archive: tarfile.TarFile, bundle: Path, results: Path, hint: str) -> Imported:
    """The bundle's files checked in a staging folder inside `results`, then merged."""
    staging = Path(tempfile.mkdtemp(dir=results, prefix=".import."))
    try:
        with archive:
            manifest_member = archive.next()
            if manifest_member is None or manifest_member.name != MANIFEST:
                raise SbclabError(f"{bundle} has no {MANIFEST} first, so it is no sbclab bundle.", hint)
            manifest = json.loads(archive.extractfile(manifest_member).read())  # type: ignore[union-attr]
            expected: dict[str, str] = manifest.get("files", {})
            for member in archive:
                if member is manifest_member:
                    continue
                if not member.isfile() or not _safe_name(member.name) or member.name not in expected:
                    raise SbclabError(f"{bundle} holds '{member.name}', which is no file of a results directory its "
                                      f"{MANIFEST} lists; nothing was imported.", hint)
                target = staging / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.extractfile(member) as source, open(target, "wb") as out:  # type: ignore[union-attr]
                    shutil.copyfileobj(source, out)
        found = {str(p.relative_to(staging)): sha256(p) for p in staging.rglob("*") if p.is_file()}
        if found != expected:
            wrong = sorted(set(found.items()) ^ set(expected.items()))[0][0]
            raise SbclabError(f"{bundle} is damaged: {wrong} does not match its checksum or is missing; nothing was "
                              "imported.", hint)
        added, skipped = _merge(staging, results)
        return Imported(added, skipped, manifest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _merge(staging: Path, results: Path) -> tuple[list[str], list[str]]:
    added, skipped = [], []
    # The bundle's report describes its runs: it becomes the target's report only in a target of its own.
    fresh = not any((results / "runs").glob("*.json"))
    for doc in sorted((staging / "runs").glob("*.json")):
        load(doc)  # a document this sbclab cannot read is refused before anything moves
        there = results / "runs" / doc.name
        if there.exists():
            if sha256(there) != sha256(doc):
                raise SbclabError(f"{results} already holds run {doc.stem} with other content; nothing was imported.",
                                  "Import into another results directory (--results).")
            skipped.append(doc.stem)
        else:
            added.append(doc.stem)
    already = set(skipped)
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        relative = path.relative_to(staging)
        folder, run = relative.parts[0], relative.parts[1].removesuffix(".json")
        target = results / relative
        # Series and logs of runs already there, and of the idle baselines two sets share, stay as they are.
        if folder == "runs" or (folder == "report" and not fresh) or run in already or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    # Documents last, each atomically: a run is there only once its logs and series are.
    for run_id in added:
        atomic.write_text(results / "runs" / f"{run_id}.json", (staging / "runs" / f"{run_id}.json").read_text())
    return added, skipped
