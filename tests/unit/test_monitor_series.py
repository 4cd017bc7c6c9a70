"""Raw samples to series, window edges, health flags."""


from sbclab.monitor import health, series

NODE = {"scope": "node", "cores": 4, "cpu_capacity": 0.8, "memory_limit": 8 * 2**30}


def sample(t, usage_s, blkio_s=0.0, disk_w=0, rx=0, mark=None, **extra):
    s = {"t": t, "cgroup_cpu": {"usage_ns": int(usage_s * 1e9), "user_ns": int(usage_s * 0.75e9),
                                 "system_ns": int(usage_s * 0.25e9)},
         "cgroup_memory": {"rss": 2**30, "cache": 2**29, "swap": 0},
         "delays": {"blkio_delay_ns": int(blkio_s * 1e9), "cpu_delay_ns": 0, "cpu_run_real_ns": int(usage_s * 1e9),
                    "swapin_delay_ns": 0},
         "swap": {"in_pages": 0, "out_pages": 0},
         "disk": {"read_bytes": 0, "write_bytes": disk_w, "reads": 0, "writes": 0, "io_ms": int(t * 500)},
         "net": {"rx_bytes": rx, "tx_bytes": 0}, "mhz": [2400.0, 2400.0], "temp_c": {}, **extra}
    if mark:
        s["mark"] = mark
    return s


def test_node_shares_are_of_its_quota():
    samples = [sample(0, 0), sample(1, 0.8), sample(2, 1.2, blkio_s=1.0)]
    rows, gaps = series.build(samples, NODE, 1.0)
    assert not gaps
    assert rows[0]["cpu_user_pct"] == 75.0 and rows[0]["cpu_system_pct"] == 25.0 and rows[0]["cpu_idle_pct"] == 0
    assert rows[0]["cpu_cores_used"] == 0.8
    # Half busy; one second of blocked threads over four board cores is 25 % iowait.
    assert rows[1]["cpu_idle_pct"] + rows[1]["cpu_iowait_pct"] == 50.0 and rows[1]["cpu_iowait_pct"] == 25.0
    assert rows[1]["disk_busy_pct"] == 50.0 and rows[1]["mem_available_bytes"] == 7 * 2**30


def test_a_gap_is_recorded_not_bridged():
    samples = [sample(0, 0), sample(1, 0.1, disk_w=100), sample(30, 0.2, disk_w=200), sample(31, 0.3, disk_w=300)]
    rows, gaps = series.build(samples, NODE, 1.0)
    assert [r["t"] for r in rows] == [1, 31] and gaps == [{"from": 1, "to": 30, "seconds": 29}]


def test_window_edges_prefer_the_mark_after_the_end():
    samples = [sample(0, 0, disk_w=0), sample(1, 0, disk_w=10, mark="start job"), sample(5, 0, disk_w=50),
               sample(5.2, 0, disk_w=70, mark="end job"), sample(6, 0, disk_w=80)]
    a, b = series.edges(samples, 1.05, 5.0)
    assert (a["t"], b["t"]) == (1, 5.2) and series.counter(a, b, "disk", "write_bytes") == 60
    assert series.edges(samples, -5, 1) is None


def test_a_restarted_sampler_does_not_make_negative_rates():
    samples = [sample(0, 0, blkio_s=5.0), sample(1, 0.1, blkio_s=0.0)]
    rows, _ = series.build(samples, NODE, 1.0)
    assert rows[0]["cpu_iowait_pct"] is None


def test_health_flags_name_node_and_time():
    rows = [{"t": 1.0, "dt": 1.0, "throttled": 0x0, "clock_mhz_min": 2400.0, "temp_max_c": 70.0},
            {"t": 2.0, "dt": 1.0, "throttled": 0x50005, "clock_mhz_min": 1500.0, "temp_max_c": 82.5,
             "swap_out_bps": 4096.0}]
    samples = [{"t": 0.0}, {"t": 1.0}, {"t": 2.0}]
    flags = health.node_flags("worker1", rows, [], samples, "rpi5b", False, 0.0, 2.0)
    kinds = {f["kind"]: f for f in flags}
    assert set(kinds) == {"throttled", "clock", "temperature", "swap"}
    assert "under-voltage detected" in kinds["throttled"]["detail"] and kinds["throttled"]["at"] == 2.0
    assert "50 %" in kinds["clock"]["detail"] and "82.5 °C" in kinds["temperature"]["detail"]
    # Emulated nodes have the host's clock and sensors: no clock or temperature flag there.
    hosted = {f["kind"] for f in health.node_flags("worker1", rows, [], samples, "rpi5b", True, 0, 2)}
    assert hosted == {"throttled", "swap"}


