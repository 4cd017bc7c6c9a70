"""The pure parts of containers on a node: names, the image recipe's digest, the command lines, and
which runtime a node answers with (a test double for the transport)."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from sbclab.cluster import containers
from sbclab.cluster.transport import Captured
from sbclab.errors import SbclabError

PODMAN = containers.Runtime("podman", "4.3.1", ("--root", "/store"), ("--cgroups=disabled",))
DOCKER = containers.Runtime("docker", "24.0.5")


def test_a_container_is_named_after_its_cluster_node_and_label():
    assert containers.container_name("lab", "worker1", "nginx") == "sbclab-lab-worker1-nginx"
    # Characters container names do not allow become dashes; an empty part still names something.
    assert containers.container_name("lab", "worker 1", "web/nginx:1") == "sbclab-lab-worker-1-web-nginx-1"
    assert containers.container_name("lab", "w", "!!") == "sbclab-lab-w-x"


def test_the_recipe_digest_changes_with_what_the_image_holds_and_only_then():
    base = containers.Recipe(architecture="amd64")
    assert base.digest() == containers.Recipe(architecture="amd64").digest()
    assert base.tag == f"sbclab/node:{base.digest()}" and len(base.digest()) == 16
    more = containers.Recipe(architecture="amd64", packages=(*base.packages, "fio"))
    assert len({base.digest(), more.digest(), containers.Recipe(architecture="arm64").digest(),
                containers.Recipe(architecture="amd64", suite="trixie").digest()}) == 4


def test_the_image_holds_nginx_and_a_java_17_runtime_built_by_mmdebstrap():
    recipe = containers.Recipe(architecture="arm64")
    argv = recipe.mmdebstrap(Path("/tmp/b/root.tar"))
    assert argv[0] == "mmdebstrap" and "--variant=apt" in argv and "--architectures=arm64" in argv
    included = next(a for a in argv if a.startswith("--include=")).removeprefix("--include=").split(",")
    assert {"nginx-light", "openjdk-17-jre-headless"} <= set(included)
    assert argv[-3:] == ["bookworm", "/tmp/b/root.tar", recipe.mirror]


def test_podman_runs_the_command_in_the_nodes_cgroup_with_the_nodes_limits():
    container = containers.Container(name="sbclab-lab-worker1-x", image="sbclab/node:abc",
                                     mounts=(containers.Mount(Path("/data")), containers.Mount(Path("/a"), Path("/b"), True)),
                                     hosts=(("master", "10.0.0.10"),), env=(("A", "1"),))
    argv = containers.run_argv(PODMAN, container, ["nginx", "-c", "/data/nginx.conf"], entry=["nsenter", "--"])
    assert argv[:2] == ["nsenter", "--"]
    # The limits are read on the node, by the shell that starts podman, and podman's own options follow it.
    shell = argv.index("sh")
    assert argv[shell + 1] == "-c" and "ulimit -H -n" in argv[shell + 2] and argv[shell + 3:shell + 6] == ["podman", "--root", "/store"]
    assert "--cgroups=disabled" in argv and "--rm" in argv
    assert argv[argv.index("--name") + 1] == "sbclab-lab-worker1-x"
    assert argv[argv.index("--network") + 1] == "host" and argv[argv.index("--uts") + 1] == "host"
    assert ["--volume", "/data:/data"] == argv[argv.index("/data:/data") - 1:argv.index("/data:/data") + 1]
    assert "/a:/b:ro" in argv and "master:10.0.0.10" in argv and "A=1" in argv
    assert argv[-4:] == ["sbclab/node:abc", "nginx", "-c", "/data/nginx.conf"]


def test_a_bridged_container_publishes_its_port_on_the_nodes_address_only():
    container = containers.Container(name="n", image="i", network="bridge", hostname="worker1",
                                     publish=(("10.213.0.11", 8080, 8080),))
    argv = containers.run_argv(DOCKER, container, ["nginx"])
    assert argv[:2] == ["docker", "run"] and "--cgroups=disabled" not in argv
    assert argv[argv.index("--network") + 1] == "bridge" and "--uts" not in argv
    assert argv[argv.index("--publish") + 1] == "10.213.0.11:8080:8080/tcp"
    assert argv[argv.index("--hostname") + 1] == "worker1"


def test_removal_succeeds_for_a_container_already_gone():
    assert containers.remove_argv("podman", ["--root", "/s"], "c") == ["podman", "--root", "/s", "rm", "--force",
                                                                      "--time", "2", "--ignore", "c"]
    assert containers.remove_argv("docker", [], "c") == ["docker", "rm", "--force", "c"]


class Answering:
    """A transport double whose nodes answer `info` as told."""

    name, shares_host = "ssh", False

    def __init__(self, answers, runtimes=("podman", "docker")):
        self.answers, self.runtimes, self.asked = answers, runtimes, []

    def container_runtimes(self):
        return self.runtimes

    def container_entry(self, node):
        return []

    def capture(self, node, argv, env=None, timeout_s=120):
        self.asked.append(argv)
        status, out, err = self.answers[argv[0]]
        return Captured(status, out.encode(), err.encode())


NODE = SimpleNamespace(name="worker1")


def test_the_runtime_is_the_first_that_answers_on_the_node():
    transport = Answering({"podman": (127, "", "sh: podman: not found"), "docker": (0, "24.0.5\n", "")})
    found = containers.runtime_on(transport, NODE)
    assert found == containers.Runtime("docker", "24.0.5") and [a[0] for a in transport.asked] == ["podman", "docker"]
    assert transport.asked[1][1:] == ["info", "--format", "{{.ServerVersion}}"]


def test_no_runtime_is_one_sentence_naming_what_each_said():
    transport = Answering({"podman": (127, "", ""), "docker": (1, "", "Cannot connect to the Docker daemon\n")})
    said = containers.runtime_on(transport, NODE)
    assert isinstance(said, str) and "worker1" in said and "podman: not installed" in said
    assert "Cannot connect to the Docker daemon" in said and "\n" not in said
    assert "plain processes" in containers.runtime_on(Answering({}, runtimes=()), NODE)


class Board:
    """A board double: `uname -m` answers `machine`, the runtime's image inspect answers once the image was
    loaded, and `run` records what it was fed."""

    name, shares_host = "ssh", False

    def __init__(self, machine: str, holds: bool = False, tmp_path=None):
        self.machine, self.holds, self.fed = machine, holds, []
        self.state = SimpleNamespace(root=tmp_path)

    def capture(self, node, argv, env=None, timeout_s=120):
        if argv == ["uname", "-m"]:
            return Captured(0, f"{self.machine}\n".encode(), b"")
        if argv[1:3] == ["image", "inspect"]:
            return Captured(0, b"sha256:beef 123\n", b"") if self.holds else Captured(1, b"", b"no such image")
        raise AssertionError(argv)

    def run(self, node, argv, env, log, timeout_s=None, label="command", feed=None):
        self.fed.append((node.name, argv, feed))
        self.holds = True
        return 0


def _built_here(monkeypatch):
    here = containers.Runtime("podman", "4.3.1", ("--root", "/store"))
    image = containers.Image("sbclab/node:abc", "sha256:beef", "abc", 123)
    monkeypatch.setattr(containers, "runtime_here", lambda: here)
    monkeypatch.setattr(containers, "ensure_image", lambda runtime, progress=None: image)
    monkeypatch.setattr(containers, "_host_architecture", lambda: "amd64")
    return here


def test_the_node_image_is_streamed_to_a_board_of_this_architecture_once(monkeypatch, tmp_path):
    here = _built_here(monkeypatch)
    board, docker = Board("x86_64", tmp_path=tmp_path), containers.Runtime("docker", "24.0.5")
    image = containers.image_for(board, docker, [NODE])
    [(node, argv, feed)] = board.fed
    assert node == "worker1" and argv == ["docker", "load"]
    assert feed == [*here.command("save", "--format", "docker-archive", "sbclab/node:abc")]
    assert image.record() == {"image": "sbclab/node:abc", "image_digest": "sha256:beef"}
    containers.image_for(board, docker, [NODE])
    assert len(board.fed) == 1, "a board that holds the image gets nothing again"


def test_a_board_of_another_architecture_is_refused_with_the_reason(monkeypatch, tmp_path):
    _built_here(monkeypatch)
    with pytest.raises(SbclabError) as err:
        containers.image_for(Board("aarch64", tmp_path=tmp_path), containers.Runtime("podman", "4.3.1"), [NODE])
    assert "amd64" in err.value.message and "worker1 is arm64" in err.value.message
