"""From a cluster's shape as a user gives it to a spec this host can run."""

from .. import profiles
from . import calibration, spec as cluster_spec
from .backends import default_backend


def spec_for(*, name: str, workers: int, board: str, storage: str, preset: str, backend: str | None,
             subnet: str, disk_size: int | None = None, scale_factor: float | None = None, data_bytes: int = 0,
             say=lambda message: None) -> cluster_spec.ClusterSpec:
    if backend is None:
        backend = default_backend()
        if backend == "processes":
            say("this host cannot shape nodes (not root, or no cgroup controllers): using the processes backend; "
                "results are unshaped.")
    profiles.check_pair(board, profiles.resolve_storage(storage))  # a wrong name is refused before anything is measured
    # Shaping an emulated node to a board needs this host's figures: measured once, then cached.
    host = calibration.current(progress=say) if backend == "emulated" else None
    # Input, sorted output and intermediate data of a TeraSort, spread over the workers, with room to spare.
    wanted = max(cluster_spec.DEFAULT_DISK_BYTES, int(data_bytes * 8 / workers) + 2**30)
    return cluster_spec.build(name=name, backend=backend, preset=preset, board=board, storage=storage, workers=workers,
                              subnet=subnet, disk_bytes=disk_size or wanted, calibration=host, scale_factor=scale_factor)
