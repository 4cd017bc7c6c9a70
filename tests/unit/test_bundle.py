"""`sbclab results export --bundle` and `import`: a result set moved whole, checked, never half-imported."""

import io
import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from sbclab.cli import main_group
from sbclab.errors import SbclabError
from sbclab.results import bundle
from sbclab.results.store import ResultsStore

FIXTURES = Path(__file__).parent / "fixtures" / "results"


def _exported(tmp_path: Path) -> Path:
    out = tmp_path / "set.tar.gz"
    done = CliRunner().invoke(main_group, ["results", "export", str(FIXTURES), "--bundle", str(out)])
    assert done.exit_code == 0, (done.output, done.exception)
    return out


def test_a_bundle_round_trips_runs_series_and_report(tmp_path):
    archive = _exported(tmp_path)
    target = tmp_path / "elsewhere"
    done = CliRunner().invoke(main_group, ["results", "import", str(archive), "--results", str(target)])
    assert done.exit_code == 0 and "3 runs added" in done.output
    assert [r.run_id for r in ResultsStore(target).runs()] == [r.run_id for r in ResultsStore(FIXTURES).runs()]
    for series in (FIXTURES / "series").glob("*.json"):
        assert (target / "series" / series.name).read_bytes() == series.read_bytes()
    assert (target / "report" / "report.html").exists() and (target / "report" / "tables" / "cells.csv").exists()
    again = CliRunner().invoke(main_group, ["results", "import", str(archive), "--results", str(target)])
    assert again.exit_code == 0 and "0 runs added" in again.output and "3 already there" in again.output
    rebuilt = CliRunner().invoke(main_group, ["report", str(target), "--out", str(tmp_path / "r")])
    assert rebuilt.exit_code == 0


def _rewritten(source: Path, out: Path, change) -> Path:
    """The bundle with one member changed by change(name, data) -> (name, data) or None to drop it."""
    with tarfile.open(source, "r:gz") as tar, tarfile.open(out, "w:gz") as new:
        for member in tar:
            data = tar.extractfile(member).read()
            changed = change(member.name, data)
            if changed is None:
                continue
            info = tarfile.TarInfo(changed[0])
            info.size = len(changed[1])
            new.addfile(info, io.BytesIO(changed[1]))
    return out


def test_a_damaged_or_crafted_bundle_imports_nothing(tmp_path):
    archive = _exported(tmp_path)
    target = tmp_path / "target"
    damaged = _rewritten(archive, tmp_path / "damaged.tar.gz",
                         lambda name, data: (name, data + b" ") if name.startswith("runs/") else (name, data))
    with pytest.raises(SbclabError, match="damaged"):
        bundle.import_bundle(damaged, target)
    escaping = _rewritten(archive, tmp_path / "escaping.tar.gz",
                          lambda name, data: ("runs/../../evil.json", data) if name.startswith("series/") else (name, data))
    with pytest.raises(SbclabError, match="no file of a results directory"):
        bundle.import_bundle(escaping, target)
    with pytest.raises(SbclabError, match="no sbclab bundle"):
        bundle.import_bundle(_rewritten(archive, tmp_path / "bare.tar.gz",
                                        lambda name, data: None if name == bundle.MANIFEST else (name, data)), target)
    (tmp_path / "junk.tar.gz").write_text("not an archive")
    with pytest.raises(SbclabError, match="not an sbclab bundle"):
        bundle.import_bundle(tmp_path / "junk.tar.gz", target)
    assert not (tmp_path / "evil.json").exists() and not list(target.glob("runs/*")) and not list(target.glob(".import.*"))


def test_a_run_with_other_content_under_the_same_id_is_refused(tmp_path):
    archive = _exported(tmp_path)
    target = tmp_path / "target"
    bundle.import_bundle(archive, target)
    doc = next((target / "runs").glob("*.json"))
    raw = json.loads(doc.read_text())
    raw["wall_time_s"] += 1
    doc.write_text(json.dumps(raw))
    with pytest.raises(SbclabError, match="other content"):
        bundle.import_bundle(archive, target)
