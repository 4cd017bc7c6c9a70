"""A failed or interrupted bring-up removes everything it had created."""

import os
import signal
import subprocess
import sys
import time

import pytest

from sbclab import paths
from sbclab.cluster import nodes
from sbclab.cluster.state import ClusterState
from sbclab.errors import SbclabError
from sbclab.stack import lifecycle

from .conftest import NOTHING, leaked, mechanics_spec, remove_if_left


def test_daemons_not_ready_in_time_is_one_sentence_and_no_leftovers(clean_host):
    """Daemons that miss the start-up deadline give one sentence naming the log to read, and nothing is left."""
    remove_if_left("ifault")
    with pytest.raises(SbclabError) as err:
        lifecycle.up(mechanics_spec("ifault"), timeout_s=0.5)
    message = str(err.value)
    assert "not ready within" in message and "Read " in message and ".log" in message
    assert "ifault" not in ClusterState.names()


def test_a_cluster_name_in_use_is_refused(clean_host):
    """A second cluster under a name in use is refused before anything is created."""
    remove_if_left("idup")
    ClusterState.create(mechanics_spec("idup"))
    try:
        with pytest.raises(SbclabError) as err:
            lifecycle.up(mechanics_spec("idup"))
        assert "down --force" in str(err.value)
    finally:
        assert nodes.down("idup", force=True) == []


def test_ctrl_c_during_cluster_up_leaves_nothing(clean_host, tmp_path):
    """Ctrl-C while `cluster up` starts the daemons exits 130, says so, and removes all it made."""
    remove_if_left("intr")
    # A shell runs a background job with SIGINT ignored, and Python keeps it ignored: restore what a
    # terminal gives, or the test would depend on how the test run itself was started.
    up = subprocess.Popen([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "up", "--name", "intr",
                           "--disk-size", "2GiB"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        state_file = paths.cluster_dir("intr") / "state.json"
        # Interrupt once daemons are starting: the most resources exist then.
        while time.monotonic() < deadline:
            if state_file.exists() and '"kind": "process"' in state_file.read_text():
                break
            assert up.poll() is None, up.stdout.read()
            time.sleep(0.2)
        else:
            pytest.fail("cluster up never started a daemon")
        os.kill(up.pid, signal.SIGINT)
        output, _ = up.communicate(timeout=120)
    finally:
        if up.poll() is None:
            up.kill()
        remove_if_left("intr")
    assert up.returncode == 130, output
    assert "interrupted" in output
    assert leaked() == NOTHING


def test_a_cluster_whose_maker_was_killed_is_found_and_removed_as_abandoned(clean_host):
    """A cluster whose `cluster up` was killed mid-way is found abandoned and `cluster down --abandoned` removes it
    whole."""
    remove_if_left("ikill")
    up = subprocess.Popen([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "up", "--name", "ikill",
                           "--disk-size", "2GiB"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        state_file = paths.cluster_dir("ikill") / "state.json"
        while not (state_file.exists() and '"kind": "process"' in state_file.read_text()):
            assert time.monotonic() < deadline and up.poll() is None, "cluster up never started a daemon"
            time.sleep(0.2)
        assert "ikill" not in nodes.abandoned(), "its maker is still at work"
        up.kill()  # no cleanup can run: what a CI time limit or the OOM killer does
        up.wait(timeout=30)
        assert "ikill" in nodes.abandoned()
        done = subprocess.run([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "down", "--abandoned"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "cluster 'ikill' removed" in done.stderr + done.stdout
    finally:
        if up.poll() is None:
            up.kill()
        remove_if_left("ikill")
    assert leaked() == NOTHING
