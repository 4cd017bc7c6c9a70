"""The tuner on a test double whose response is known: it finds the planted gain, never accepts a
change without evidence, keeps to its budget and resumes from its journal."""

import dataclasses
import json
import math

import numpy as np
import pytest

from sbclab.errors import SbclabError
from sbclab.stack import levers as lever_registry
from sbclab.studies import tune

LEVERS = lever_registry.for_engine("hadoop", ["map-output-compression", "uber", "reduces", "speculation"])
CONFIG = {"mapred-site": {"mapreduce.job.reduces": "2"}}
# The planted response: compressing map output saves 30 %, uber mode costs 30 %, one reduce a worker
# saves 10 %, speculation makes no difference.
EFFECT = {("map-output-compression", "deflate"): 0.7, ("uber", "on"): 1.3, ("reduces", "per-worker"): 0.9}


def true_time(settings, effect=EFFECT):
    time = 100.0
    mapred = settings.get("mapred-site", {})
    if mapred.get("mapreduce.map.output.compress") == "true":
        time *= effect[("map-output-compression", "deflate")]
    if mapred.get("mapreduce.job.ubertask.enable") == "true":
        time *= effect[("uber", "on")]
    if mapred.get("mapreduce.job.reduces") == "3":
        time *= effect[("reduces", "per-worker")]
    return time


class Double:
    """Measures a variant as its true time with 3 % noise; counts the runs; the clock advances per run.
    With `effects`, several workloads, each with its own planted response."""

    def __init__(self, seed=0, fail_when=None, interrupt_at=None, effect=EFFECT, flag_once_in=None, effects=None):
        self.rng, self.effects = np.random.default_rng(seed), effects or {"job": effect}
        self.runs, self.now, self.fail_when, self.interrupt_at = 0, 0.0, fail_when, interrupt_at
        self.flag_once_in = flag_once_in  # a trial whose first incumbent run is flagged, the first time asked
        self.asked = []

    def clock(self):
        return self.now

    def __call__(self, number, variants, repetitions):
        if self.interrupt_at is not None and number == self.interrupt_at:
            self.interrupt_at = None
            raise KeyboardInterrupt
        self.asked.append((number, repetitions))
        out = {}
        flagged = number == self.flag_once_in
        for name, settings in variants.items():
            for workload, effect in self.effects.items():
                times = [true_time(settings, effect) * math.exp(self.rng.normal(0, 0.03)) for _ in range(repetitions)]
                if flagged and name == "incumbent":
                    self.flag_once_in, times = None, times[1:]
                self.runs += repetitions
                self.now += sum(times)
                failed = repetitions if self.fail_when and self.fail_when(settings) else 0
                out.setdefault(name, {})[workload] = tune.Measured(
                    [] if failed else times, [f"{name}-{workload}-{number}-{i}" for i in range(repetitions)], failed)
        return out


def run(tmp_path, double, **given):
    options = {"journal": tmp_path / "journal.log", "name": "test", "budget_s": 1e9, "repetitions": 3,
               "max_trials": 12, "clock": double.clock}
    return tune.search(LEVERS, double, CONFIG, 3, **{**options, **given})


def test_the_planted_gain_is_found_and_the_planted_loss_refused(tmp_path):
    found = run(tmp_path, Double())
    final = lever_registry.merged(LEVERS, found.incumbent, CONFIG, 3)
    assert found.incumbent["map-output-compression"] == "deflate"
    assert found.incumbent["uber"] == "keep"
    assert true_time(final) <= 70.0 + 1e-9
    assert found.gain == pytest.approx(100.0 / true_time(final), rel=0.1)
    for trial in found.trials:
        if trial.accepted:
            assert trial.speedup.ci_low > 1.0
        if trial.chosen["uber"] == "on":
            assert not trial.accepted


