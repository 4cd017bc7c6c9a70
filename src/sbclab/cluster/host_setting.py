"""A kernel setting of the whole host that emulated clusters need, held while any of them runs.

Delay accounting (`kernel.task_delayacct`) is one switch for the host, while clusters come and go on
their own: two `sbclab` homes on one host, or the test workers' clusters side by side. A cluster that
restored the switch when it went down turned it off under another that was still sampling (its nodes'
iowait went blank mid-run), and a cluster that found it on already never turned it back.

So each cluster that needs the setting holds it through a registry in /run (gone at a reboot, as the
setting is): the first to change it writes the value it found, every holder a file naming its cluster's
folder, and the last to let go (a holder whose folder is gone was removed by force) puts back what was
found. A file lock keeps two clusters from deciding at once.
"""

import fcntl
import hashlib
from contextlib import contextmanager
from pathlib import Path

REGISTRY = Path("/run/sbclab-host-settings")


class HostSetting:
    def __init__(self, path: Path, wanted: str, registry: Path = REGISTRY):
        self.path = path
        self.wanted = wanted
        self.folder = registry / path.name

    @contextmanager
    def _locked(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder.parent / f"{self.path.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _holder(self, cluster_root: Path) -> Path:
        return self.folder / hashlib.sha256(str(cluster_root).encode()).hexdigest()[:16]

    def hold(self, cluster_root: Path) -> bool:
        """Set it for this cluster (its state folder) if it is not set already; False where the
        kernel has no such setting (an older kernel)."""
        if not self.path.exists():
            return False
        # Read under the lock: a last holder letting go in between would otherwise put the value back
        # after this cluster saw it set.
        with self._locked():
            current = self.path.read_text().strip()
            found = self.folder / "found"
            if current != self.wanted:
                if not found.exists():
                    found.write_text(current + "\n")
                self.path.write_text(self.wanted + "\n")
            self._holder(cluster_root).write_text(str(cluster_root) + "\n")
        return True

    def release(self, cluster_root: Path) -> bool:
        """This cluster lets go; the last holder puts back the value found. False if it could not."""
        with self._locked():
            self._holder(cluster_root).unlink(missing_ok=True)
            for holder in self.folder.iterdir():
                if holder.name != "found" and not Path(holder.read_text().strip()).exists():
                    holder.unlink(missing_ok=True)  # its cluster's folder was removed without it
            if any(h.name != "found" for h in self.folder.iterdir()):
                return True
            found = self.folder / "found"
            if found.exists():
                try:
                    self.path.write_text(found.read_text())
                except OSError:
                    return False
                found.unlink()
            return True
