"""A node's dirty-page limit on its own disk, through the kernel's per-device write-back limits.

A board holds as much written-but-unflushed data as its kernel allows (vm.dirty_ratio, 20 % of
its memory by default) and writes at memory speed until then; past it, a writer waits for the
medium. That is where a slow card loses to NVMe only once a job's data outgrows the board's
memory. An emulated node's limit would otherwise be this host's, shared by every node (under
cgroup v1 the limits are host-wide), so the medium would never be felt at the scaled-down sizes.
Each node's loop device therefore gets its own limit (`max_bytes`) and is throttled against it
alone (`strict_limit`), even while the host as a whole is far from its own.

The kernel turns `max_bytes` into a share of the host's dirty limit at the moment it is written,
so the limit drifts a little as the host's free memory does.
"""

from pathlib import Path

from ..errors import SbclabError

BDI = Path("/sys/class/bdi")
# Linux's vm.dirty_ratio default: the share of a board's memory that may be dirty.
BOARD_DIRTY_RATIO = 0.20


def supported(major_minor: str) -> bool:
    """Kernels before 6.2 have no per-device byte limit."""
    return (BDI / major_minor / "max_bytes").exists() and (BDI / major_minor / "strict_limit").exists()


def limit(major_minor: str, dirty_bytes: int) -> dict[str, str]:
    """Cap the device's dirty pages at dirty_bytes; returns what to restore, since a loop device
    outlives the cluster and its next user would inherit the cap."""
    device = BDI / major_minor
    previous = {name: (device / name).read_text().strip() for name in ("max_ratio_fine", "strict_limit")}
    try:
        (device / "max_bytes").write_text(str(dirty_bytes))
        (device / "strict_limit").write_text("1")
    except OSError as err:
        restore(major_minor, previous)
        raise SbclabError(f"Cannot limit the dirty pages of device {major_minor}: {err.strerror}.",
                          "Run as root, or use --backend processes.") from err
    return previous


def restore(major_minor: str, previous: dict[str, str]) -> bool:
    device = BDI / major_minor
    if not device.exists():
        return True
    ok = True
    for name, value in previous.items():
        try:
            (device / name).write_text(value)
        except OSError:
            ok = False
    return ok


def limited_loop_devices() -> frozenset[str]:
    """Loop devices held to their own dirty limit now: what a cluster would leave if not restored."""
    found = set()
    for device in BDI.glob("7:*"):
        try:
            if (device / "strict_limit").read_text().strip() == "1":
                found.add(device.name)
        except OSError:
            continue
    return frozenset(found)