def test_no_change_is_accepted_without_evidence_of_a_gain(tmp_path):
    found = run(tmp_path, Double(seed=3, effect={k: 1.0 for k in EFFECT}), max_trials=8)
    assert not found.accepted, [(t.chosen, t.speedup) for t in found.trials if t.accepted]
    assert found.incumbent == {lever.name: "keep" for lever in LEVERS}


def test_a_setting_that_breaks_the_job_is_never_accepted(tmp_path):
    double = Double(fail_when=lambda s: s.get("mapred-site", {}).get("mapreduce.map.output.compress") == "true")
    found = run(tmp_path, double, max_trials=8)
    assert found.incumbent["map-output-compression"] == "keep"
    broken = [t for t in found.trials if t.chosen["map-output-compression"] == "deflate"]
    assert broken and all(not t.accepted and "failed" in t.note for t in broken)


def test_the_budget_bounds_the_trials(tmp_path):
    double = Double()
    found = run(tmp_path, double, budget_s=1500, max_trials=None)
    # Each trial is six runs of 70-130 s: a second one starts only while one more fits.
    assert 1 <= len(found.trials) <= 3 and "budget" in found.stopped
    assert double.now <= 1500 + max(t.seconds for t in found.trials)


def test_a_search_resumes_from_its_journal_and_measures_an_interrupted_trial_again(tmp_path):
    first = run(tmp_path, Double(), max_trials=3)
    assert len(first.trials) == 3
    double = Double(seed=1, interrupt_at=4)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, double, max_trials=6)
    again = run(tmp_path, Double(seed=2), max_trials=6)
    numbers = [t.number for t in again.trials]
    assert numbers[:3] == [t.number for t in first.trials]
    assert 4 in numbers and len(again.trials) == 6
    assert again.incumbent == (first.incumbent if not any(t.accepted for t in again.trials[3:])
                               else again.accepted[-1].chosen)


def test_a_tuning_needs_two_runs_a_side(tmp_path):
    with pytest.raises(SbclabError, match="at least 2 runs"):
        run(tmp_path, Double(), repetitions=1)


def test_the_result_says_what_each_lever_gives_up():
    chosen = {lever.name: "keep" for lever in lever_registry.for_engine("hadoop")}
    chosen["output-replication"] = "one"
    hadoop = lever_registry.for_engine("hadoop")
    assert lever_registry.merged(hadoop, chosen, CONFIG, 3) == {"hdfs-site": {"dfs.replication": "1"}}
    assert any("durability" in t for t in lever_registry.trades(hadoop, chosen))
    doubled = lever_registry.merged(hadoop, {"sort-buffer": "double"}, {"mapred-site": {"mapreduce.task.io.sort.mb": "40"}}, 3)
    assert doubled["mapred-site"]["mapreduce.task.io.sort.mb"] == "80"


def test_every_choice_of_every_lever_is_a_runs_own_setting():
    """What the tuner tries must run on the cluster as it is: a job's settings, or the scheduler's that a run sets."""
    from sbclab.stack.config import check_job_settings

    for lever in lever_registry.LEVERS.values():
        for choice in lever.choices:
            check_job_settings(lever.settings(choice, CONFIG, 3))
    spread = lever_registry.LEVERS["heartbeat-assignments"].settings("one", CONFIG, 3)
    assert spread == {"capacity-scheduler": {
        "yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled": "false"}}


def test_the_report_shows_the_search_and_names_an_unreadable_one(tmp_path):
    import shutil
    from pathlib import Path

    from sbclab.report import build, html

    results = tmp_path / "results"
    shutil.copytree(Path(__file__).parent / "fixtures" / "results", results)
    found = run(tmp_path, Double(), max_trials=4)
    document = tune.result_document(found, {"workload": "wordcount"}, CONFIG, 3, ["sbclab", "tune"])
    tune.write_result(results / "tuning" / "wordcount-hadoop.json", document)
    (results / "tuning" / "broken.json").write_text("{")
    report = build.build(results)
    written = html.write(report, tmp_path / "out")
    page = written["html"].read_text()
    assert 'id="tuning"' in page and "wordcount-hadoop" in page
    rows = json.loads(written["json"].read_text())["tuning"]
    assert [r["trial"] for r in rows] == [t.number for t in found.trials]
    assert any(r["accepted"] for r in rows) and all(r["runs"] for r in rows)
    assert any("broken.json" in w for w in report.warnings)
    assert "## Tuning" in written["markdown"].read_text()


