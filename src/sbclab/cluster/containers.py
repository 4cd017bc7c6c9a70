"""OCI containers on a node: which runtime the node has, the node image, and the command line that
runs a node's command inside a container on it (Hajji & Tso compared native with Docker).

A container is one more command on the node: its client (podman or docker) is started through the
node's transport like any other, so on an emulated node it runs inside the node's network namespace
and cgroup. There podman keeps the container's processes in the client's cgroup
(`--cgroups=disabled`), where the node's CPU quota, virtual cores and memory limit shape them exactly
as they shape native processes; a container cgroup of its own below the node's would escape the
virtual-core balancer (it places only the node group's own threads) and charge direct I/O to a child
blkio group, which the node's disk rule misses (cgroups.py). Docker is used only on boards, where the
board is the node: its daemon would start an emulated node's containers outside the node's walls.

The image is built here from Debian packages (mmdebstrap, no registry needed) and imported under a
tag named by the digest of its recipe, so it is rebuilt only when the recipe changes. It holds what
the workloads run inside it (nginx, a Java 17 runtime for Hadoop's and Spark's daemons, sysbench);
Hadoop and Spark themselves are bind-mounted from the stack's distribution, because they change
with every stack while the image would not, and one image then serves every stack.

Every container is named sbclab-<cluster>-<node>-<label> and recorded in the cluster's state before
it is created; `remove` (and teardown, for what a killed sbclab left) removes it by that name.
"""

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Literal

from .. import atomic, paths
from ..errors import SbclabError
from . import tools
from .spec import NodeSpec
from .transport import Transport

RUNTIMES = ("podman", "docker")
IMAGE_REPOSITORY = "sbclab/node"
Network = Literal["host", "bridge"]
# Bumped when the way a recipe becomes an image changes, so images built the old way are not reused.
RECIPE_FORMAT = 1
BUILD_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Runtime:
    """A container runtime that answered on a node. `options` go before its subcommand (podman's
    private store and cgroup manager on this host), `run_options` into every `run`."""

    name: str
    version: str
    options: tuple[str, ...] = ()
    run_options: tuple[str, ...] = ()

    def command(self, *args: str) -> list[str]:
        return [self.name, *self.options, *args]

    def record(self) -> dict[str, str]:
        return {"runtime": self.name, "version": self.version}


