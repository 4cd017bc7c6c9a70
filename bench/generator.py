"""Airline data generator against the seeds' method, on the same disk.

The seeds made each input by appending 2006.csv to itself until the size was reached. The baseline
here does exactly that with `cat` (an existing airline file, in the page cache as a file being
appended repeatedly would be); the generator writes the same number of bytes of fresh rows.
Both end with fsync, so the figures are what reaches the disk. Runs alternate; medians are compared.
Target: generator throughput >= 0.8 x appending.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from sbclab.data.airline import AirlineGenerator
from sbclab.units import parse_size

TARGET = 0.8


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def appending(source: Path, target: Path, size: int) -> float:
    start = time.monotonic()
    copies, rest = divmod(size, source.stat().st_size)
    with open(target, "wb") as out:
        for _ in range(copies):
            subprocess.run(["cat", str(source)], stdout=out, check=True)
        if rest:
            subprocess.run(["head", "-c", str(rest), str(source)], stdout=out, check=True)
    _fsync(target)
    return time.monotonic() - start


def generating(generator: AirlineGenerator, target: Path, size: int) -> float:
    start = time.monotonic()
    with open(target, "wb") as out:
        generator.write(out, size)
        out.flush()
        os.fsync(out.fileno())
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="2GiB", help="bytes written per trial")
    parser.add_argument("--source-size", default="678MB", help="size of the file appended (2006.csv was 678 MB)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--dir", default=None, help="directory on the disk to test (default: a temporary one)")
    args = parser.parse_args()
    size, source_size = parse_size(args.size), parse_size(args.source_size)
    work = Path(tempfile.mkdtemp(prefix="sbclab-gen-", dir=args.dir))
    try:
        generator = AirlineGenerator(seed=1)
        built = time.monotonic()
        generator.block()
        print(f"block of {len(generator.block()) / 1e6:.1f} MB rendered in {time.monotonic() - built:.1f} s (once per process)")
        source = work / "2006-like.csv"
        with open(source, "wb") as out:
            generator.write(out, source_size)
        target = work / "out.csv"
        appended, generated = [], []
        for trial in range(1, args.trials + 1):
            target.unlink(missing_ok=True)
            appended.append(size / appending(source, target, size))
            target.unlink()
            generated.append(size / generating(generator, target, size))
            print(f"trial {trial}: appending {appended[-1] / 1e6:.0f} MB/s, generating {generated[-1] / 1e6:.0f} MB/s")
        ratio = statistics.median(generated) / statistics.median(appended)
        print(f"median appending {statistics.median(appended) / 1e6:.0f} MB/s, generating "
              f"{statistics.median(generated) / 1e6:.0f} MB/s on {work}")
        print(f"generator / appending throughput = {ratio:.2f} (target >= {TARGET})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
