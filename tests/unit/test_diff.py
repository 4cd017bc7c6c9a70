"""`sbclab diff`: two result sets cell by cell, a change flagged only when the runs show it."""

import json
from pathlib import Path

from click.testing import CliRunner

from sbclab.analysis import diff
from sbclab.cli import main_group
from sbclab.results.index import summaries
from sbclab.results.store import ResultsStore, load

FIXTURES = Path(__file__).parent / "fixtures" / "results" / "runs"
JITTER = (1.00, 1.03, 0.97, 1.02, 0.98)


def _result_set(root: Path, slower: float = 1.0, preset: str | None = None, runs: str = "*") -> Path:
    """Every fixture run five times, times jittered by a few per cent, all multiplied by `slower`."""
    store = ResultsStore(root)
    for path in sorted(FIXTURES.glob(f"{runs}.json")):
        run = load(path)
        cluster = run.cluster.model_copy(update={"preset": preset}) if preset else run.cluster
        for i, jitter in enumerate(JITTER, start=1):
            store.write(run.model_copy(update={"run_id": f"{run.run_id}-{i}", "repetition": i, "cluster": cluster,
                                               "wall_time_s": run.wall_time_s * jitter * slower}))
    return root


def _rows(root: Path) -> list[dict]:
    return [s.run for s in summaries(ResultsStore(root))]


def test_the_same_data_shows_no_difference(tmp_path):
    a, b = _result_set(tmp_path / "a"), _result_set(tmp_path / "b")
    found = diff.compare(_rows(a), _rows(b))
    assert len(found.rows) == 3 and not found.only_a and not found.only_b and not found.differing
    assert all(r.verdict == "no difference" and abs(r.ratio.value - 1) < 1e-9 for r in found.rows)
    assert found.geomean == 1.0


def test_twenty_per_cent_slower_is_flagged_with_its_interval_and_p(tmp_path):
    a, b = _result_set(tmp_path / "a"), _result_set(tmp_path / "b", slower=1.2)
    found = diff.compare(_rows(a), _rows(b))
    for row in found.rows:
        assert row.verdict == "20% slower", row
        assert 1 < row.ratio.ci_low < 1.2 < row.ratio.ci_high and row.p_value < 0.001
    assert abs(found.geomean - 1.2) < 1e-9


def test_a_preset_that_differs_between_the_sets_is_named_and_the_cells_still_match(tmp_path):
    a, b = _result_set(tmp_path / "a", preset="stock"), _result_set(tmp_path / "b", slower=0.8, preset="paper")
    done = CliRunner().invoke(main_group, ["diff", str(a), str(b), "--json"])
    assert done.exit_code == 0, done.output
    got = json.loads(done.output)
    assert got["differing"] == {"preset": ["stock", "paper"]}
    assert [c["verdict"] for c in got["cells"]] == ["20% faster"] * 3 and "stock" not in got["cells"][0]["cell"]
    shown = CliRunner().invoke(main_group, ["diff", str(a), str(b)])
    assert shown.exit_code == 0 and "preset: stock (A) and paper (B)" in shown.output and "geometric mean" in shown.output


def test_welch_needs_two_runs_a_side_and_a_cell_of_one_run_is_not_judged():
    assert diff.welch_on_logs([10.0], [12.0, 13.0]) is None
    assert diff.welch_on_logs([10.0, 10.0], [10.0, 10.0]) == 1.0
    assert diff.welch_on_logs([10.0, 10.5, 9.5], [10.2, 9.8, 10.4]) > 0.05


def test_sets_with_nothing_in_common_or_no_runs_are_refused_in_a_sentence(tmp_path):
    a = _result_set(tmp_path / "a")
    empty = tmp_path / "empty"
    empty.mkdir()
    done = CliRunner().invoke(main_group, ["diff", str(a), str(empty)])
    assert done.exit_code != 0 and "runs/ folder" in str(done.exception)
    teragen, pi = _result_set(tmp_path / "teragen", runs="*teragen*"), _result_set(tmp_path / "pi", runs="*pi*")
    done = CliRunner().invoke(main_group, ["diff", str(teragen), str(pi)])
    assert done.exit_code != 0 and "no cell in common" in str(done.exception)


def test_the_report_sets_its_cells_against_a_baseline(tmp_path):
    baseline, these = _result_set(tmp_path / "a"), _result_set(tmp_path / "b", slower=1.2)
    done = CliRunner().invoke(main_group, ["report", str(these), "--baseline", str(baseline), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, (done.output, done.exception)
    rows = (tmp_path / "r" / "tables" / "baseline.csv").read_text().splitlines()
    assert len(rows) == 4 and all(row.endswith("20% slower") for row in rows[1:])
    page = (tmp_path / "r" / "report.html").read_text()
    assert 'id="baseline"' in page and str(baseline) in page and "20% slower" in page
    alone = CliRunner().invoke(main_group, ["report", str(these), "--out", str(tmp_path / "r2")])
    assert alone.exit_code == 0 and 'id="baseline"' not in (tmp_path / "r2" / "report.html").read_text()
