"""Preflight judgements on facts as boards report them (recorded outputs of the facts script)."""

from sbclab.cluster import inventory
from sbclab.experiments import doctor

PI5_FACTS = """hostname=pi1
resolves=192.168.1.11
java=openjdk version "17.0.15" 2025-04-15
mem_total_kb=8245000
mem_available_kb=7800000
data_dir_exists=yes
data_dir_free_kb=200000000
governor=ondemand
thermal_millic=41250
fstrim=/usr/sbin/fstrim
throttled=0x0
vc_temp=41.1
psu_max_current_ma=5000
model=Raspberry Pi 5 Model B Rev 1.0
nvme_link=nvme0 8.0 GT/s PCIe
clock=1795394330.123456
"""

HOST = inventory.Host(name="pi1", role="worker", address="192.168.1.11")


def _findings(facts: str, need: int = 10 * 2**30, host=HOST):
    """The worst finding of each check."""
    rank = {"ok": 0, "warning": 1, "blocker": 2}
    worst: dict = {}
    for f in doctor.judge(host, doctor.parse_facts(facts), need):
        if f.check not in worst or rank[f.severity] > rank[worst[f.check].severity]:
            worst[f.check] = f
    return worst


def test_a_healthy_pi5_has_no_findings_but_ok():
    found = _findings(PI5_FACTS)
    assert {f.severity for f in found.values()} == {"ok"}
    assert set(found) >= {"java", "hostname", "data directory", "memory", "cpu governor", "throttling",
                          "temperature", "power supply", "fstrim", "pcie"}


def test_each_problem_names_the_node_the_finding_and_the_fix():
    facts = (PI5_FACTS.replace("resolves=192.168.1.11", "resolves=127.0.1.1").replace("throttled=0x0", "throttled=0x50005")
             .replace("psu_max_current_ma=5000", "psu_max_current_ma=3000").replace("8.0 GT/s", "5.0 GT/s")
             .replace("governor=ondemand", "governor=powersave").replace("vc_temp=41.1", "vc_temp=71.5")
             .replace("fstrim=/usr/sbin/fstrim", "fstrim=").replace('java=openjdk version "17.0.15" 2025-04-15', "java="))
    found = _findings(facts, need=500 * 2**30)
    expected = {"hostname": "blocker", "throttling": "blocker", "data directory": "blocker", "java": "blocker",
                "power supply": "warning", "pcie": "warning", "cpu governor": "warning", "temperature": "warning",
                "fstrim": "warning"}
    assert {check: found[check].severity for check in expected} == expected
    assert all(f.node == "pi1" and f.fix for f in found.values() if f.severity != "ok")
    assert "127.0.1.1" in found["hostname"].finding and "/etc/hosts" in found["hostname"].fix
    assert "pciex1_gen=3" in found["pcie"].fix and "27 W" in found["power supply"].fix


def test_too_little_ram_for_containers_blocks_a_worker():
    found = _findings(PI5_FACTS.replace("mem_total_kb=8245000", "mem_total_kb=500000"))
    assert found["memory"].severity == "blocker"


def test_a_board_without_pi_firmware_skips_the_pi_checks():
    x86 = "\n".join(line for line in PI5_FACTS.splitlines()
                    if not line.startswith(("throttled", "vc_temp", "psu", "model", "nvme")))
    found = _findings(x86)
    assert not {"throttling", "power supply", "pcie"} & set(found)
    assert found["temperature"].finding.startswith("41.2")


def test_clocks_more_than_a_second_apart_are_warned():
    assert doctor.clock_findings({"a": 0.01, "b": 0.2})[0].severity == "ok"
    warned = doctor.clock_findings({"a": -0.7, "b": 0.6})[0]
    assert warned.severity == "warning" and "1.30 s" in warned.finding


def test_terasort_needs_its_replicas_and_four_times_intermediate_per_worker():
    # 1 GB over two workers, two replicas (replication 3 capped by the workers) and 5 bytes per input byte.
    assert doctor.need_per_node("terasort", 10**9, 2) == int(10**9 * 7 / 2)
    assert doctor.need_per_node(None, None, 2) == 0


def _names_inventory():
    return inventory.Inventory(source="hosts.yml", hosts=(
        inventory.Host(name="pi0", role="master", address="10.0.0.10"),
        inventory.Host(name="pi1", role="worker", address="10.0.0.11"),
        inventory.Host(name="pi2", role="worker", address="10.0.0.12")))


def test_every_board_must_resolve_the_names_workers_register_under():
    inv = _names_inventory()
    # The workers' own names for their addresses: what their NodeManagers register as.
    names = doctor.worker_names(inv, {"pi1": {"name_of_address": "rpi-a"}, "pi2": {"name_of_address": "rpi-b"}})
    assert names == {"pi1": "rpi-a", "pi2": "rpi-b"}
    findings = doctor.name_findings(inv, names, {
        "pi0": {"rpi-a": "10.0.0.11", "rpi-b": ""},
        "pi1": {"rpi-a": "10.0.0.11", "rpi-b": "10.0.0.12"},
        "pi2": {"rpi-a": "127.0.1.1", "rpi-b": "10.0.0.12"}})
    by_board = {f.node: f for f in findings}
    assert by_board["pi1"].severity == "ok"
    assert by_board["pi0"].severity == "blocker" and "'rpi-b' (pi2) resolves to nothing" in by_board["pi0"].finding
    assert "'10.0.0.12 rpi-b'" in by_board["pi0"].fix and "/etc/hosts on pi0" in by_board["pi0"].fix
    assert by_board["pi2"].severity == "blocker" and "127.0.1.1" in by_board["pi2"].finding


def test_a_worker_without_a_name_for_its_address_registers_by_address_and_needs_nothing():
    inv = _names_inventory()
    assert doctor.worker_names(inv, {"pi1": {"name_of_address": ""}, "pi2": {}}) == {}


def test_no_port_forwarding_blocks_web_uis_on_loopback_and_no_python3_is_warned():
    facts = PI5_FACTS + "python3=\nforwarding=ChannelException(1, 'Administratively prohibited')\n"
    found = _findings(facts)
    assert found["ssh forwarding"].severity == "blocker" and "--expose-web-uis" in found["ssh forwarding"].fix
    assert "Administratively prohibited" in found["ssh forwarding"].finding
    assert found["python3"].severity == "warning" and "--no-sampling" in found["python3"].fix
    healthy = _findings(PI5_FACTS + "python3=/usr/bin/python3\nforwarding=yes\n")
    assert healthy["ssh forwarding"].severity == "ok" and "python3" not in healthy


def test_a_python3_older_than_a_stacks_pyspark_is_warned_with_the_stack():
    """Debian 11's Python 3.9 runs PySpark 3.5 but not PySpark 4 (3.10 and later); Debian 12's 3.11 runs both."""
    old = _findings(PI5_FACTS + "python3=/usr/bin/python3\npython3_version=3.9\nforwarding=yes\n")["python3"]
    assert old.severity == "warning" and "current stack (3.10)" in old.finding and "lee-park" not in old.finding
    assert _findings(PI5_FACTS + "python3=/usr/bin/python3\npython3_version=3.11\nforwarding=yes\n")["python3"].severity == "ok"