@dataclass(frozen=True)
class Recipe:
    """What the node image is made of; its digest names the image."""

    suite: str = "bookworm"
    variant: str = "apt"
    # nginx for web capacity, a Java 17 runtime for Hadoop's and Spark's daemons, sysbench and ps to
    # check a container's CPU against the node's.
    packages: tuple[str, ...] = ("nginx-light", "openjdk-17-jre-headless", "python3", "sysbench", "procps")
    mirror: str = "http://deb.debian.org/debian"
    architecture: str = ""

    def digest(self) -> str:
        canonical = json.dumps({"format": RECIPE_FORMAT, **asdict(self)}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def tag(self) -> str:
        return f"{IMAGE_REPOSITORY}:{self.digest()}"

    def mmdebstrap(self, tarball: Path) -> list[str]:
        """The command that builds the image's root filesystem as a tarball."""
        arch = [f"--architectures={self.architecture}"] if self.architecture else []
        return ["mmdebstrap", "--mode=root", f"--variant={self.variant}", *arch,
                f"--include={','.join(self.packages)}",
                # Documentation, manuals and translations are a third of the image and nothing reads them;
                # Java's alternatives still need man1 to exist.
                "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
                "--dpkgopt=path-exclude=/usr/share/locale/*",
                "--essential-hook=mkdir -p \"$1\"/usr/share/man/man1",
                "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/*",
                self.suite, str(tarball), self.mirror]


@dataclass(frozen=True)
class Image:
    """The node image as a runtime holds it: `digest` is the runtime's image id, what runs record."""

    tag: str
    digest: str
    recipe: str
    size_bytes: int
    build_seconds: float | None = None

    def record(self) -> dict[str, str]:
        return {"image": self.tag, "image_digest": self.digest}


@dataclass(frozen=True)
class Mount:
    """A folder of the node seen inside the container (by default at the same path)."""

    source: Path
    target: Path | None = None
    read_only: bool = False

    def option(self) -> str:
        target = self.target or self.source
        return f"{self.source}:{target}" + (":ro" if self.read_only else "")


@dataclass(frozen=True)
class Container:
    """How one command runs in a container: its name, the image, its network and folders."""

    name: str
    image: str
    network: Network = "host"
    hostname: str | None = None
    publish: tuple[tuple[str, int, int], ...] = ()  # (the node's address, its port, the container's port)
    hosts: tuple[tuple[str, str], ...] = ()  # (name, address) the container resolves, as the node does
    mounts: tuple[Mount, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    workdir: Path | None = None
    extra: tuple[str, ...] = field(default=())


# podman gives a root container the largest open-file and process limits the kernel allows, which a
# host without CAP_SYS_RESOURCE cannot grant (crun fails with "setrlimit: Operation not permitted").
# The container gets the node's own limits instead, as its native processes have them; podman itself
# runs with at most pid_max processes, so that caps the process limit its runtime can set.
_PODMAN_LIMITS = ('n="$(ulimit -S -n):$(ulimit -H -n)"; m=$(cat /proc/sys/kernel/pid_max); p=$(ulimit -H -p); '
                  '{ [ "$p" = unlimited ] || [ "$p" -gt "$m" ]; } && p=$m; '
                  'exec "$0" run --ulimit "nofile=$n" --ulimit "nproc=$p:$p" "$@"')
_NAME_PART = re.compile(r"[^a-zA-Z0-9_.-]+")


def container_name(cluster: str, node: str, label: str) -> str:
    """sbclab-<cluster>-<node>-<label>, in the characters container names allow."""
    parts = [_NAME_PART.sub("-", p).strip("-") or "x" for p in (cluster, node, label)]
    return "sbclab-" + "-".join(parts)


def run_argv(runtime: Runtime, container: Container, argv: list[str], entry: list[str] = ()) -> list[str]:
    """The command line that runs argv in the container, in the foreground, removed when it ends.

    host: the node's own network (and host name); bridge: the runtime's default software bridge,
    each `publish` port forwarded from the node's address, as Docker serves by default."""
    options = ["--rm", "--name", container.name, "--log-driver=none", *runtime.run_options]
    if container.network == "host":
        options += ["--network", "host", "--uts", "host"]
    else:
        options += ["--network", "bridge"]
        if container.hostname:
            options += ["--hostname", container.hostname]
        for address, port, inside in container.publish:
            options += ["--publish", f"{address}:{port}:{inside}/tcp"]
    for name, address in container.hosts:
        options += ["--add-host", f"{name}:{address}"]
    for mount in container.mounts:
        options += ["--volume", mount.option()]
    for key, value in container.env:
        options += ["--env", f"{key}={value}"]
    if container.workdir:
        options += ["--workdir", str(container.workdir)]
    options += [*container.extra, container.image, *argv]
    if runtime.name == "podman":
        return [*entry, "sh", "-c", _PODMAN_LIMITS, "podman", *runtime.options, *options]
    return [*entry, *runtime.command("run", *options)]


def exec_argv(runtime: Runtime, name: str, argv: list[str], env: dict[str, str] | None = None,
              workdir: Path | None = None, entry: list[str] = ()) -> list[str]:
    """The command line that runs argv inside a running container, in the foreground, with its
    standard streams (a command of a node whose processes live in that container)."""
    options = ["--interactive"]
    for key, value in sorted((env or {}).items()):
        options += ["--env", f"{key}={value}"]
    if workdir:
        options += ["--workdir", str(workdir)]
    return [*entry, *runtime.command("exec", *options, name, *argv)]


def remove_argv(runtime_name: str, options: list[str] | tuple[str, ...], name: str) -> list[str]:
    """The command that removes a container by name, running or not, and succeeds if it is gone."""
    return [runtime_name, *options, "rm", "--force", "--time", "2", "--ignore", name] if runtime_name == "podman" \
        else [runtime_name, "rm", "--force", name]


# --- which runtime a node has ------------------------------------------------------------------

# crun refuses to run at all on a host whose cgroup v1 hierarchies sit beside a cgroup2 mount with
# controllers in it (hugetlb on this kind of host: "cgroups in hybrid mode not supported"). In a mount
# namespace of its own, without that mount, it sees the plain v1 host the nodes' groups live on.
# The wrapper is named crun too: podman keeps a container in its caller's cgroup only with a runtime
# of that name.
CRUN_ON_V1 = """#!/bin/sh
exec unshare --mount --propagation slave -- sh -c 'umount -l /sys/fs/cgroup/unified && exec "$0" "$@"' {crun} "$@"
"""
UNIFIED_CONTROLLERS = Path("/sys/fs/cgroup/unified/cgroup.controllers")


def oci_runtime(folder: Path) -> str:
    """crun, or crun behind CRUN_ON_V1 (kept in `folder`) where the host needs it."""
    try:
        hybrid = bool(UNIFIED_CONTROLLERS.read_text().strip())
    except OSError:
        hybrid = False
    crun = shutil.which("crun")
    if not hybrid or not crun:
        return "crun"
    wrapper = folder / "on-v1" / "crun"
    script = CRUN_ON_V1.format(crun=crun)
    if not wrapper.exists() or wrapper.read_text() != script:
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(wrapper, script)
        wrapper.chmod(0o755)
    return str(wrapper)


def podman_store() -> tuple[str, ...]:
    """podman's options for sbclab's own store on this host, kept in the sbclab cache: images built
    here survive between runs and clusters, and nothing of a user's own podman is touched or counted.
    The state directories hang off the store's resolved path, so two homes sharing one cache through
    a link (the tests') share one store without podman finding two paths for it."""
    root = (paths.cache_dir() / "containers").resolve()
    run = Path("/run/sbclab-containers") / hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return ("--root", str(root / "storage"), "--runroot", str(run / "storage"), "--tmpdir", str(run / "libpod"),
            "--cgroup-manager", "cgroupfs", "--events-backend", "file", "--runtime", oci_runtime(root))


def runtime_on(transport: Transport, node: NodeSpec) -> Runtime | str:
    """The container runtime that answers `info` on the node, or one sentence saying why none can
    run there (for the caller to say once before running the native cells)."""
    allowed = transport.container_runtimes()
    if not allowed:
        return (f"the {transport.name} backend runs nodes as plain processes of this host, which cannot hold "
                "containers of their own; use the emulated backend (root) or boards")
    entry = transport.container_entry(node)
    heard = []
    for name in allowed:
        on_host = transport.shares_host and name == "podman"
        options = podman_store() if on_host else ()
        query = "{{.Version.Version}}" if name == "podman" else "{{.ServerVersion}}"
        try:
            done = transport.capture(node, [*entry, name, *options, "info", "--format", query], timeout_s=60)
        except SbclabError as err:
            heard.append(f"{name}: {err.message}")
            continue
        out = done.stdout.decode(errors="replace").strip()
        if done.status == 0 and out and "<no value>" not in out:
            return Runtime(name, out.splitlines()[-1], options, ("--cgroups=disabled",) if on_host else ())
        said = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        heard.append(f"{name}: {said[-1][:160] if said else f'exit {done.status}'}"
                     if done.status != 127 else f"{name}: not installed")
    return f"no container runtime answers on {node.name} ({'; '.join(heard)})"


@functools.cache
def runtime_here() -> Runtime | str:
    """podman on this host, as emulated nodes use it, or why it cannot serve them. Asked once per
    sbclab process: planning a reproduction asks for every table with container cells, and each
    `podman info` takes a fifth of a second."""
    if not shutil.which("podman"):
        return "podman is not installed here (apt-get install podman crun, or make setup)"
    options = podman_store()
    try:
        done = subprocess.run(["podman", *options, "info", "--format", "{{.Version.Version}}"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        return f"podman does not answer here ({err})"
    if done.returncode != 0 or not done.stdout.strip():
        said = done.stderr.strip().splitlines()
        return f"podman does not answer here ({said[-1][:160] if said else f'exit {done.returncode}'})"
    return Runtime("podman", done.stdout.strip(), options, ("--cgroups=disabled",))


# --- the image ------------------------------------------------------------------------------------

def _host_architecture() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def images_dir() -> Path:
    return paths.cache_dir() / "images"


def _inspect(runtime: Runtime, run: tools.Runner, tag: str) -> tuple[str, int] | None:
    status, out, _ = run(runtime.command("image", "inspect", "--format", "{{.Id}} {{.Size}}", tag))
    if status != 0 or not out.split():
        return None
    image_id, size = out.split()[:2]
    return (image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"), int(size)


def _clear_stale_builds(folder: Path) -> None:
    """Build folders a killed sbclab left (their builder's pid is gone)."""
    for stale in folder.glob("build-*"):
        pid = stale.name.split("-")[1]
        if not (pid.isdigit() and Path(f"/proc/{pid}").exists()):
            shutil.rmtree(stale, ignore_errors=True)


def ensure_image(runtime: Runtime, recipe: Recipe | None = None, progress=lambda message: None) -> Image:
    """The node image in this host's runtime, built from the recipe unless an image of the same
    recipe is already there. The root filesystem is built and tarred in a folder of the cache that
    goes when the build ends, whether it succeeded or not."""
    recipe = recipe or Recipe(architecture=_host_architecture())
    run = tools.here()
    folder = images_dir()
    record = folder / f"{recipe.digest()}.json"
    found = _inspect(runtime, run, recipe.tag)
    if found:
        built = json.loads(record.read_text()) if record.exists() else {}
        return Image(recipe.tag, found[0], recipe.digest(), found[1], built.get("build_seconds"))
    if not shutil.which("mmdebstrap"):
        raise SbclabError("mmdebstrap is not installed, and the node image is built with it.",
                          "Install it (apt-get install mmdebstrap), or run 'make setup'.")
    folder.mkdir(parents=True, exist_ok=True)
    _clear_stale_builds(folder)
    progress(f"building the node image {recipe.tag} from Debian {recipe.suite} packages")
    began = time.monotonic()
    build = Path(tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=folder))
    try:
        tarball = build / "root.tar"
        # mmdebstrap's own temporary root goes in the build folder too, so nothing outlives a failure.
        env = {**os.environ, "TMPDIR": str(build)}
        try:
            done = subprocess.run(recipe.mmdebstrap(tarball), capture_output=True, text=True, env=env,
                                  timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise SbclabError(f"Building the node image took over {BUILD_TIMEOUT_S // 60} minutes.",
                              "Check this host's access to the Debian mirror, then run again.") from None
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines() if line.startswith("E:")] or done.stderr.splitlines()
            raise SbclabError(f"Building the node image failed: {' '.join(said[-2:])[:400]}",
                              f"Check that {recipe.mirror} is reachable and the packages exist in {recipe.suite}.")
        status, _, err = run(runtime.command("import", "--change", 'CMD ["/bin/bash"]', str(tarball), recipe.tag))
        if status != 0:
            raise SbclabError(f"{runtime.name} could not import the node image: {err.strip()[-300:]}",
                              f"Check '{runtime.name} info' on this host.")
    finally:
        shutil.rmtree(build, ignore_errors=True)
    seconds = round(time.monotonic() - began, 1)
    found = _inspect(runtime, run, recipe.tag)
    if not found:
        raise SbclabError(f"The node image {recipe.tag} was imported but {runtime.name} does not list it.",
                          f"Check '{runtime.name} images'.")
    atomic.write_text(record, json.dumps({"recipe": asdict(recipe), "tag": recipe.tag, "digest": found[0],
                                          "size_bytes": found[1], "build_seconds": seconds}, indent=1) + "\n")
    return Image(recipe.tag, found[0], recipe.digest(), found[1], seconds)


def image_for(transport: Transport, runtime: Runtime, nodes: list[NodeSpec],
              progress=lambda message: None) -> Image:
    """The node image where the nodes run their containers: this host's podman for nodes on this host;
    on boards, built here and shipped to each board whose runtime lacks it (same architecture only)."""
    if transport.shares_host:
        return ensure_image(runtime, progress=progress)
    here = runtime_here()
    if isinstance(here, str):
        raise SbclabError(f"The node image is built on this host and shipped to the boards, but {here}.",
                          "Install podman here (make setup), or run the native cells on the boards.")
    image = ensure_image(here, progress=progress)
    digests = {node.name: _shipped(transport, node, runtime, here, image, progress) for node in nodes}
    return Image(image.tag, digests[nodes[0].name] if nodes else image.digest, image.recipe, image.size_bytes,
                 image.build_seconds)


# `uname -m` on a board -> Debian's name of its architecture, which the image is built for.
_DEBIAN_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "armhf",
                         "armv6l": "armel", "riscv64": "riscv64", "i686": "i386"}


def _shipped(transport: Transport, node: NodeSpec, runtime: Runtime, here: Runtime, image: Image,
             progress) -> str:
    """The image in the board's runtime, streamed there (`podman save` here into `load` there) unless
    the board already holds it; its id as the board's runtime gives it."""
    machine = transport.capture(node, ["uname", "-m"]).stdout.decode(errors="replace").strip()
    theirs, ours = _DEBIAN_ARCHITECTURES.get(machine, machine), _host_architecture()
    if theirs != ours:
        raise SbclabError(f"The node image is built here for {ours}, and {node.name} is {theirs or 'unknown'} "
                          f"({machine or 'uname -m said nothing'}); an image of another architecture is not built.",
                          "Run the container cells on boards of this host's architecture or on the emulated "
                          "backend, and the native cells here.")
    board = tools.on_node(transport, node, timeout_s=60)
    found = _inspect(runtime, board, image.tag)
    if found:
        return found[0]
    progress(f"copying the node image {image.tag} ({image.size_bytes / 1e6:.0f} MB) to {node.name}'s {runtime.name}")
    log = transport.state.root / "images" / f"{node.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    # docker-archive: the one format both runtimes load.
    save = here.command("save", "--format", "docker-archive", image.tag)
    status = transport.run(node, runtime.command("load"), {}, log, timeout_s=BUILD_TIMEOUT_S,
                           label=f"load {image.tag}", feed=save)
    found = _inspect(runtime, board, image.tag) if status == 0 else None
    if not found:
        raise SbclabError(f"{node.name}'s {runtime.name} could not load the node image {image.tag} (exit {status}).",
                          f"Check free space for {runtime.name}'s images on {node.name} ('{runtime.name} info'); "
                          f"read {log}.")
    return found[0]


# --- containers on a node ---------------------------------------------------------------------

def wrap(transport: Transport, node: NodeSpec, runtime: Runtime, image: Image, argv: list[str], label: str, *,
         network: Network = "host", publish: tuple[tuple[str, int, int], ...] = (), mounts: tuple[Mount, ...] = (),
         env: dict[str, str] | None = None, workdir: Path | None = None,
         init: bool = False) -> tuple[list[str], dict]:
    """The command line that runs argv (meant for the node) in a container on the node, for
    transport.start or tools.ServingOnNode, and the container's record in the cluster's state, made
    now, before anything can create it. Remove it with `remove` once the command has stopped.
    init: a small init process (catatonit) reaps what the commands exec'd into it leave behind."""
    name = container_name(transport.spec.name, node.name, label)
    container = Container(name=name, image=image.tag, network=network, hostname=node.name, publish=publish,
                          hosts=tuple((n.name, n.address) for n in transport.spec.nodes), mounts=mounts,
                          env=tuple(sorted((env or {}).items())), workdir=workdir,
                          extra=("--init",) if init else ())
    entry = transport.state.record("container", node=node.name, name=name, runtime=runtime.name,
                                   options=list(runtime.options))
    return run_argv(runtime, container, argv, transport.container_entry(node)), entry


def remove(transport: Transport, node: NodeSpec, entry: dict) -> bool:
    """The recorded container removed from the node (running or not), and its record with it;
    False, the record kept for teardown, if the runtime could not remove it."""
    argv = [*transport.container_entry(node), *remove_argv(entry["runtime"], entry.get("options", ()), entry["name"])]
    try:
        done = transport.capture(node, argv, timeout_s=60)
    except SbclabError:
        return False
    gone = done.status == 0 or b"no such container" in done.stderr.lower()
    if gone:
        transport.state.forget(entry)
    return gone


@contextmanager
def serving(transport: Transport, node: NodeSpec, runtime: Runtime, image: Image, argv: list[str], log: Path,
            label: str, *, network: Network = "host", publish: tuple[tuple[str, int, int], ...] = (),
            mounts: tuple[Mount, ...] = (), env: dict[str, str] | None = None) -> Iterator:
    """A server in a container on the node for the length of a block (tools.ServingOnNode's
    container twin): stopped and removed on exit, whatever happened."""
    wrapped, entry = wrap(transport, node, runtime, image, argv, label, network=network, publish=publish,
                          mounts=mounts, env=env)
    try:
        with tools.ServingOnNode(transport, node, wrapped, log, label,
                                 env={**transport.base_env(node), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}) as session:
            yield session
    finally:
        remove(transport, node, entry)


def leftover_names() -> list[str]:
    """sbclab's containers in this host's podman store (the leak check's count); none without podman."""
    if not shutil.which("podman") or not (paths.cache_dir() / "containers" / "storage").exists():
        return []
    try:
        done = subprocess.run(["podman", *podman_store(), "ps", "--all", "--format", "{{.Names}}",
                               "--filter", "name=^sbclab-"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line for line in done.stdout.split() if line.startswith("sbclab-")]
