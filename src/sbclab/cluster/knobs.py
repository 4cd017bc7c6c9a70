"""The Raspberry Pi knobs the seeds turned, as data: what each changes, where, and what it cost or
gained them. `sbclab knobs` lists them; none is applied unless asked for by name.

Applying them to boards comes with deployment over SSH; until then this catalogue is what a user
reads before changing a board by hand, and the changes doctor checks for (PCIe generation, fstrim).
"""

from dataclasses import dataclass

from ..errors import SbclabError


@dataclass(frozen=True)
class Knob:
    name: str
    what: str
    change: str          # the exact line, property or command
    where: str           # the file or moment it goes
    reboot: bool
    source: str
    risk: str = ""


KNOBS = (
    Knob("pcie-gen3", "run the Pi 5's PCIe x1 link at gen 3 (8 GT/s) instead of gen 2",
         "dtparam=nvme\ndtparam=pciex1_gen=3", "/boot/firmware/config.txt", True,
         "Lee & Park 2026, PCIe 2.0 vs 3.0 (Table 22: 446.5 vs 869.47 MB/s sequential read; TeraSort 1.01x)",
         "gen 3 is not certified by the Raspberry Pi Foundation; a drive that errors at gen 3 needs gen 2 back"),
    Knob("overclock", "raise the Pi 5's ARM clock (the rpi5b-oc profile: 3.0 GHz)",
         "arm_freq=3000\nover_voltage_delta=50000", "/boot/firmware/config.txt", True,
         "Lee & Park 2026, CPU overclocking (sysbench 1.25x, Table 23)",
         "four of the seed's nine boards booted at 3.0 GHz; needs a fan (72.9 C average under stress) and the 27 W supply"),
    Knob("fstrim", "trim the data directory's SSD before each run, so write speed does not drift",
         "fstrim -v DATA_DIR", "before every run", False,
         "Lee & Park 2026 and Lee, Oh & Park 2021 (fstrim before/after to measure intermediate data)"),
    Knob("crc-off", "skip HDFS checksums (the 2021 seed saved 7 % CPU in TeraSort 2 GB: 52.5 % vs 59.5 %)",
         "dfs.checksum.type=NULL", "hdfs-site.xml", False,
         "Lee, Oh & Park 2021, Sec. VII-B and Fig. 10",
         "HDFS no longer detects corrupted blocks; for measurements, not for data you keep"),
    Knob("master-separate", "keep the master's daemons on a board of their own, not on a worker",
         "inventory: a master host that is not also a worker", "the inventory", False,
         "Lee, Oh & Park 2021 (29 % less I/O traffic, 42.2 % less memory on the workers)"),
)


def get(name: str) -> Knob:
    for knob in KNOBS:
        if knob.name == name:
            return knob
    raise SbclabError(f"There is no knob '{name}'.", f"Knobs: {', '.join(k.name for k in KNOBS)}.")
