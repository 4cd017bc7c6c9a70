"""HPL input arithmetic (Baun 2016, Eq. 2) and the hpcc output parser on a recorded run."""

from pathlib import Path

import pytest

from sbclab.errors import SbclabError
from sbclab.monitor import measure, phases
from sbclab.workloads import hpl

OUTPUT = Path(__file__).parent / "fixtures" / "hpl" / "hpccoutf.txt"


def test_bauns_worked_example():
    # Four nodes of 0.496 GB, R = 0.8, NB = 32 -> N = 13,024 (Baun 2016, HPL section).
    assert hpl.problem_size(0.496, 4, 0.8, 32) == 13_024


def test_n_is_a_multiple_of_nb():
    for nb in (16, 32, 64, 128, 256):
        assert hpl.problem_size(7.5, 3, 0.8, nb) % nb == 0


@pytest.mark.parametrize("ranks, grid", [(1, (1, 1)), (4, (2, 2)), (8, (2, 4)), (6, (2, 3)), (16, (4, 4)), (7, (1, 7))])
def test_the_grid_is_near_square_with_q_at_least_p(ranks, grid):
    assert hpl.grid(ranks) == grid


def test_rpeak_as_baun_counts_it():
    # Eight Model B nodes at 800 MHz, one addition per cycle: 6.4 Gflops.
    assert hpl.rpeak_gflops(0.8, 1, 1, 8) == pytest.approx(6.4)


def test_a_problem_that_does_not_fit_is_refused_with_a_smaller_n():
    with pytest.raises(SbclabError, match="smaller N"):
        hpl.check_fits(40_000, 2**30, 2)
    hpl.check_fits(10_000, 2**30, 2)


def test_a_fraction_outside_zero_to_one_is_refused():
    with pytest.raises(SbclabError, match="between 0 and 1"):
        hpl.problem_size(1.0, 1, 1.5)


def test_the_input_file_carries_n_nb_and_the_grid():
    lines = hpl.input_file(13024, 32, 2, 4).splitlines()
    assert lines[5].split()[0] == "13024" and lines[7].split()[0] == "32"
    assert lines[10].split()[0] == "2" and lines[11].split()[0] == "4"
    assert lines[31].startswith("#####")  # hpcc ignores line 32 and reads PTRANS after it


def test_the_parser_reads_gflops_and_the_residual_check():
    result = hpl.parse_output(OUTPUT.read_text())
    assert (result.n, result.nb, result.p, result.q) == (1000, 80, 1, 1)
    assert result.gflops == pytest.approx(1.970) and result.seconds == pytest.approx(0.34)
    assert result.passed and result.residual == pytest.approx(0.0071960)


def test_a_failed_residual_check_is_read_as_failed():
    text = OUTPUT.read_text().replace("...... PASSED", "...... FAILED")
    assert not hpl.parse_output(text).passed


def test_output_without_a_result_row_says_where_to_look():
    with pytest.raises(SbclabError, match="hpccoutf.txt"):
        hpl.parse_output("Begin of HPL section\nEnd of HPL section\n")


def test_hpccs_tests_are_phases_and_hpls_asks_for_its_own_energy():
    """Each test runs from the time hpcc printed before it began to the time printed before it ended."""
    found = {p["name"]: p for p in phases.hpcc_phases(OUTPUT)}
    assert {"hpcc PTRANS", "hpcc StarSTREAM", "hpcc LatencyBandwidth", "hpcc HPL"} <= set(found)
    assert found["hpcc HPL"]["energy"] and not found["hpcc PTRANS"].get("energy")
    assert found["hpcc LatencyBandwidth"]["end"] <= found["hpcc HPL"]["start"] <= found["hpcc HPL"]["end"]


def test_hpls_power_is_its_phases_not_the_whole_suites():
    """Two nodes at 5 W, then 9 W while HPL ran: HPL's mean power is 18 W, the run's less."""
    hpl_phase = {"name": "hpcc HPL", "start": 110.0, "end": 120.0, "energy": True}
    intervals = {n: [(100.0, 110.0, 5.0), (110.0, 120.0, 9.0)] for n in ("worker1", "worker2")}
    assert measure._phase_energy(hpl_phase, intervals) == []
    assert hpl_phase["avg_w"] == 18.0 and hpl_phase["energy_j"] == 180.0
    short = {"name": "hpcc HPL", "start": 110.0, "end": 110.0, "energy": True}
    assert "less than a second" in measure._phase_energy(short, intervals)[0] and "avg_w" not in short
