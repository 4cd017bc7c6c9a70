"""The packet filter that keeps a board's daemon ports to the cluster (stack/firewall.py)."""

from types import SimpleNamespace

import pytest

from sbclab.cluster import spec as cluster_spec
from sbclab.cluster.transport import Captured
from sbclab.errors import SbclabError
from sbclab.stack import firewall


def _spec(**update):
    built = cluster_spec.build(name="lab1", backend="emulated", board="rpi4b-4gb", storage="microsd-evo", workers=2,
                               cores=2)
    return built.model_copy(update=update)


def test_new_connections_to_the_daemons_ports_are_dropped_unless_from_the_cluster_or_this_host():
    text = firewall.rules(_spec(), ["10.213.0.12", "10.213.0.10", "10.213.0.1", "fd00::1"])
    assert text.startswith("table inet sbclab_lab1 {}\ndelete table inet sbclab_lab1\n")
    assert "ip saddr { 10.213.0.1, 10.213.0.10, 10.213.0.12 } accept" in text and "ip6 saddr { fd00::1 } accept" in text
    drop = next(line for line in text.splitlines() if "drop" in line)
    ports = drop.split("{")[1].split("}")[0]
    for port in ("8020", "9866", "9867", "8030", "8031", "8032", "8033", "13562", "7077", "32768-60999"):
        assert port in ports.strip().split(", "), port
    assert drop.endswith("ct state new drop") and "iif lo accept" in text


class _Boards:
    def __init__(self, fails=False):
        self.state = SimpleNamespace(record=lambda kind, **fields: {"kind": kind, **fields})
        self.ran, self.fails = [], fails

    def capture(self, node, argv, env=None, timeout_s=120):
        self.ran.append(node.name)
        return Captured(3 if self.fails else 0, b"no nft (Debian: apt install nftables)" if self.fails else b"", b"")


def test_every_board_gets_the_filter_unless_the_knob_leaves_the_ports_open(monkeypatch):
    monkeypatch.setattr(firewall, "address_towards", lambda address: "10.213.0.1")
    boards = _Boards()
    firewall.close_ports(boards, _spec(), print)
    assert boards.ran == ["master", "worker1", "worker2"]
    untouched = _Boards()
    firewall.close_ports(untouched, _spec(knobs=("open-ports",)), print)
    assert untouched.ran == []
    with pytest.raises(SbclabError, match="Restricting the daemons' ports on master failed: no nft"):
        firewall.close_ports(_Boards(fails=True), _spec(), print)