def test_the_tuned_preset_is_a_tunings_settings_and_refused_where_none_was_measured(monkeypatch):
    from sbclab.cluster import spec as cluster_spec
    from sbclab.stack import lifecycle, presets
    from sbclab.stack.choices import StackChoices

    measured = {("rpi4b-4gb", "microsd-evo"): {"settings": {"mapred-site": {"mapreduce.task.io.sort.factor": "64"}},
                                               "question": {"cluster": {"board": "rpi4b-4gb", "storage": "microsd-evo"}}}}
    monkeypatch.setattr(presets, "tuned_results", lambda: measured)
    built = cluster_spec.build(backend="processes", board="rpi4b-4gb", storage="microsd-evo",
                               workers=2, cores=2, memory_bytes=24 * 2**30)
    assert presets.overrides(built, "tuned") == {"mapred-site": {"mapreduce.task.io.sort.factor": "64"}}
    other = built.model_copy(update={"board": "rpi5b", "storage": "nvme-p31-gen3"})
    with pytest.raises(SbclabError, match="No tuning has measured rpi5b/nvme-p31-gen3") as refused:
        lifecycle.check(other, StackChoices(preset="tuned"))
    assert "sbclab tune" in refused.value.hint and "rpi4b-4gb/microsd-evo" in refused.value.message


def test_a_tuning_made_on_two_workers_gives_a_reduce_a_worker_on_four():
    """The reduce count a tuning chose per worker follows the cluster it runs on; what the board's sizing
    gave (here the ApplicationMaster's container) stays as it was measured."""
    from sbclab.stack import presets

    document = {"levers": {"reduces": {"choice": "per-worker"}, "am-memory": {"choice": "half"}},
                "settings": {"mapred-site": {"mapreduce.job.reduces": "2", "yarn.app.mapreduce.am.resource.mb": "768"}}}
    assert presets.tuned_settings(document, 4)["mapred-site"] == {
        "mapreduce.job.reduces": "4", "yarn.app.mapreduce.am.resource.mb": "768"}
    assert presets.tuned_settings(document, 2)["mapred-site"]["mapreduce.job.reduces"] == "2"
    kept = {"levers": {"reduces": {"choice": "keep"}}, "settings": {"mapred-site": {}}}
    assert presets.tuned_settings(kept, 4) == {"mapred-site": {}}
    assert document["settings"]["mapred-site"]["mapreduce.job.reduces"] == "2", "the tuning's own record is unchanged"


def test_a_run_says_where_its_preset_came_from(monkeypatch):
    from sbclab.stack import presets

    measured = {("rpi4b-4gb", "microsd-evo"): {
        "shipped_as": "tuned/rpi4b-4gb_microsd-evo.yaml", "sbclab": "1.2.3", "made": "2026-12-06T10:00:00+00:00", "settings": {}, "speedup_over_start": 1.4,
        "question": {"workload": "terasort", "engine": "hadoop", "size_bytes": 128_000_000,
                     "cluster": {"workers": 2, "board": "rpi4b-4gb", "storage": "microsd-evo"}},
        "trials": [{"accepted": True}, {"accepted": False}, {"accepted": False}]}}
    monkeypatch.setattr(presets, "tuned_results", lambda: measured)
    said = presets.source("tuned", "rpi4b-4gb", "microsd-evo")
    for part in ("tuned/rpi4b-4gb_microsd-evo.yaml", "terasort/hadoop at 128 MB", "2 workers", "sbclab 1.2.3",
                 "2026-12-06", "3 trials, 1 accepted", "1.40x"):
        assert part in said
    assert presets.source("paper-2026", "rpi4b-4gb", "microsd-evo").startswith("Lee & Park 2026")


