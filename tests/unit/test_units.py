import pytest

from sbclab.errors import SbclabError
from sbclab.units import format_size, parse_size


@pytest.mark.parametrize("text, expected", [
    ("256MB", 256 * 10**6),
    ("1GB", 10**9),
    ("2GiB", 2 * 2**30),
    ("512 MiB", 512 * 2**20),
    ("1.5GB", 1_500_000_000),
    ("1048576", 1048576),
    ("10kb", 10_000),
])
def test_sizes_users_write(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "25x", "1 GBytes", "-1GB", "0MB", "1e3MB", "1001TB",
                                  "100000000000000000000000TB", "9" * 400])
def test_bad_sizes_get_an_example(text):
    with pytest.raises(SbclabError) as err:
        parse_size(text)
    assert "256MB" in str(err.value)


def test_format_size_uses_decimal_units():
    assert format_size(256 * 10**6) == "256 MB"
    assert format_size(999) == "999 B"