def test_a_node_whose_samples_stop_is_flagged_as_disappeared():
    flags = health.node_flags("worker2", [], [{"from": 3.0, "to": 9.0, "seconds": 6.0}], [{"t": 0.0}, {"t": 3.0}],
                              "rpi5b", True, 0.0, 10.0)
    assert [f["kind"] for f in flags] == ["disappeared", "disappeared"]
    assert "6.0 s" in flags[0]["detail"] and "7.0 s before" in flags[1]["detail"]


def test_sticky_throttle_bits_that_appear_during_the_run_flag_it():
    samples = [{"t": 0.0, "throttled": 0x0}, {"t": 5.0, "throttled": 0x40000}]
    flags = health.node_flags("w", [], [], samples, "rpi4b", False, 0.0, 5.0)
    assert flags[0]["kind"] == "throttled" and "throttling has occurred" in flags[0]["detail"]


def test_columnar_keeps_every_column():
    cols = series.columnar([{"t": 1, "dt": 1}])
    assert set(cols) == set(series.COLUMNS) and cols["t"] == [1]


def test_a_throttled_medium_is_busy_by_throughput_against_its_limits():
    limited = {**NODE, "disk_limits": {"read_bytes_s": 1e8, "write_bytes_s": 4e7, "read_iops": 1e4, "write_iops": 1e3}}
    samples = [sample(0, 0, disk_w=0), sample(1, 0, disk_w=10**7), sample(2, 0, disk_w=5 * 10**7)]
    rows, _ = series.build(samples, limited, 1.0)
    assert [r["disk_busy_pct"] for r in rows] == [25.0, 100.0]


def test_a_cgroup_nodes_swap_is_its_own_not_the_hosts():
    def with_swap(t, held, host_out_pages):
        s = sample(t, 0)
        s["cgroup_memory"]["swap"] = held
        s["swap"] = {"in_pages": 0, "out_pages": host_out_pages}
        return s

    # The host pages out throughout; the node's cgroup holds 1 MiB more in swap after the second second.
    samples = [with_swap(0, 0, 0), with_swap(1, 0, 1000), with_swap(2, 2**20, 2000), with_swap(3, 2**19, 3000)]
    rows, _ = series.build(samples, NODE, 1.0)
    assert [r["swap_out_bps"] for r in rows] == [0.0, float(2**20), 0.0]
    assert all(r["swap_in_bps"] is None for r in rows), "swap-in cannot be told from the level"
    assert series.node_swapped_out(samples, 0, 3) == 2**20
    flags = health.node_flags("worker1", rows, [], samples, "rpi5b", True, 0.0, 3.0)
    assert [f["detail"] for f in flags if f["kind"] == "swap"] == [
        "worker1 swapped out 1.0 MiB during the run (its cgroup's swap)"]
    quiet = [with_swap(t, 4096, 1000 * t) for t in range(4)]
    rows, _ = series.build(quiet, NODE, 1.0)
    assert not health.node_flags("worker1", rows, [], quiet, "rpi5b", True, 0.0, 3.0), \
        "the host's paging does not flag a node whose cgroup did not swap"


def test_without_the_cgroups_swap_the_hosts_paging_stands_in_and_says_so():
    samples = [sample(t, 0) for t in range(3)]
    for s in samples:
        del s["cgroup_memory"]["swap"]
        s["swap"] = {"in_pages": 0, "out_pages": 10 * s["t"]}
    rows, _ = series.build(samples, NODE, 1.0)
    assert rows[0]["swap_out_bps"] == 10 * series.PAGE_BYTES
    assert series.node_swapped_out(samples, 0, 2) is None
    swap, = [f for f in health.node_flags("worker1", rows, [], samples, "rpi5b", True, 0.0, 2.0) if f["kind"] == "swap"]
    assert swap["detail"].startswith("the host swapped")


def test_delays_a_sampler_confirmed_a_reading_later_belong_to_the_sample_before():
    samples = [sample(0, 0), sample(1, 0.8), sample(2, 1.6, blkio_s=0.8), sample(3, 2.4, blkio_s=1.6)]
    for s in samples:
        s["delays"]["of_previous"] = 1
    rows, _ = series.build(samples, NODE, 1.0)
    # What sample 2 carries (0.8 s blocked) was read at sample 1: the first interval's iowait.
    assert rows[0]["cpu_iowait_pct"] is not None and rows[0]["load"] == 0.8 + 0.8
    assert rows[1]["load"] == 0.8 + 0.8 and rows[2].get("load") is None
    assert series.newest_row(samples, NODE)["t"] == 2 and series.newest_row(samples, NODE)["load"] == 1.6
    # A scrape before the sampler wrote two confirmed samples has no row to serve.
    assert series.newest_row([], NODE) is None and series.newest_row(samples[:2], NODE) is None