def test_a_trial_with_a_flagged_run_asks_for_one_more_run_a_side(tmp_path):
    double = Double(flag_once_in=0)
    found = run(tmp_path, double, max_trials=1)
    assert double.asked == [(0, 3), (0, 4)]
    assert [len(r) for r in found.trials[0].runs.values()] == [4, 4]


def test_a_flagged_run_is_made_again_and_a_failed_one_is_not():
    three, two = tune.Measured([1.0, 1.1, 1.2], ["a", "b", "c"]), tune.Measured([1.0, 1.1], ["d", "e", "f"])
    assert tune.runs_to_add({"incumbent": {"job": three}, "candidate": {"job": three}}, 3) == 0
    assert tune.runs_to_add({"incumbent": {"job": two}, "candidate": {"job": three}}, 3) == 1
    assert tune.runs_to_add({"incumbent": {"job": two}, "candidate": {"job": three}}, 2) == 0, "more counted than asked"
    failed = tune.Measured([1.0, 1.1], ["g", "h", "i"], failed=1)
    assert tune.runs_to_add({"incumbent": {"job": two}, "candidate": {"job": failed}}, 3) == 0
    one_of_two = {"incumbent": {"a": three, "b": two}, "candidate": {"a": three, "b": three}}
    assert tune.runs_to_add(one_of_two, 3) == 1, "a flagged run of any workload is made again"


# Tuned for two workloads: compressing map output halves TeraSort's time and slows WordCount by 30 %
# (a geometric mean of 1.24, a gain on average); one reduce a worker saves 20 % of both.
TWO = {"terasort": {**EFFECT, ("map-output-compression", "deflate"): 0.5, ("reduces", "per-worker"): 0.8},
       "wordcount": {**EFFECT, ("map-output-compression", "deflate"): 1.3, ("reduces", "per-worker"): 0.8}}


def test_tuned_for_two_workloads_a_change_that_slows_one_is_refused_whatever_it_gives_the_other(tmp_path):
    found = run(tmp_path, Double(effects=TWO), max_trials=1, first={"map-output-compression": "deflate"})
    trial = found.trials[0]
    assert set(trial.by_workload) == {"terasort", "wordcount"}
    assert trial.by_workload["terasort"].ci_low > 1 and trial.by_workload["wordcount"].ci_high < 1
    assert trial.speedup.ci_low > 1, "the planted loss must hide behind a gain on average"
    assert not trial.accepted and "slows wordcount" in trial.note
    assert len(trial.runs["candidate"]) == 6, "both workloads' runs are the trial's evidence"


def test_tuned_for_two_workloads_a_change_is_judged_on_the_geometric_mean_and_kept_in_the_journal(tmp_path):
    found = run(tmp_path, Double(effects=TWO), max_trials=1, first={"reduces": "per-worker"})
    trial = found.trials[0]
    assert trial.accepted and trial.speedup.value == pytest.approx(1.25, rel=0.06)
    assert trial.speedup.value == pytest.approx(math.sqrt(trial.by_workload["terasort"].value
                                                          * trial.by_workload["wordcount"].value))
    assert "terasort" in trial.note and "wordcount" in trial.note
    resumed = run(tmp_path, Double(effects=TWO, seed=1), max_trials=1)  # replayed from the journal, nothing run
    assert ({w: d.as_dict() for w, d in resumed.trials[0].by_workload.items()}
            == {w: d.as_dict() for w, d in trial.by_workload.items()})
    assert resumed.incumbent["reduces"] == "per-worker"


