"""The processes backend: no root needed, no shaping; the same stack on loopback addresses."""

from sbclab.cluster import nodes
from sbclab.stack import config, lifecycle

from .conftest import NOTHING, leaked, host_addresses, listening_sockets, reachable, remove_if_left, small_spec


def test_processes_cluster_serves_on_its_own_loopback_addresses(clean_host):
    """The processes backend (no root needed) serves each node on its own 127.0.x address and leaves nothing when
    down."""
    remove_if_left("iproc")
    cluster = lifecycle.up(small_spec("iproc", backend="processes"))
    try:
        report = lifecycle.status(cluster)
        assert len(report["datanodes"]) == 2 and len(report["yarn_nodes"]) == 2
        shuffle_ports = {config.port(cluster.spec, n, "shuffle") for n in cluster.spec.nodes}
        for node, sockets in listening_sockets(cluster).items():
            assert sockets, node
            for sock in sockets:
                ip, port = sock.rsplit(":", 1)
                # Hadoop's ShuffleHandler has no bind-address setting; everything else stays on loopback.
                assert ip == "127.0.0.1" or int(port) in shuffle_ports, f"{node}: {sock}"
        for address in host_addresses():
            if not address.startswith("127."):
                assert not reachable(address, config.PORTS["namenode_http"]), address
        assert reachable("127.0.0.1", config.PORTS["namenode_http"])
    finally:
        assert nodes.down("iproc", force=True) == []
    assert leaked() == NOTHING
