"""Per-process delay accounting from the kernel's taskstats interface (generic netlink).

An emulated node is a cgroup, not a machine: the host's /proc/stat iowait is every node's at once.
What a node's own iowait is made of — its threads blocked on block I/O — the kernel keeps per
thread group when delay accounting is on (`kernel.task_delayacct=1`), and hands out over netlink
summed over all threads. Standard library only, like the sampler that uses it.
"""

import os
import socket
import struct

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_CMD_ATTR_TGID = 2
TASKSTATS_TYPE_AGGR_TGID = 5
TASKSTATS_TYPE_STATS = 3
NLMSG_ERROR = 2
NLM_F_REQUEST = 1

# struct taskstats (linux/taskstats.h): the fields kept, at their offsets since version 1.
_FIELDS = {"cpu_delay_ns": 24, "blkio_delay_ns": 40, "swapin_delay_ns": 56, "cpu_run_real_ns": 64}


def _attr(kind: int, payload: bytes) -> bytes:
    raw = struct.pack("HH", 4 + len(payload), kind) + payload
    return raw + b"\0" * (-len(raw) % 4)


def _attrs(data: bytes):
    at = 0
    while at + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, at)
        if length < 4:
            return
        yield kind & 0x3FFF, data[at + 4:at + length]
        at += (length + 3) & ~3


class Taskstats:
    """One netlink socket, reused for every query of a sampling run."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.bind((0, 0))
        self.seq = 0
        self.family = self._family_id()

    def close(self) -> None:
        self.sock.close()

    def _request(self, family: int, command: int, attrs: bytes) -> bytes:
        self.seq += 1
        body = struct.pack("BBH", command, 1, 0) + attrs
        self.sock.send(struct.pack("IHHII", 16 + len(body), family, NLM_F_REQUEST, self.seq, os.getpid()) + body)
        reply = self.sock.recv(65536)
        length, kind = struct.unpack_from("IH", reply)
        if kind == NLMSG_ERROR:
            raise OSError(-struct.unpack_from("i", reply, 16)[0], "taskstats request refused")
        return reply[20:length]

    def _family_id(self) -> int:
        for kind, payload in _attrs(self._request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                                                  _attr(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"))):
            if kind == CTRL_ATTR_FAMILY_ID:
                return struct.unpack("H", payload[:2])[0]
        raise OSError("no TASKSTATS family in the kernel's generic netlink")

    def thread_group(self, tgid: int) -> dict[str, int] | None:
        """Delays summed over a process's threads (ns); None when it has exited."""
        try:
            reply = self._request(self.family, TASKSTATS_CMD_GET,
                                  _attr(TASKSTATS_CMD_ATTR_TGID, struct.pack("I", tgid)))
        except OSError:
            return None
        for kind, payload in _attrs(reply):
            if kind == TASKSTATS_TYPE_AGGR_TGID:
                for inner, stats in _attrs(payload):
                    if inner == TASKSTATS_TYPE_STATS:
                        return parse_stats(stats)
        return None


def parse_stats(stats: bytes) -> dict[str, int]:
    return {name: struct.unpack_from("Q", stats, offset)[0] for name, offset in _FIELDS.items()}


DELAYACCT = "/proc/sys/kernel/task_delayacct"


def delay_accounting_on() -> bool:
    try:
        with open(DELAYACCT) as f:
            return f.read().strip() == "1"
    except OSError:
        return False
