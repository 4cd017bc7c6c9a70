"""7-Zip's benchmark, mbw and the pointer chase read from their real output (captured on a 2-core
EPYC host), their parameters checked, and the calibration check's verdicts on made-up runs."""

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sbclab import profiles, workloads
from sbclab.analysis import calibration_check
from sbclab.analysis.judgement import DIFFERS, HOLDS, INCONCLUSIVE
from sbclab.cluster import spec
from sbclab.errors import SbclabError
from sbclab.profiles.model import Memory, SevenZip
from sbclab.results.schema import Check, ClusterShape, NodeRecord, RunRecord, ScaleRecord, Validity
from sbclab.workloads import memory, sevenzip

FIXTURES = Path(__file__).parent / "fixtures" / "second_figures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- 7-Zip ---------------------------------------------------------------------------------------


def test_7zz_b_at_one_thread_gives_its_averages_and_total():
    found = sevenzip.parse(fixture("7zz-b-mmt1.txt"))
    assert found == {"compress_mips": 1946, "decompress_mips": 2745, "total_mips": 2345, "usage_pct": 60,
                     "dictionaries": [22, 23, 24, 25], "version": "26.02"}


def test_7zz_b_shortened_to_one_dictionary_and_one_second_a_pass():
    found = sevenzip.parse(fixture("7zz-b-mmt2-md22-timems1000.txt"))
    assert (found["compress_mips"], found["decompress_mips"], found["total_mips"]) == (8135, 6735, 7435)
    assert found["dictionaries"] == [22] and found["usage_pct"] == 154


def test_7zip_16_02_as_sbc_bench_ran_it_prints_no_speed_in_its_averages():
    """The layout of the 7-Zip that measured the boards' published figures (a Pi 5's, sbc-bench 8-NK)."""
    output = """7-Zip (a) [64] 16.02 : Copyright (c) 1999-2016 Igor Pavlov : 2016-05-21
22:       3265   100   3177   3177  |      39405   100   3365   3364
----------------------------------  | ------------------------------
Avr:             100   3256   3255  |              100   3355   3355
Tot:             100   3306   3305
"""
    found = sevenzip.parse(output)
    assert (found["compress_mips"], found["decompress_mips"], found["total_mips"], found["version"]) == \
        (3255, 3355, 3305, "16.02")


@pytest.mark.parametrize("output, said", [
    (fixture("7zz-b-out-of-memory.txt"), "Can't allocate required memory"),
    ("", "no output"),
    ("7zz: command not found\n", "command not found"),
    ("Avr:   1 2 3 | 4 5 6\n", "Avr:"),  # no total line: a run cut short
])
def test_7zz_output_without_a_rating_is_one_sentence(output, said):
    with pytest.raises(SbclabError) as err:
        sevenzip.parse(output)
    assert said in str(err.value) and "\n" not in err.value.message


def test_7zz_is_asked_for_threads_dictionary_and_pass_length():
    assert sevenzip.command(4, 23, 0.5) == ["7zz", "b", "-mmt4", "-md23", "-mtimems=500"]


def test_the_dictionary_shrinks_to_what_half_the_node_holds():
    # 889 MB at four threads with 32 MiB dictionaries (7zz's own report here): a 2 GiB node runs them all,
    # an emulated 450 MiB node only 4 MiB ones, an 8-thread node of 2 GiB 16 MiB ones.
    assert sevenzip.largest_dictionary(2 * 2**30, 4) == 25
    assert sevenzip.largest_dictionary(450 * 2**20, 4) == 22
    assert sevenzip.largest_dictionary(2 * 2**30, 8) == 24
    assert sevenzip.largest_dictionary(10 * 2**20, 1) == 22  # the smallest, and 7zz says if even that fails


def test_threads_all_is_the_boards_cores_and_nonsense_is_refused():
    assert sevenzip.thread_counts([1, "all"], 4) == [1, 4]
    assert sevenzip.thread_counts([1, "all"], 1) == [1]
    for bad in ([0], ["many"], [True], [1.5]):
        with pytest.raises(SbclabError):
            sevenzip.thread_counts(bad, 4)


@pytest.mark.parametrize("given", [{"seconds": 0}, {"seconds": "4"}, {"dictionary": 40}, {"dictionary": True},
                                   {"threads": ["x"]}])
def test_bad_7zip_parameters_are_refused_before_anything_runs(given):
    chosen = workloads.get("7zip")
    with pytest.raises(SbclabError):
        chosen.check_parameters(chosen.parameters(None, given))


