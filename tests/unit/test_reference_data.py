"""The seeds' published results as shipped: vocabulary, consistency, and cells checked against the tables."""

import re
from pathlib import Path

import pytest

from sbclab import profiles
from sbclab.analysis import reference
from sbclab.units import parse_size
from sbclab.workloads import WORKLOADS

SEEDS_DIR = Path(__file__).resolve().parents[3] / "shared" / "seeds"
NODE_BENCHMARKS = {"sysbench-cpu", "storage", "iperf", "netpipe", "hpl", "stress", "idle", "httperf", "web"}


def test_every_seed_named_in_the_issue_is_there():
    assert set(reference.seeds()) == {"leepark2026", "leeohpark2021", "baun2016", "hajjitso2016"}
    tables = {(p.seed, p.table) for p in reference.published()}
    for seed, numbers in {"leepark2026": [3, 4, 5, 6, 7, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23],
                          "leeohpark2021": [7, 8, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22],
                          "baun2016": [2, 7], "hajjitso2016": [1, 2]}.items():
        for n in numbers:
            assert (seed, f"Table {n}") in tables, f"{seed} Table {n}"


def test_rows_use_the_project_vocabulary():
    boards, media = set(profiles.boards()), set(profiles.storages())
    for p in reference.published():
        d = p.dimensions
        assert d.get("workload") in set(WORKLOADS) | NODE_BENCHMARKS, p
        assert d.get("engine") in (None, "hadoop", "spark"), p
        assert d.get("board") in boards | {None}, p
        assert d.get("storage") in media | {None}, p
        assert d.get("workers") is None or isinstance(d["workers"], int), p
        if d.get("size"):
            parse_size(d["size"])
        assert p.metric and p.unit is not None, p


def test_each_value_is_its_printed_number():
    for p in reference.published():
        if p.value is None:
            continue
        text = p.printed
        candidates = {float(text.replace(",", ""))}
        if re.fullmatch(r"\d+,\d{1,2}", text):  # a decimal comma, as Baun prints one speedup
            candidates.add(float(text.replace(",", ".")))
        assert any(p.value == pytest.approx(c) for c in candidates), p


@pytest.mark.parametrize("seed, table, dims, printed", [
    ("leepark2026", "Table 4", {"board": "rpi5b", "threads": 1}, "24,699.51"),
    ("leepark2026", "Table 11", {"engine": "hadoop", "size": "32GB"}, "126.2"),
    ("leepark2026", "Table 11", {"engine": "spark", "size": "32GB"}, "20"),
    ("leepark2026", "Table 16", {"storage": "nvme-p31-gen3", "workers": 4}, "76"),
    ("leeohpark2021", "Table 12", {"size": "500MB", "storage": "ufs-usb3", "workers": 1}, "1314.6"),
    ("baun2016", "Table 7", {"n": 5696, "workers": 1, "metric": "hpl_rmax"}, "0.209"),
    ("baun2016", "Table 7", {"n": 5696, "workers": 1, "metric": "wall_time"}, "589.17"),
    ("hajjitso2016", "Table 1", {"workload": "wordcount", "size": "1GB"}, "60.2"),
    ("hajjitso2016", "Table 1", {"workload": "sort", "size": "6GB"}, "224.8"),
])
def test_sampled_cells_equal_the_published_tables(seed, table, dims, printed):
    """Values read off the seeds' tables by hand, independently of the data files."""
    metric = dims.pop("metric", None)
    found = [p for p in reference.published() if p.seed == seed and p.table == table
             and (metric is None or p.metric == metric) and all(p.dimensions.get(k) == v for k, v in dims.items())]
    assert [p.printed for p in found] == [printed]


@pytest.mark.skipif(not SEEDS_DIR.is_dir(), reason="the seeds' texts are not beside this checkout")
def test_every_printed_number_occurs_in_its_seed():
    texts = {seed: (SEEDS_DIR / raw["source_file"]).read_text() for seed, raw in reference.seeds().items()}
    missing = []
    for p in reference.published():
        pattern = r"(?<![\d.,])" + re.escape(p.printed) + r"(?![\d])"
        if not re.search(pattern, texts[p.seed]):
            missing.append((p.seed, p.table, p.printed))
    assert not missing, missing[:10]


def test_matching_a_cell_finds_the_published_pi_time():
    found = reference.matches("pi", "hadoop", None, 2, "rpi5b", "nvme-p31-gen3")
    assert [(p.source, p.seconds) for p in found] == [("leepark2026 Table 16", 131.0)]


def test_nearest_prefers_the_same_board_then_the_nearest_size():
    near = reference.nearest("terasort", "hadoop", 64 * 10**6, 2, "rpi4b-4gb", "ufs-usb3", limit=1)
    assert near[0].dimensions["board"] == "rpi4b-4gb" and near[0].dimensions["size"] == "500MB"
