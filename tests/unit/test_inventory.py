"""The YAML inventory of real boards: Ansible's shape, inheritance, and hostile or malformed input."""

from pathlib import Path

import pytest

from sbclab.cluster import inventory
from sbclab.monitor.settings import inventory_power
from sbclab.errors import SbclabError

EXAMPLE = Path(__file__).parents[2] / "examples" / "inventory.yml"

GOOD = """
all:
  vars: {ansible_user: pi, board: rpi5b, storage: nvme-p31-gen3, ansible_python_interpreter: /usr/bin/python3}
  children:
    master: {hosts: {pi0: {ansible_host: 10.0.0.10}}}
    workers:
      vars: {data_dir: /mnt/nvme/sbclab/}
      hosts:
        pi1: {ansible_host: 10.0.0.11, ansible_port: 2222, user: lab}
        pi2: {address: pi2.local, board: rpi4b, storage: microsd-evo}
"""


def test_the_shipped_example_parses():
    inv = inventory.load(EXAMPLE)
    assert inv.master.name == "pi0" and [w.name for w in inv.workers] == ["pi1", "pi2"]
    assert inventory_power(inv)["pi1"].source == "http-plug"


def test_nearer_variables_win_and_both_spellings_work():
    inv = inventory.parse(GOOD)
    pi1, pi2 = inv.host("pi1"), inv.host("pi2")
    assert (pi1.address, pi1.port, pi1.user, pi1.data_dir) == ("10.0.0.11", 2222, "lab", "/mnt/nvme/sbclab")
    assert (pi2.address, pi2.user, pi2.board, pi2.storage) == ("pi2.local", "pi", "rpi4b", "microsd-evo")
    assert inv.master.data_dir == "/srv/sbclab" and inv.master.role == "master"


def _with_worker(line: str) -> str:
    return GOOD.replace("pi2: {address: pi2.local, board: rpi4b, storage: microsd-evo}", line)


@pytest.mark.parametrize("line, words", [
    ("'pi2;reboot': {address: 10.0.0.12}", "bad name"),
    ("pi2: {address: '10.0.0.12; rm -rf /'}", "bad address"),
    ("pi2: {address: '$(reboot)'}", "bad address"),
    ("pi2: {address: 10.0.0.12, user: 'pi`id`'}", "bad user"),
    ("pi2: {address: 10.0.0.12, data_dir: '/srv/$(id)'}", "bad data_dir"),
    ("pi2: {address: 10.0.0.12, data_dir: 'relative/dir'}", "bad data_dir"),
    ("pi2: {address: 10.0.0.12, data_dir: /}", "bad data_dir"),
    ("pi2: {address: 10.0.0.12, data_dir: /srv/../etc}", "bad data_dir"),
    ("pi2: {address: 10.0.0.12, key: '~/.ssh/id rsa'}", "bad key"),
    ("pi2: {address: 10.0.0.12, port: 0}", "bad port"),
    ("pi2: {address: 10.0.0.12, port: 70000}", "bad port"),
    ("pi2: {address: 10.0.0.12, port: twenty-two}", "bad port"),
    ("pi2: {address: 10.0.0.12, port: true}", "bad port"),
    ("pi2: {address: 10.0.0.12, ansible_port: yes}", "bad port"),
    ("pi2: {address: 10.0.0.12, role: master}", "sets the variable 'role'"),
    ("pi2: {address: 10.0.0.12, name: pi9}", "sets the variable 'name'"),
    ("~: {address: 10.0.0.12}", "name YAML reads as the value null"),
    ("null: {address: 10.0.0.12}", "name YAML reads as the value null"),
    ("yes: {address: 10.0.0.12}", "name YAML reads as the value true"),
    ("12: {address: 10.0.0.12}", "name YAML reads as the value 12"),
    ("pi2: {address: 10.0.0.12, board: rpi9}", "rpi9"),
    ("pi2: {address: 10.0.0.12, storage: microsd-evo, board: desktop-i5-14500}", "cannot be attached"),
    ("pi2: {address: 10.0.0.12, colour: blue}", "colour"),
    ("pi2: {address: 10.0.0.11, ansible_port: 2222}", "given to two hosts"),
    ("pi1: {address: 10.0.0.12}", "appears twice"),
])
def test_hostile_or_malformed_hosts_are_refused_at_parse_time(line, words):
    with pytest.raises(SbclabError) as err:
        inventory.parse(_with_worker(line), "hosts.yml")
    assert words in str(err.value) and str(err.value).startswith("hosts.yml")


@pytest.mark.parametrize("text, words", [
    ("", "no 'all' group"),
    ("all: [1, 2]", "no 'all' group"),
    ("all: {children: {master: {hosts: {pi0: {}}}}}", "no workers"),
    ("all: {children: {master: {hosts: {}}, workers: {hosts: {pi1: {}}}}}", "exactly one master"),
    ("all: {children: {workers: {hosts: {pi1: {}}}, web: {hosts: {}}}}", "not web"),
    ("all: {children: {master: {hosts: {pi0: {}}}, workers: {hosts: {pi0: {}}}}}", "listed twice"),
    ("all: {children: {master: {hosts: [pi0]}, workers: {hosts: {pi1: {}}}}}", "must map host names"),
    ("all: {children: {\n  master: [", "not valid YAML"),
    ("all: {vars: {role: worker}, children: {master: {hosts: {pi0: {}}}, workers: {hosts: {pi1: {}}}}}",
     "all.vars sets the variable 'role'"),
    ("all: {children: {master: {hosts: {pi0: {}}}, workers: {vars: {name: pi}, hosts: {pi1: {}}}}}",
     "workers.vars sets the variable 'name'"),
])
def test_malformed_inventories_say_what_to_write(text, words):
    with pytest.raises(SbclabError) as err:
        inventory.parse(text)
    assert words in str(err.value)


def test_a_missing_file_names_the_template(tmp_path):
    with pytest.raises(SbclabError, match="examples/inventory.yml"):
        inventory.load(tmp_path / "nope.yml")
