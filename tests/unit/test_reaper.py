"""A recorded process is known by its pid and its start, through a step of the host's clock."""

import subprocess
import sys

import psutil
import pytest

from sbclab.cluster import reaper


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_recorded_process_is_still_found_after_the_clock_steps(child, monkeypatch):
    """A time sync moves the boot time the kernel reports by whole seconds: a daemon recorded before it
    must not look gone after it (its cluster would be repaired twice over, or removed as abandoned)."""
    entry = {"pid": child.pid, "create_time": reaper.started(child.pid)}
    stepped = psutil.boot_time() + 1
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: stepped)
    assert [p.pid for p in reaper.recorded([entry])] == [child.pid]


def test_a_pid_taken_by_a_later_process_is_not_the_recorded_one(child):
    assert reaper.recorded([{"pid": child.pid, "create_time": reaper.started(child.pid) - 5}]) == []


def test_a_record_an_earlier_sbclab_wrote_in_seconds_since_the_epoch_is_still_found(child):
    entry = {"pid": child.pid, "create_time": psutil.Process(child.pid).create_time()}
    assert [p.pid for p in reaper.recorded([entry])] == [child.pid]


def test_a_process_that_has_gone_started_at_zero(child):
    child.kill()
    child.wait()
    assert reaper.started(child.pid) == 0.0 and reaper.recorded([{"pid": child.pid, "create_time": 0.0}]) == []
