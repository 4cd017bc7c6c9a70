"""A table run until its verdicts are decided: rounds, the cells they repeat, the order they take, the
cap, and a fixed count; on a deterministic stand-in for the orchestrator that stores runs of given times."""

import json

import pytest

from sbclab.experiments import orchestrator, reproduce
from sbclab.results.schema import RunRecord
from sbclab.results.store import ResultsStore
from sbclab.studies import reproduce as study

from .test_analysis import RESULTS
from .test_experiments import _fixed_host

PI = "20261122T201102Z-spark-pi-7bd9"


class Quiet:
    def start(self, total, skipped): ...
    def say(self, message): ...
    def cell(self, cell): ...
    def finished(self, cell, run): ...
    def stop(self): ...


def _stand_in(monkeypatch, seconds):
    """execute() storing one valid run per cell to do, of seconds(cell), and the order the shapes came in."""
    raw = json.loads((RESULTS / "runs" / f"{PI}.json").read_text())
    order = []

    def execute(found, options):
        store, stored = ResultsStore(options.results), []
        for cell in found.todo:
            spec = found.specs[cell.shape]
            order.append(cell.workers)
            doc = {**raw, "run_id": f"run-{cell.key}", "engine": cell.engine, "workload": cell.workload,
                   "wall_time_s": seconds(cell), "parameters": cell.parameters, "repetition": cell.repetition,
                   "cell": cell.as_record(), "versions": {**raw["versions"], "hadoop": "3.3.6", "spark": "3.5.0"},
                   "scale": {**raw["scale"], "factor": spec.scale.factor},
                   "cluster": {**raw["cluster"], "board": cell.board, "storage": spec.storage, "workers": cell.workers,
                               "emulated": True}}
            run = RunRecord.model_validate(doc)
            store.write(run)
            stored.append(run)
        return stored

    monkeypatch.setattr(study.orchestrator, "execute", execute)
    return order


def _table16(monkeypatch, tmp_path, seconds, **kw):
    _fixed_host(monkeypatch)
    seed = reproduce.seed("2026")
    planned = reproduce.plan_table(seed.tables["table16"], seed, repetitions=1, sizes=None, backend="emulated",
                                   on_boards=False, workers=[1, 2], storage=["nvme"])
    order = _stand_in(monkeypatch, seconds)
    options = orchestrator.Options(results=tmp_path, display=Quiet())
    return study.run_table(planned, seed.key, options, **kw), order


def _noisy(spread):
    """Times at the seed's speedup (246 s on one worker, 131 on two), each cell alternating around its mean."""
    return lambda cell: (246.0 if cell.workers == 1 else 131.0) * (1 + spread * (-1) ** cell.repetition)


def test_a_tight_table_is_decided_in_the_first_round_of_the_runs_the_estimate_expects(monkeypatch, tmp_path):
    outcome, order = _table16(monkeypatch, tmp_path, _noisy(0.005))
    [speedup] = [s for s in outcome.found.shapes if s.label == "nvme-p31-gen3: 2 workers vs 1"]
    # Nothing stored: 5 % spread assumed, so 4 runs a cell (as --estimate says), all in the first round.
    assert speedup.verdict == "holds" and outcome.repetitions == 4 and len(order) == 8
    assert outcome.repetitions == study.expected_repetitions(reproduce.seed("2026").tables["table16"], [])[0]


def test_an_undecided_shape_runs_its_cells_again_until_decided_alternating_the_order(monkeypatch, tmp_path):
    outcome, order = _table16(monkeypatch, tmp_path, _noisy(0.08))
    [speedup] = [s for s in outcome.found.shapes if s.label == "nvme-p31-gen3: 2 workers vs 1"]
    assert speedup.verdict == "holds" and 4 < outcome.repetitions <= study.CAP
    assert order[:8] == [1, 1, 1, 1, 2, 2, 2, 2] and order[8] == 2  # the second round starts with the other shape
    assert len(order) == 2 * outcome.repetitions


def test_the_cap_stops_an_undecidable_table_and_says_so(monkeypatch, tmp_path):
    outcome, order = _table16(monkeypatch, tmp_path, _noisy(0.3), cap=4)
    [speedup] = [s for s in outcome.found.shapes if s.label == "nvme-p31-gen3: 2 workers vs 1"]
    assert speedup.verdict == "inconclusive" and outcome.repetitions == 4 and len(order) == 8
    assert any("still inconclusive at 4 runs per cell" in n for n in outcome.found.notes)


def test_a_fixed_count_runs_once_and_judges_what_it_gets(monkeypatch, tmp_path):
    outcome, order = _table16(monkeypatch, tmp_path, _noisy(0.04), repetitions=2)
    assert len(order) == 4 and outcome.repetitions == 2
    assert [s.verdict for s in outcome.found.shapes if s.label == "nvme-p31-gen3: 2 workers vs 1"] == ["inconclusive"]


def test_the_estimate_expects_more_runs_of_noisier_cells():
    table = reproduce.seed("2026").tables["table16"]
    assert study.expected_repetitions(table, [])[0] == 4  # 5 % assumed: a ratio fits 15 % at 4 runs a cell
    assert study.expected_repetitions(table, [], cap=3)[0] == 3
    assert "assumed" in study.expected_repetitions(table, [])[2]


def test_no_other_writer_gets_in_between_the_rounds(monkeypatch, tmp_path):
    from .test_store import _other_process_writes

    between = []
    real = study._run_rounds

    def watched(*args, **kw):
        outcome = real(*args, **kw)
        between.append(_other_process_writes(tmp_path))
        return outcome

    monkeypatch.setattr(study, "_run_rounds", watched)
    outcome, order = _table16(monkeypatch, tmp_path, _noisy(0.08))
    assert len(order) > 8  # more than one round ran
    assert between and "being written by another sbclab" in between[0]
    assert _other_process_writes(tmp_path) == "wrote"
