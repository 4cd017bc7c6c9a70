import io

import pytest

from sbclab.data import airline
from sbclab.errors import SbclabError

BLOCK = 256 * 1024


def generated(seed=0, size=600_000, first_variant=0, block=BLOCK) -> bytes:
    out = io.BytesIO()
    airline.AirlineGenerator(seed=seed, block_bytes=block).write(out, size, first_variant)
    return out.getvalue()


def test_rows_have_the_29_asa_columns_and_no_white_space():
    data = generated()
    lines = data.decode("ascii").splitlines()
    assert len(airline.COLUMNS) == 29 and airline.HEADER.startswith("Year,Month,DayofMonth,DayOfWeek")
    for line in lines:
        fields = line.split(",")
        assert len(fields) == 29
        assert not any(ch.isspace() for ch in line)
        year, month, day, weekday = map(int, fields[:4])
        assert 1987 <= year <= 2008 and 1 <= month <= 12 and 1 <= day <= 31 and 1 <= weekday <= 7
        assert 1000 <= int(fields[9]) <= 9999  # FlightNum
        assert fields[21] in ("0", "1") and fields[23] in ("0", "1")  # Cancelled, Diverted


def test_values_come_from_real_flights():
    lines = generated().decode().splitlines()
    carriers = {line.split(",")[8] for line in lines}
    airports = {line.split(",")[16] for line in lines} | {line.split(",")[17] for line in lines}
    assert carriers <= {"9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL", "HA", "MQ", "OO", "UA", "US", "VX", "WN", "YV"}
    assert {"JFK", "LGA", "EWR"} <= airports and len(airports) > 20


def test_same_seed_same_bytes_other_seed_other_bytes():
    assert generated(seed=1) == generated(seed=1)
    assert generated(seed=1) != generated(seed=2)


def test_size_is_whole_lines_up_to_the_asked_bytes():
    out = io.BytesIO()
    written = airline.AirlineGenerator(block_bytes=BLOCK).write(out, 700_001)
    data = out.getvalue()
    assert written.bytes == len(data) <= 700_001 and written.bytes > 700_001 - 200
    assert data.endswith(b"\n") and written.lines == data.count(b"\n")


def test_copies_of_the_block_do_not_repeat_lines():
    data = generated(size=5 * BLOCK)
    lines = data.splitlines()
    assert len(set(lines)) > 0.99 * len(lines)


def test_parallel_parts_do_not_repeat_each_other():
    part = 2 * BLOCK
    a = generated(size=part, first_variant=airline.first_variant(0, part, BLOCK))
    b = generated(size=part, first_variant=airline.first_variant(1, part, BLOCK))
    assert not set(a.splitlines()) & set(b.splitlines())


def test_a_real_file_is_appended_to_itself_in_whole_lines(tmp_path):
    source = tmp_path / "2006.csv"
    source.write_bytes(b"a,1\nbb,2\nccc,3")  # no final newline
    out = io.BytesIO()
    written = airline.append_source(source, out, 30)
    assert out.getvalue() == b"a,1\nbb,2\nccc,3\na,1\nbb,2\nccc,3\n"
    assert written.lines == 6 and written.bytes == len(out.getvalue())


def test_an_empty_source_is_refused(tmp_path):
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(SbclabError, match="non-empty"):
        airline.append_source(tmp_path / "empty.csv", io.BytesIO(), 100)