def test_7zip_and_memory_are_node_benchmarks_named_by_the_micro_command():
    from sbclab.experiments import builtin
    from sbclab.cluster import packages
    assert builtin.MICRO["7zip"] == ("7zip",) and builtin.MICRO["memory"] == ("memory",)
    assert workloads.get("7zip").engines == ("node",) and not workloads.get("memory").needs_stack
    assert packages.package_of("7zz") == "7zip" and packages.package_of("mbw") == "mbw"


def test_a_missing_7zz_is_named_with_its_package(monkeypatch):
    from sbclab.cluster import packages
    monkeypatch.setattr(packages.shutil, "which", lambda program: None)
    with pytest.raises(SbclabError) as err:
        packages.check_here(workloads.get("7zip").programs)
    assert "7zz" in err.value.message and "apt-get install 7zip" in err.value.hint


# --- mbw and the pointer chase ---------------------------------------------------------------------


def test_mbw_averages_are_read_per_method():
    found = memory.parse_mbw(fixture("mbw-q-n5-t0-t2-256.txt"))
    assert found == {"MEMCPY": (0.02813, 9100.863), "MCBLOCK": (0.02563, 9987.594)}


@pytest.mark.parametrize("output", [fixture("mbw-out-of-memory.txt"), "", "0\tMethod: MEMCPY\tElapsed: x\n"])
def test_mbw_without_an_average_is_one_sentence(output):
    with pytest.raises(SbclabError) as err:
        memory.parse_mbw(output)
    assert "mbw printed no average" in err.value.message


def test_mbw_is_run_again_with_enough_copies_to_fill_the_time():
    """A first run of one copy is too short to time on an emulated node (its quota periods): the copies
    grow until a run lasts a second, then fill `seconds`."""
    asked = []

    def fake(argv):
        copies = int(argv[argv.index("-n") + 1])
        asked.append(copies)
        per_copy = 0.01  # 64 MiB in 10 ms: 6,400 MiB/s
        return 0, f"AVG\tMethod: MEMCPY\tElapsed: {per_copy:.5f}\tMiB: 64.00000\tCopy: 6400.000 MiB/s\n", ""
    mb_s, copies = memory.copy_bandwidth(fake, "memcpy", 64, seconds=5)
    assert asked == [1, 10, 100, 500] and copies == 500
    assert mb_s == pytest.approx(6400 * 2**20 / 1e6)


def test_the_pointer_chase_result_is_read_by_size():
    latency = memory.parse_latency(fixture("pointer-chase.txt"), list(memory.SIZES))
    assert list(latency) == list(memory.SIZES)
    assert latency["16k"] < latency["1m"] < latency["64m"]  # L1, then L2, then DRAM
    assert latency["64m"] == pytest.approx(180.111, abs=1e-3)


@pytest.mark.parametrize("output, said", [
    ("Error: Could not find or load main class org.sbclab.jobs.PointerChase\n", "printed no result"),
    ('SBCLAB_RESULT {"ns_16384": 1.5}\n', "no time for 64k"),
    ('SBCLAB_RESULT {"ns_16384": 1.5,}\n', "not JSON"),
])
def test_a_pointer_chase_that_failed_is_one_sentence(output, said):
    with pytest.raises(SbclabError) as err:
        memory.parse_latency(output, ["16k", "64k"])
    assert said in err.value.message


def test_the_chase_gets_a_heap_for_its_largest_buffer():
    argv = memory.chase_command("/usr/bin/java", "/x/jobs.jar", ["16k", "64m"], 2)
    assert argv[:3] == ["/usr/bin/java", "-XX:+UseSerialGC", "-XX:-UsePerfData"] and "-Xmx205m" in argv
    assert argv[-3:] == ["2", str(16 * 2**10), str(64 * 2**20)] and memory.MAIN_CLASS in argv


@pytest.mark.parametrize("given", [{"sizes": ["16q"]}, {"sizes": ["0k"]}, {"array_mib": 0}, {"array_mib": "64"},
                                   {"methods": ["dumb"]}, {"methods": []}, {"seconds": -1},
                                   {"seconds_per_size": "2"}])
def test_bad_memory_parameters_are_refused_before_anything_runs(given):
    chosen = workloads.get("memory")
    with pytest.raises(SbclabError):
        chosen.check_parameters(chosen.parameters(None, given))


