import pytest

from sbclab.cluster import dirty
from sbclab.errors import SbclabError

from .test_spec import build


@pytest.fixture
def bdi(tmp_path, monkeypatch):
    device = tmp_path / "7:3"
    device.mkdir()
    for name, value in (("max_bytes", "4996571136"), ("max_ratio_fine", "1000000"), ("strict_limit", "0")):
        (device / name).write_text(value)
    monkeypatch.setattr(dirty, "BDI", tmp_path)
    return device


def test_a_node_device_is_held_to_its_own_limit_and_given_back(bdi):
    assert dirty.supported("7:3") and not dirty.supported("7:9")
    previous = dirty.limit("7:3", 250_000_000)
    assert (bdi / "max_bytes").read_text() == "250000000" and (bdi / "strict_limit").read_text() == "1"
    assert dirty.limited_loop_devices() == {"7:3"}
    assert dirty.restore("7:3", previous)
    assert (bdi / "max_ratio_fine").read_text() == "1000000" and (bdi / "strict_limit").read_text() == "0"
    assert dirty.limited_loop_devices() == frozenset()


def test_a_device_gone_with_its_cluster_needs_nothing_restored(tmp_path, monkeypatch):
    monkeypatch.setattr(dirty, "BDI", tmp_path)
    assert dirty.restore("7:5", {"strict_limit": "0"})


def test_a_refused_limit_says_what_to_do_and_leaves_the_device_as_it_was(bdi):
    (bdi / "max_bytes").unlink()
    (bdi / "max_bytes").mkdir()  # writing a directory fails as a read-only sysfs file would
    with pytest.raises(SbclabError, match="dirty pages"):
        dirty.limit("7:3", 1)
    assert (bdi / "strict_limit").read_text() == "0"


def test_a_node_may_hold_dirty_what_its_board_may_scaled_like_its_disk():
    s = build(storage="microsd")  # 3 Pi 5 nodes of 8 GiB on a 2-core host: factor 1/6
    w = s.worker_nodes[0]
    assert w.dirty_bytes == pytest.approx(8 * 2**30 * 0.20 * s.scale.factor, rel=1e-5)
    # A buffer fills in as long as on the board: bytes and rate scaled by one factor.
    assert w.dirty_bytes / w.disk_write_bytes_s == pytest.approx(8 * 2**30 * 0.20 / 52.22e6, rel=1e-3)
