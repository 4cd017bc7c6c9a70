"""The planner's model fitted on cells made from a known model (its parameters come back, its
predictions and intervals hold the truth), its validation, the plan's ranking, and `sbclab plan`."""

import json
import math

import numpy as np
import pytest

from sbclab import cli
from sbclab.analysis import planning
from sbclab.analysis.planning import Observation
from sbclab.studies import plan

GB = 2**30
BLOCK = 2**27
TRUE = {"fixed": 30.0, "per_unit": 2e-7, "contention": 0.05}


def truth(workers, size, tasks, slots, fixed=TRUE["fixed"], per_unit=TRUE["per_unit"], contention=TRUE["contention"]):
    return fixed + per_unit * (size / tasks) * planning.waves(workers, tasks, slots) * (1 + contention * (workers - 1))


def grid(board="rpi4b-4gb", storage="microsd-evo", workers=(1, 2, 3, 4, 5), sizes=(0.5, 1, 2, 4), noise=0.03,
         slots=3, seed=1, **model):
    rng = np.random.default_rng(seed)
    cells = []
    for n in workers:
        for gb in sizes:
            size = gb * GB
            tasks = math.ceil(size / BLOCK)
            seconds = truth(n, size, tasks, slots, **model) * math.exp(rng.normal(0, noise))
            cells.append(Observation("wordcount", "hadoop", board, storage, n, size, tasks, slots, seconds, "fixture"))
    return cells


def test_the_known_model_comes_back():
    model = planning.fit(grid())
    assert model.contention_fitted
    assert model.fixed == pytest.approx(TRUE["fixed"], rel=0.1)
    assert model.per_unit == pytest.approx(TRUE["per_unit"], rel=0.1)
    assert model.contention == pytest.approx(TRUE["contention"], abs=0.03)
    assert model.log_spread == pytest.approx(0.03, abs=0.015)


def test_a_prediction_beyond_the_cells_holds_the_truth():
    model = planning.fit(grid())
    size = 20 * GB
    tasks = math.ceil(size / BLOCK)
    found = model.predict(8, size, tasks, 3)
    true = truth(8, size, tasks, 3)
    assert found.low <= true <= found.high
    assert found.seconds == pytest.approx(true, rel=0.1)
    assert found.low < found.seconds < found.high


def test_fewer_tasks_than_slots_stop_gaining_from_nodes():
    """The wave structure: 4 tasks on 3-slot workers run in one wave from two workers on."""
    model = planning.fit(grid(contention=0.0, noise=0.01))
    one_wave = [model.seconds(n, 0.5 * GB, 4, 3) for n in (2, 4, 8)]
    assert one_wave[0] <= one_wave[1] <= one_wave[2]  # no gain, only contention
    assert model.seconds(1, 0.5 * GB, 4, 3) > one_wave[0]


def test_too_few_worker_counts_fit_no_contention_and_too_few_cells_no_model():
    two_counts = planning.fit(grid(workers=(1, 2)))
    assert two_counts is not None and not two_counts.contention_fitted and two_counts.contention == 0.0
    assert planning.fit(grid(workers=(1,), sizes=(1, 2))) is None  # two cells, two parameters: an exact fit
    assert planning.fit([]) is None


def test_one_model_per_group():
    with pytest.raises(ValueError):
        planning.fit(grid() + grid(board="rpi5b"))


def test_held_out_cells_are_predicted_and_a_wrong_model_shows_it():
    good = planning.held_out("largest count", grid(), lambda o: o.workers == 5)
    assert len(good.checked) == 4
    assert good.median_abs_error < 0.08
    assert good.coverage >= 0.75
    # Five workers that behave like a much worse cluster than one to four do: the error must show.
    skewed = [o if o.workers < 5 else Observation(o.workload, o.engine, o.board, o.storage, o.workers, o.size, o.tasks,
                                                  o.slots_per_node, o.seconds * 2.5, o.source) for o in grid()]
    bad = planning.held_out("largest count", skewed, lambda o: o.workers == 5)
    assert bad.median_abs_error > 0.4
    assert bad.coverage < 0.5