def test_the_pointer_chase_is_in_the_jobs_module():
    source = Path(workloads.__file__).parents[1] / "java" / "jobs" / "src" / "main" / "java" / "org" / "sbclab" / \
        "jobs" / "PointerChase.java"
    assert f"class {memory.MAIN_CLASS.rsplit('.', 1)[1]}" in source.read_text()


# --- profiles ----------------------------------------------------------------------------------------


def test_published_figures_carry_their_source(shipped_profiles_only):
    """Every board with a 7-Zip or memory figure names where it comes from, as a source or a derivation."""
    with_figures = [b for b in profiles.boards().values() if b.seven_zip or b.memory]
    assert {"rpi5b", "rpi5b-16gb", "rock5b", "rpi4b", "rpi3b"} <= {b.name for b in with_figures}
    for board in with_figures:
        for field in ("seven_zip", "memory"):
            if getattr(board, field):
                assert field in board.sources or board.derivation(field), (board.name, field)
    # Unknown stays unknown: no public run at the cluster's 800 MHz, none of a Pi 500+.
    assert profiles.board("rpi1b").seven_zip is None and profiles.board("pi500plus").memory is None


def test_a_memory_profile_needs_a_figure_and_its_dram_point_is_the_largest_buffer():
    assert Memory(copy_mb_s="6,025 MB/s", latency_ns={"16k": "1.667 ns", "64m": 115.9}).dram_latency == ("64m", 115.9)
    with pytest.raises(ValueError):
        Memory()
    with pytest.raises(ValueError):
        Memory(latency_ns={"64 MiB": 100})


# --- the calibration check -------------------------------------------------------------------------


BOARD = profiles.board("rpi5b").model_copy(update={
    "seven_zip": SevenZip(single_mips=3000, multi_mips=10000, version="16.02"),
    "memory": Memory(copy_mb_s=5000, latency_ns={"16k": 1.7, "64m": 120})})
FACTOR = 0.2


def node_run(workload: str, result: dict, run_id: str, emulated: bool = True, valid: bool = True,
             board: str = "rpi5b") -> RunRecord:
    s = spec.build(backend="emulated", workers=1, cores=2, memory_bytes=24 * 2**30)
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    nodes = [NodeRecord(**{**n.model_dump(), "board": board}, yarn_memory_mb=0, yarn_vcores=0) for n in s.nodes]
    return RunRecord(
        run_id=run_id, experiment_id="e1", workload=workload, engine="node", parameters={"node": "worker1"},
        cluster=ClusterShape(name="lab", backend="emulated" if emulated else "ssh", emulated=emulated, shaped=emulated,
                             workers=1, board=board, storage="nvme", preset="stock", nodes=nodes),
        scale=ScaleRecord(**{**s.scale.model_dump(), "factor": FACTOR}), versions={}, configuration={},
        host={"cpus": 2}, command=["sbclab", "micro"], job_command=["7zz"], started_at=start,
        finished_at=start + timedelta(seconds=30), wall_time_s=30, exit_status=0,
        validity=Validity.of([Check(name="rated", passed=valid, detail="")]), result=result)


def sevenzip_runs(single_ratios: list[float], multi_ratio: float = 1.0) -> list[RunRecord]:
    return [node_run("7zip", {"total_mips": {"1": 3000 * FACTOR * r, "4": 10000 * FACTOR * multi_ratio}}, f"z{i}")
            for i, r in enumerate(single_ratios)]


def by_figure(rows) -> dict[str, calibration_check.Comparison]:
    return {c.figure: c for c in rows}


def test_an_emulated_node_at_its_target_holds():
    rows = by_figure(calibration_check.compare(sevenzip_runs([0.98, 1.0, 1.03]), {"rpi5b": BOARD}))
    single = rows["7-Zip MIPS, 1 thread"]
    assert single.verdict == HOLDS and single.target == pytest.approx(3000 * FACTOR)
    assert single.ratio.value == pytest.approx(1.0033, abs=1e-3) and "inside" in single.detail
    # All cores are the board's four: its published multi-thread figure.
    assert rows["7-Zip MIPS, all cores"].target == pytest.approx(10000 * FACTOR)


