"""The catalogue of Pi knobs: each one with its exact change and its source, listed by the CLI."""

import pytest
from click.testing import CliRunner

from sbclab import cli
from sbclab.cluster import knobs
from sbclab.errors import SbclabError


def test_every_knob_says_what_it_changes_where_and_from_which_seed():
    assert {k.name for k in knobs.KNOBS} == {"pcie-gen3", "overclock", "fstrim", "crc-off", "master-separate"}
    assert all(k.change and k.where and k.source for k in knobs.KNOBS)
    assert "dtparam=pciex1_gen=3" in knobs.get("pcie-gen3").change
    assert knobs.get("overclock").change.splitlines() == ["arm_freq=3000", "over_voltage_delta=50000"]


def test_the_cli_lists_them_and_an_unknown_one_is_named():
    out = CliRunner().invoke(cli.main_group, ["knobs"]).output
    assert "pcie-gen3" in out and "crc-off" in out
    with pytest.raises(SbclabError, match="Knobs: pcie-gen3"):
        knobs.get("turbo")
