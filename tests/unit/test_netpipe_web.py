"""NetPIPE and httperf output, read from recorded runs; the web test's stopping rule and documents."""

from pathlib import Path

import pytest

from sbclab.errors import SbclabError
from sbclab.monitor import phases
from sbclab.workloads import netpipe, storage, web

FIXTURES = Path(__file__).parent / "fixtures"


def test_netpipe_points_and_their_summary():
    points = netpipe.parse((FIXTURES / "netpipe" / "np-tcp.out").read_text())
    assert len(points) == 82 and points[0][0] == 1
    s = netpipe.summary(points)
    assert s["latency_us"] == pytest.approx(points[0][2] * 1e6, rel=1e-3)
    assert s["peak_mbit_s"] == pytest.approx(max(p[1] for p in points), abs=0.01)


def test_httperf_totals_rate_and_errors():
    step = web.parse_httperf((FIXTURES / "web" / "httperf-300.txt").read_text())
    assert step["requests"] == 900 and step["replies"] == 900 and step["errors"] == 0
    assert step["replies_per_s"] == pytest.approx(900 / step["seconds"], rel=0.01)
    assert web.sustained(step, 300) and step["error_kinds"] == {}
    overloaded = (FIXTURES / "web" / "httperf-300.txt").read_text().replace(
        "Errors: fd-unavail 0", "Errors: fd-unavail 12").replace("client-timo 0", "client-timo 3")
    assert web.parse_httperf(overloaded)["error_kinds"] == {"client-timo": 3, "fd-unavail": 12}


def test_a_step_with_errors_or_missing_replies_is_not_sustained():
    assert not web.sustained({"requests": 1000, "replies": 990, "errors": 0, "replies_per_s": 99.0}, 100)
    assert not web.sustained({"requests": 1000, "replies": 1000, "errors": 3, "replies_per_s": 100.0}, 100)
    assert not web.sustained({"requests": 1000, "replies": 1000, "errors": 0, "replies_per_s": 80.0}, 100)
    # Fast answers that are not the document (403, 404) do not count as serving it.
    assert not web.sustained({"requests": 1000, "replies": 1000, "errors": 0, "replies_per_s": 100.0,
                              "ok_replies": 0}, 100)


def test_httperf_output_without_totals_is_an_error_with_advice():
    with pytest.raises(SbclabError, match="log"):
        web.parse_httperf("httperf: connection refused\n")


def test_documents_have_their_exact_sizes():
    assert [len(web.document(kb).encode()) for kb in (1, 4, 100)] == [1024, 4096, 102400]


def test_nginx_listens_on_the_cluster_address_only(tmp_path):
    conf = web.nginx_conf(tmp_path, tmp_path / "docs", "10.213.0.11", 4, "root")
    assert "listen 10.213.0.11:8080;" in conf and "daemon off;" in conf


def test_nginx_keeps_its_temporary_files_in_its_own_folder(tmp_path):
    """A board's SSH user may not be root, and Debian's /var/lib/nginx is root's."""
    conf = web.nginx_conf(tmp_path, tmp_path / "docs", "10.213.0.11", 4, "pi")
    assert "/var/lib" not in conf and f"proxy_temp_path {tmp_path}/tmp/proxy;" in conf


def test_dd_sizes_and_summary_line():
    assert [storage.mebibytes(s) for s in ("100M", "16m", "1G", "512K")] == [100, 16, 1024, 1]
    line = "8388608 bytes (8.4 MB, 8.0 MiB) copied, 0.013904 s, 603 MB/s\n"
    assert storage.dd_mb_s(lambda argv: (0, "", line), ["if=x"]) == pytest.approx(603, rel=0.01)


def test_each_step_of_a_web_ramp_is_a_phase_asking_for_its_servers_cpu():
    result = {"server": "worker1", "peak_rate": 200,
              "steps": [{"rate": 100, "start": 10.0, "end": 20.0}, {"rate": 200, "start": 20.5, "end": 30.5}]}
    found = phases.web_steps(result)
    assert [(p["name"], p["start"], p["end"], p["cpu_of"]) for p in found] == [
        ("web 100 req/s", 10.0, 20.0, "worker1"), ("web 200 req/s", 20.5, 30.5, "worker1")]
    assert phases.web_steps({"steps": [{"rate": 100}]}) == []  # a run stored before steps were timed


def _step(rate: int, sustained: bool) -> dict:
    replies = rate * 10 if sustained else rate * 5
    return {"rate": rate, "requests": rate * 10, "replies": replies, "replies_per_s": replies / 10, "errors": 0,
            "ok_replies": replies}


def test_the_ramp_doubles_then_rises_by_a_tenth_or_halves_the_gap_to_the_first_failed_rate():
    assert web.next_rate([], 17, 1000) == 17
    assert web.next_rate([_step(17, True)], 17, 1000) == 34
    assert web.next_rate([_step(17, True), _step(34, True)], 17, 50) == 50  # max_rate itself, not past it
    assert web.next_rate([_step(17, True), _step(34, True), _step(50, True)], 17, 50) is None
    # 100 KB on a slow link: the first step already fails, so the peak is looked for below it.
    assert web.next_rate([_step(17, False)], 17, 1000) == 8
    ramp = [_step(100 * 2**i, True) for i in range(5)] + [_step(3200, False)]
    assert web.next_rate(ramp, 100, 5000) == 1760  # a tenth above 1600, not halfway (2400)
    near = ramp + [_step(1760, True), _step(1936, True), _step(2130, True), _step(2343, True), _step(2577, True),
                   _step(2835, True)]
    assert web.next_rate(near, 100, 5000) == 3017  # halfway to 3200 is nearer than a tenth up
    assert web.next_rate(near + [_step(3017, True)], 100, 5000) == 3108
    assert web.next_rate(near + [_step(3017, True), _step(3108, True)], 100, 5000) is None  # within 5 % of 3200


def _stall(rate: int) -> dict:
    # As seen: 22 connections made of 7,200, the rest out of file descriptors behind them.
    return {**_step(rate, False), "requests": 22, "replies": 21, "ok_replies": 21, "replies_per_s": 3.2,
            "errors": rate * 3 - 21}


def test_a_step_in_a_stall_after_an_overload_is_offered_again_and_three_in_a_row_end_the_search():
    ramp = [_step(100 * 2**i, True) for i in range(5)] + [_step(3200, False)]
    once = ramp + [_stall(1760)]
    assert web.stalled(once) == 1 and web.measured(once) == ramp
    assert web.next_rate(once, 100, 5000) == 1760  # the stalled rate again, once the server answers
    thrice = once + [_stall(1760), _stall(1760)]
    assert web.stalled(thrice) == 3 and web.next_rate(thrice, 100, 5000) is None
    # A first overloaded step that got nothing back is the search's first failure, not a stall.
    first = [_step(100, True), _stall(200)]
    assert web.stalled(first) == 0 and web.next_rate(first, 100, 5000) == 110
    # An overloaded step that answered much of its load failed on its rate: the peak is below it.
    short = {**_step(2400, False), "replies": 20000, "ok_replies": 20000, "replies_per_s": 2000, "errors": 4000}
    assert web.stalled(ramp + [short]) == 0 and web.next_rate(ramp + [short], 100, 5000) == 1760


def test_a_step_too_short_to_outlast_the_replies_drain_is_refused():
    with pytest.raises(SbclabError, match="too short"):
        web.Web().check_parameters({"doc_sizes_kb": [1], "step_seconds": web.SHORTEST_STEP_S - 1})
    web.Web().check_parameters({"doc_sizes_kb": [1], "step_seconds": web.SHORTEST_STEP_S})