def test_a_node_sysbench_makes_too_slow_for_7zip_differs_and_says_by_how_much():
    """The host's cores gain more from sysbench's loop than from 7-Zip's: calibrated by sysbench, the node
    runs 7-Zip at about half the scaled board's speed."""
    single = by_figure(calibration_check.compare(sevenzip_runs([0.5, 0.52, 0.49]), {"rpi5b": BOARD}))[
        "7-Zip MIPS, 1 thread"]
    assert single.verdict == DIFFERS
    assert "runs at 0.50 of the scaled board's speed" in single.detail and "outside 1 ± 25 %" in single.detail


def test_a_node_too_fast_differs_too():
    single = by_figure(calibration_check.compare(sevenzip_runs([1.6, 1.7, 1.65]), {"rpi5b": BOARD}))[
        "7-Zip MIPS, 1 thread"]
    assert single.verdict == DIFFERS and "1.65x as fast" in single.detail


def test_a_wide_spread_is_inconclusive_and_says_how_many_runs_would_decide():
    single = by_figure(calibration_check.compare(sevenzip_runs([0.8, 1.0, 1.2]), {"rpi5b": BOARD}))[
        "7-Zip MIPS, 1 thread"]
    assert single.verdict == INCONCLUSIVE and "runs would decide it" in single.detail


def test_one_run_gives_no_interval_and_asks_for_three():
    single = by_figure(calibration_check.compare(sevenzip_runs([0.5]), {"rpi5b": BOARD}))["7-Zip MIPS, 1 thread"]
    assert single.verdict == INCONCLUSIVE and "--repetitions 3" in single.detail and "0.50" in single.detail


def test_memory_copy_and_latency_are_judged_as_speeds():
    """Twice the target's latency is half its speed; the latency is read at the board's largest buffer."""
    runs = [node_run("memory", {"copy_mb_s": {"memcpy": 5000 * FACTOR * r}, "latency_ns": {"16k": 9.0, "64m": 120 / FACTOR * 2 * r}},
                     f"m{i}") for i, r in enumerate((0.99, 1.0, 1.01))]
    rows = by_figure(calibration_check.compare(runs, {"rpi5b": BOARD}))
    assert rows["memcpy MB/s, 1 thread"].verdict == HOLDS
    latency = rows["load latency, largest buffer"]
    assert latency.target == pytest.approx(120 / FACTOR) and latency.unit == "ns at 64m"
    assert latency.verdict == DIFFERS and latency.ratio.value == pytest.approx(0.5, abs=0.01)


def test_sysbench_on_the_same_nodes_is_judged_beside_them():
    events = BOARD.sysbench_events(1) * FACTOR
    runs = [node_run("sysbench-cpu", {"events_per_s": {"1": events * r}}, f"s{i}") for i, r in enumerate((0.97, 1.0, 1.02))]
    [row] = calibration_check.compare(runs, {"rpi5b": BOARD})
    assert row.figure.startswith("sysbench") and row.verdict == HOLDS


def test_runs_not_emulated_invalid_or_of_boards_without_figures_are_left_out():
    runs = [node_run("7zip", {"total_mips": {"1": 600}}, "real", emulated=False),
            node_run("7zip", {"total_mips": {"1": 600}}, "bad", valid=False),
            node_run("7zip", {"total_mips": {"1": 600}}, "b1", board="rpi1b")]
    assert calibration_check.compare(runs) == []
    assert calibration_check.missing(runs) == ["rpi1b has no published 7-Zip figure ('sbclab profiles show rpi1b' "
                                               "says why)"]


def test_a_run_lacking_the_figure_compares_nothing():
    runs = [node_run("memory", {"copy_mb_s": {"block": 900}}, "m"), node_run("7zip", {"total_mips": {"2": 5}}, "z")]
    assert calibration_check.compare(runs, {"rpi5b": BOARD}) == []


def test_calibrate_check_reads_a_results_directory(tmp_path):
    from click.testing import CliRunner

    from sbclab.cli import main_group
    from sbclab.results.store import ResultsStore
    store = ResultsStore(tmp_path)
    for run in sevenzip_runs([0.5, 0.52, 0.49]):
        store.write(run)
    done = CliRunner().invoke(main_group, ["calibrate", "--check", "--results", str(tmp_path)], terminal_width=250)
    assert done.exit_code == 0, done.output
    assert "Calibration check" in done.output and "7-Zip MIPS, 1 thread" in done.output
    empty = CliRunner().invoke(main_group, ["calibrate", "--check", "--results", str(tmp_path / "none")])
    assert isinstance(empty.exception, SbclabError) and "There is no results directory" in empty.exception.message