def test_a_first_combination_is_measured_before_the_samplers_and_only_once(tmp_path):
    hunch = tune.first_choices(LEVERS, "map-output-compression=deflate, reduces=per-worker")
    found = run(tmp_path, Double(), max_trials=1, first=hunch)
    assert found.trials[0].chosen == {"map-output-compression": "deflate", "uber": "keep",
                                      "reduces": "per-worker", "speculation": "keep"}
    assert found.trials[0].accepted
    again = run(tmp_path, Double(seed=1), max_trials=2, first=hunch)  # resumed: the hunch is in the journal
    assert [t.chosen for t in again.trials].count(found.trials[0].chosen) == 1


def _with_uber_choices(choices: dict) -> list:
    return [dataclasses.replace(lever, choices=choices) if lever.name == "uber" else lever for lever in LEVERS]


def test_a_lever_that_gained_a_choice_since_the_search_began_goes_on_with_its_old_ones(tmp_path):
    uber = next(lever for lever in LEVERS if lever.name == "uber")
    before = _with_uber_choices({"keep": uber.choices["keep"]})
    options = {"journal": tmp_path / "journal.log", "name": "test", "budget_s": 1e9, "repetitions": 3,
               "max_trials": 3}
    tune.search(before, Double(), CONFIG, 3, clock=Double().clock, **options)
    said = []
    again = tune.search(LEVERS, Double(seed=1), CONFIG, 3, clock=Double().clock, say=said.append,
                        **{**options, "max_trials": 8})
    assert len(again.trials) == 8 and all(t.chosen["uber"] == "keep" for t in again.trials)
    assert any("uber: this search began with the choices keep" in line and "on came later" in line for line in said)
    # Asking for the new choice first is refused before a cluster is brought up for it.
    with pytest.raises(SbclabError, match="made after this search began") as refused:
        tune.check_resumable(tmp_path / "journal.log", "test", LEVERS, {"uber": "on"})
    assert "another --results folder" in refused.value.hint
    tune.check_resumable(tmp_path / "journal.log", "test", LEVERS, {"reduces": "per-worker"})


def test_a_search_whose_recorded_choice_is_gone_is_refused(tmp_path):
    uber = next(lever for lever in LEVERS if lever.name == "uber")
    wider = _with_uber_choices({**uber.choices, "turbo": uber.choices["on"]})
    tune.search(wider, Double(), CONFIG, 3, journal=tmp_path / "journal.log", name="test", budget_s=1e9,
                max_trials=2, first={"uber": "turbo"})
    with pytest.raises(SbclabError, match="uber=turbo, a choice this sbclab no longer has"):
        tune.check_resumable(tmp_path / "journal.log", "test", LEVERS, None)
    tune.check_resumable(tmp_path / "elsewhere.log", "test", LEVERS, None)  # no journal: a new search


@pytest.mark.parametrize("given, says", [("no-such=on", "not among the levers searched"),
                                         ("uber=maybe", "not one of uber's choices")])
def test_a_first_combination_names_searched_levers_and_their_choices(given, says):
    with pytest.raises(SbclabError, match=says) as refused:
        tune.first_choices(LEVERS, given)
    assert "uber" in refused.value.hint


@pytest.mark.parametrize("node, unit", [(3072, 512), (6144, 512), (8192, 1024), (1536, 256)])
def test_one_reduce_a_node_is_a_container_no_node_holds_twice(node, unit):
    config = {"yarn-site": {"yarn.nodemanager.resource.memory-mb": str(node),
                            "yarn.scheduler.minimum-allocation-mb": str(unit)}}
    reduce = int(lever_registry.LEVERS["reduce-placement"].settings("one-a-node", config, 2)
                 ["mapred-site"]["mapreduce.reduce.memory.mb"])
    assert reduce % unit == 0 and 2 * reduce > node and reduce < node


@pytest.mark.parametrize("am, container, heap", [(None, 768, 576), ("1024", 512, 384), ("512", 512, 384)])
def test_the_halved_application_master_keeps_a_heap_inside_its_container(am, container, heap):
    config = {"mapred-site": {"yarn.app.mapreduce.am.resource.mb": am}} if am else {}
    got = lever_registry.LEVERS["am-memory"].settings("half", config, 2)["mapred-site"]
    assert got == {"yarn.app.mapreduce.am.resource.mb": str(container),
                   "yarn.app.mapreduce.am.command-opts": f"-Xmx{heap}m"}


