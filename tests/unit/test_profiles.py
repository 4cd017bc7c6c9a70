import pytest

from sbclab import profiles
from sbclab.errors import SbclabError


def test_shipped_boards_carry_their_sources():
    pi5 = profiles.board("rpi5b")
    assert (pi5.cores, pi5.clock_ghz, pi5.ram_gib) == (4, 2.4, 8)
    assert pi5.idle_watts == 5.54 and pi5.load_watts == 10.31
    assert "Table 3" in pi5.sources["idle_watts, load_watts"]


def test_storage_figures_depend_on_the_board():
    sd = profiles.storage("microsd")
    assert sd.figures_on("rpi5b").seq_read_mb_s == 88.07
    assert sd.figures_on("rpi4b").seq_read_mb_s == 43.29


def test_medium_never_measured_on_a_board_gets_its_slowest_figures():
    assert profiles.storage("microsd").figures_on("someboard").seq_read_mb_s == 43.29


@pytest.mark.parametrize("lookup, name", [(profiles.board, "rpi9"), (profiles.storage, "floppy")])
def test_unknown_names_list_the_valid_ones(lookup, name):
    with pytest.raises(SbclabError) as err:
        lookup(name)
    message = str(err.value)
    assert name in message
    assert "rpi5b" in message or "nvme" in message