def test_the_seeds_eight_worker_pi_cells_from_their_one_to_four():
    found = plan.validations(None, {"pi"})[0]
    eight = [c for c in found.checked if c.observation.workers == 8]
    assert {c.observation.source for c in eight} == {"leepark2026 Table 16", "leepark2026 Table 17"}
    hadoop = [c for c in eight if c.observation.engine == "hadoop"]
    assert all(abs(c.error) < 0.1 for c in hadoop), [c.error for c in hadoop]


@pytest.fixture
def two_boards(monkeypatch):
    """A slow cheap board and a fast dear one, both measured, and a third with no cells."""
    cells = grid("rpi3b", "microsd-evo", per_unit=8e-7) + grid("rpi5b", "nvme-p31-gen3", per_unit=1e-7)
    monkeypatch.setattr(plan, "published_observations", lambda: cells)
    return cells


def test_the_plan_ranks_what_meets_the_deadline_by_price(two_boards):
    found = plan.answer("wordcount", "hadoop", 4 * GB, 300, boards=["rpi3b", "rpi5b"], max_workers=16)
    by_board = {(o.board, o.storage): o for o in found.options}
    fast, slow = by_board[("rpi5b", "nvme-p31-gen3")], by_board[("rpi3b", "microsd-evo")]
    assert fast.meets and fast.predicted.seconds <= 300
    if fast.workers > 1:
        assert fast.model.predict(fast.workers - 1, 4 * GB, 32, plan.slots_per_node("rpi5b")).seconds > 300
    assert fast.price_usd == (fast.workers + 1) * (80 + 60) and fast.price_complete
    assert fast.energy_wh > 0
    assert not slow.meets or slow.workers > fast.workers
    meeting = [o.meets for o in found.options]
    assert meeting == sorted(meeting, reverse=True)  # what meets the deadline first
    for a, b in zip(found.options, found.options[1:]):
        if a.meets and b.meets and a.sure == b.sure:
            assert a.price_usd <= b.price_usd
    tight = plan.answer("wordcount", "hadoop", 4 * GB, 5, boards=["rpi5b"], max_workers=4)
    assert tight.options and not any(o.meets for o in tight.options)


def test_a_board_without_cells_borrows_a_measured_ones_model_and_says_so(two_boards):
    found = plan.answer("wordcount", "hadoop", 4 * GB, 600, boards=["rpi4b"], max_workers=16)
    assert found.options
    for option in found.options:
        assert "sysbench" in option.model.note and option.board == "rpi4b"


def test_the_plan_document_says_where_each_prediction_comes_from(two_boards, tmp_path, capsys):
    saved = tmp_path / "plan.json"
    cli.main(["plan", "wordcount", "--size", "4GB", "--deadline", "5min", "--boards", "rpi5b", "--save", str(saved)])
    document = json.loads(saved.read_text())
    assert document["sbclab"] and document["question"]["deadline_s"] == 300
    assert document["options"][0]["model"]["rests_on"] == ["fixture"]
    assert "rpi5b" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["plan", "wordcount", "--size", "20GB", "--deadline", "soon"], "not a duration"),
    (["plan", "wordcount", "--size", "20GB", "--deadline", "10min", "--boards", "rpi9"], "No board named rpi9"),
    (["plan", "wordcount", "--deadline", "10min"], "needs the input's size"),
    (["plan", "wordcount", "--size", "20GB"], "needs a workload and a deadline"),
    (["plan", "wordcount", "--size", "20GB", "--deadline", "1h", "--price", "rpi5b"], "NAME=NUMBER"),
    (["plan", "wordcount", "--size", "20GB", "--deadline", "1h", "--price", "abacus=3"], "no board or medium"),
    (["plan", "--validate", "--results", "/nonexistent/results"], "no results directory"),
])
def test_bad_questions_get_a_sentence(argv, says, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code != 0
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert says.lower() in text.lower() and "Traceback" not in text