def test_a_quick_jvm_for_the_masters_only_leaves_the_tasks_options_as_they_were():
    config = {"mapred-site": {"yarn.app.mapreduce.am.admin-command-opts": "--add-opens=java.base/java.lang=ALL-UNNAMED"}}
    lever = lever_registry.LEVERS["quick-jvm"]
    masters, everywhere = lever.settings("masters", config, 2), lever.settings("on", config, 2)
    am = "--add-opens=java.base/java.lang=ALL-UNNAMED " + lever_registry.QUICK_JVM
    assert masters == {"mapred-site": {"yarn.app.mapreduce.am.admin-command-opts": am},
                       "spark-defaults": {"spark.yarn.am.extraJavaOptions": lever_registry.QUICK_JVM}}
    assert everywhere["mapred-site"]["yarn.app.mapreduce.am.admin-command-opts"] == am
    assert everywhere["mapred-site"]["mapreduce.admin.map.child.java.opts"].endswith(lever_registry.QUICK_JVM)
    assert everywhere["spark-defaults"]["spark.executor.extraJavaOptions"] == lever_registry.QUICK_JVM


@pytest.mark.parametrize("node, unit", [(6144, 1024), (3072, 512), (8192, 1024), (7168, 1024), (1536, 256)])
def test_maps_two_a_node_are_containers_of_which_a_node_holds_two_and_not_three(node, unit):
    config = {"yarn-site": {"yarn.nodemanager.resource.memory-mb": str(node),
                            "yarn.scheduler.minimum-allocation-mb": str(unit)}}
    map_mb = int(lever_registry.LEVERS["map-placement"].settings("two-a-node", config, 2)
                 ["mapred-site"]["mapreduce.map.memory.mb"])
    assert map_mb % unit == 0 and 2 * map_mb <= node < 3 * map_mb


def _two_workload_trial(terasort: tuple[list[float], list[float]], wordcount: tuple[list[float], list[float]]):
    ids = ["a", "b", "c"]
    found = {side: {"terasort": tune.Measured(terasort[i], ids), "wordcount": tune.Measured(wordcount[i], ids)}
             for i, side in enumerate(("incumbent", "candidate"))}
    return tune._judge(0, {}, {}, found, 1.0)


def test_tuned_for_two_workloads_a_gain_on_average_too_noisy_to_show_is_not_accepted():
    # Trial 3 of examples/tuning-rpi4b-two-jobs: both workloads a little faster on their means, each
    # interval reaching 1, and so the geometric mean's.
    weak = _two_workload_trial(([109.4, 115.5, 107.1], [107.4, 99.0, 110.8]),
                               ([118.2, 114.2, 105.9], [108.5, 101.6, 100.6]))
    assert weak.speedup.value > 1 and weak.speedup.ci_low < 1 <= weak.speedup.ci_high
    assert (weak.speedup.value, weak.speedup.ci_low, weak.speedup.ci_high) == pytest.approx((1.07, 0.945, 1.21), abs=0.006)
    assert not weak.accepted and "no evidence of a gain" in weak.note
    clear = _two_workload_trial(([150.0, 152.0, 151.0], [120.0, 121.0, 119.0]),
                                ([140.0, 141.0, 139.0], [120.0, 119.0, 121.0]))
    assert clear.accepted and clear.speedup.ci_low > 1
    slower = _two_workload_trial(([100.0, 101.0, 99.0], [130.0, 131.0, 129.0]),
                                 ([100.0, 99.0, 101.0], [125.0, 126.0, 124.0]))
    assert not slower.accepted and slower.speedup.ci_high < 1
    assert slower.note.startswith("kept the incumbent: slower")
