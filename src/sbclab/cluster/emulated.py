"""Emulated nodes: one network namespace, cgroup and loop-mounted disk per node, shaped to its profile.

Each node is a namespace on a private bridge with its own address and its own /etc/hosts (bind
mounted by `ip netns exec`) and host name (a UTS namespace), so Hadoop and Spark advertise the
node's address the way they would on a board. Its link is rate-limited with tc on both ends of the
veth pair, its processes run in a cgroup with a CPU quota and memory limit, and its data lives on
its own ext4 filesystem on its own loop device, throttled to the medium's figures.
"""

import ipaddress
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import psutil

from .. import profiles
from ..errors import SbclabError
from . import cgroups, containers, dirty, reaper, system
from .host_setting import HostSetting
from .local import LocalTransport
from .spec import NodeSpec
from .state import ClusterState
from .transport import MpiNetworks, NodeParts

ETC_NETNS = Path("/etc/netns")
# The kernel counts a thread's time blocked on block I/O (a node's own iowait) only when asked.
DELAY_ACCOUNTING = Path("/proc/sys/kernel/task_delayacct")
BALANCER_START_S = 120


# ext4's block group on a board: 32,768 blocks of 4 KiB (128 MiB). fstrim trims the whole free space
# of every group that saw a free since the last trim, so what it reports after a job is the job's
# bytes plus part of each group it touched; with groups a board's size, a node scaled to a few MB a
# job reported hundreds of MB (a 37.7 MB TeraSort on eight Pi 5 nodes: 2.0 GB, 53 times its input).
BOARD_BLOCKS_PER_GROUP = 32768
LEAST_BLOCKS_PER_GROUP = 256  # mke2fs's floor (a multiple of 8)


def blocks_per_group(scale_factor: float) -> int:
    """The ext4 block group of a node scaled by the factor: the board's scaled like its data, so a job
    touches as many groups on the node as on the board and fstrim's excess keeps its share."""
    scaled = int(BOARD_BLOCKS_PER_GROUP * min(1.0, scale_factor)) // 8 * 8
    return max(LEAST_BLOCKS_PER_GROUP, min(BOARD_BLOCKS_PER_GROUP, scaled))


def _tbf_args(rate_mbit: float) -> list[str]:
    rate_bytes = rate_mbit * 1e6 / 8
    # The bucket must hold a whole GSO super-packet (64 KB) or large sends stall.
    burst = max(256 * 1024, int(rate_bytes / 100))
    return ["tbf", "rate", f"{rate_mbit:.3f}mbit", "burst", str(burst), "latency", "100ms"]



def _routed_networks(routes: list[str]) -> list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    """(the route, its destination) of each of the host's routes but the default one."""
    found = []
    for line in routes:
        dest = line.split()[0] if line.split() else "default"
        if dest == "default":
            continue
        try:
            found.append((line, ipaddress.ip_network(dest, strict=False)))
        except ValueError:
            continue
    return found

class EmulatedTransport(LocalTransport):
    name = "emulated"
    shaped = True
    own_filesystems = True

    # Interface names are at most 15 characters; the cluster name is at most 8.
    def bridge(self) -> str:
        return f"sb-{self.spec.name}-br"

    def netns(self, node: NodeSpec) -> str:
        return f"sbclab-{self.spec.name}-{node.name}"

    def _veth(self, node: NodeSpec) -> str:
        return f"sb-{self.spec.name}-{self.spec.nodes.index(node)}"

    def node_disk(self, node: NodeSpec) -> Path:
        return self.node_dir(node) / "disk"

    def host_address(self) -> str:
        return str(next(ipaddress.ip_network(self.spec.subnet).hosts()))

    # --- creation -------------------------------------------------------------------------

    def _preflight(self) -> None:
        if os.geteuid() != 0:
            raise SbclabError("The emulated backend needs root (namespaces, cgroups, loop devices).",
                              "Run as root, or use --backend processes.")
        system.require_tools("ip", "tc", "losetup", "mkfs.ext4", "mount", "umount", "unshare")
        cgroups.version()
        net = ipaddress.ip_network(self.spec.subnet)
        routes = system.run("ip", "-o", "route", "show").stdout.splitlines()
        taken = _routed_networks(routes)
        for line, routed in taken:
            if routed.overlaps(net):
                free = next((f"{candidate}" for candidate in (ipaddress.ip_network(f"10.{i}.0.0/24") for i in range(200, 255))
                             if not any(candidate.overlaps(r) for _, r in taken)), None)
                raise SbclabError(f"Subnet {net} overlaps the host route '{line.strip()}'.",
                                  (f"Choose another with --subnet, e.g. {free}, " if free else "Choose another with --subnet, ")
                                  + "or remove the old cluster with 'sbclab cluster down --force'.")
        need = sum(n.disk_bytes for n in self.spec.nodes)
        root = self.state.root
        root.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(root).free
        if free < need * 1.1:
            raise SbclabError(
                f"Not enough free disk under {root} for the node filesystems: {need / 2**30:.1f} GiB needed, "
                f"{free / 2**30:.1f} GiB free.",
                "Free space, give a smaller --disk-size, or set SBCLAB_HOME to a larger disk.")

    def create_nodes(self) -> None:
        self._preflight()
        self._share_disk_mounts()
        self._enable_delay_accounting()
        self._create_bridge()
        for node in self.spec.nodes:
            self._create_network(node)
            self._create_cgroup(node)
            self._create_disk(node)

    def finish_shaping(self) -> None:
        """Each node's CPU quota and virtual cores, once its daemons serve. Until then the nodes share
        this host's cores as they come: on a 2-core host a calibrated Pi 5 node gets a quarter of a
        core, split into four virtual cores, and Hadoop's five daemons took over a minute to serve;
        nothing is measured before this, and everything after runs on the node's virtual cores."""
        if any(e.get("label") in ("vcpu-balancer", "page-cache-governor") for e in self.state.of_kind("process")):
            return  # shaped already (limit_cpu alone may be done again)
        for node in self.spec.nodes:
            # A one-core board's node is its one core already: a lone thread cannot outrun it, and a
            # balancer over one core per node would only spend host CPU reading every thread's time.
            speeds = profiles.board(node.board).core_speeds
            cgroups.NodeCgroup(self.spec.name, node.name).limit_cpu(node.cpu_cores, speeds if len(speeds) > 1 else ())
        self._start_vcpu_balancer()
        self._start_page_cache_governor()

    def _enable_delay_accounting(self) -> None:
        """A node's iowait is its threads' block-I/O delay, which the kernel counts only when asked: a
        switch of the whole host, held while any cluster on it needs it (host_setting.py)."""
        self.state.record("host_setting", path=str(DELAY_ACCOUNTING))
        # An older kernel has no switch: nodes are sampled without iowait, and the samples say so.
        HostSetting(DELAY_ACCOUNTING, "1").hold(self.state.root)

    def _create_bridge(self) -> None:
        br = self.bridge()
        prefix = ipaddress.ip_network(self.spec.subnet).prefixlen
        self.state.record("bridge", name=br)
        system.run("ip", "link", "add", br, "type", "bridge")
        system.run("ip", "addr", "add", f"{self.host_address()}/{prefix}", "dev", br)
        system.run("ip", "link", "set", br, "up")

    def _create_network(self, node: NodeSpec) -> None:
        ns, veth = self.netns(node), self._veth(node)
        prefix = ipaddress.ip_network(self.spec.subnet).prefixlen
        self.state.record("etc_netns", path=str(ETC_NETNS / ns))
        (ETC_NETNS / ns).mkdir(parents=True, exist_ok=True)
        hosts = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
        hosts += [f"{n.address} {n.name}" for n in self.spec.nodes]
        (ETC_NETNS / ns / "hosts").write_text("\n".join(hosts) + "\n")
        self.state.record("netns", name=ns)
        system.run("ip", "netns", "add", ns)
        self.state.record("veth", name=veth)
        system.run("ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p")
        system.run("ip", "link", "set", veth + "p", "netns", ns)
        system.run("ip", "-n", ns, "link", "set", veth + "p", "name", "eth0")
        system.run("ip", "-n", ns, "addr", "add", f"{node.address}/{prefix}", "dev", "eth0")
        system.run("ip", "-n", ns, "link", "set", "eth0", "up")
        system.run("ip", "-n", ns, "link", "set", "lo", "up")
        system.run("ip", "link", "set", veth, "master", self.bridge())
        system.run("ip", "link", "set", veth, "up")
        # Shape both directions: host side limits traffic to the node, eth0 traffic from it.
        system.run("tc", "qdisc", "add", "dev", veth, "root", *_tbf_args(node.link_mbit_s))
        system.run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", *_tbf_args(node.link_mbit_s))

    def _create_cgroup(self, node: NodeSpec) -> None:
        group = cgroups.NodeCgroup(self.spec.name, node.name)
        self.state.record("cgroup", node=node.name)
        group.create(node.memory_bytes)

    @staticmethod
    def _board_cores(node: NodeSpec) -> int:
        return profiles.board(node.board).cores

    def _start_vcpu_balancer(self) -> None:
        """One balancer for the cluster's virtual cores (see vcpus.py)."""
        groups = [cgroups.NodeCgroup(self.spec.name, n.name) for n in self.spec.nodes]
        if not any(g.vcpu_dirs() for g in groups):
            return
        ready = self.state.root / "vcpu-balancer.ready"
        ready.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "sbclab.cluster.vcpus", "--state", str(self.state.path), "--ready", str(ready)]
        for group in groups:
            argv += ["--node-group", str(group.cpu_dir())]
        proc = self._spawn_host_process(argv, "vcpu-balancer")
        # Nothing is measured before the threads are placed: on a slow host (a board as host, a loaded
        # machine, a virtual machine without KVM) Python alone takes seconds to start, and a job started
        # meanwhile ran with the whole node's quota on one thread.
        deadline = time.monotonic() + BALANCER_START_S
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SbclabError(f"The virtual-core balancer did not start within {BALANCER_START_S} s "
                                  f"(exit {proc.poll()}).", "Run 'sbclab cluster down --force' and try again; "
                                  "'python -m sbclab.cluster.vcpus --help' shows it runs here.")
            time.sleep(0.1)

    def _start_page_cache_governor(self) -> None:
        """One governor for the cluster's page caches (see pagecache.py); at full scale there is nothing to scale."""
        if self.spec.scale.factor >= 1.0:
            return
        groups = [cgroups.NodeCgroup(self.spec.name, n.name) for n in self.spec.nodes]
        argv = [sys.executable, "-m", "sbclab.cluster.pagecache", "--state", str(self.state.path),
                "--factor", str(self.spec.scale.factor)]
        if groups[0].version == 2:
            argv.append("--v2")
        for node, group in zip(self.spec.nodes, groups):
            argv += ["--node", f"{group.memory_dir()}:{node.memory_bytes}"]
        self._spawn_host_process(argv, "page-cache-governor")

    def _spawn_host_process(self, argv: list[str], label: str) -> subprocess.Popen:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.state.record("process", node="host", pid=proc.pid, create_time=reaper.started(proc.pid),
                          label=label)
        return proc

    def _share_disk_mounts(self) -> None:
        """The nodes' folder as a shared mount of its own, so that a node's disk, once unmounted here, is
        unmounted in every copy of this host's mounts too. `ip netns exec` gives each process it starts
        such a copy (as slaves of this one); under a private parent, a copy made while this cluster's
        disks were mounted (by another cluster's process) held them and their loop devices until that
        process ended."""
        folder = self.state.root / "nodes"
        folder.mkdir(parents=True, exist_ok=True)
        self.state.record("mount", path=str(folder))
        system.run("mount", "--bind", str(folder), str(folder))
        system.run("mount", "--make-shared", str(folder))

    def _create_disk(self, node: NodeSpec) -> None:
        image = self.node_dir(node) / "disk.img"
        mountpoint = self.node_disk(node)
        mountpoint.mkdir(parents=True, exist_ok=True)
        self.state.record("image", path=str(image))
        with open(image, "wb") as f:
            f.truncate(node.disk_bytes)
        system.run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1",
                   "-g", str(blocks_per_group(self.spec.scale.factor)),
                   "-L", f"{self.spec.name}-{node.name}"[:16], str(image))
        loop_entry = self.state.record("loop", device=None, image=str(image))
        # Direct I/O keeps the node's reads and writes out of the host page cache a second time.
        device = system.run("losetup", "--find", "--show", "--direct-io=on", str(image)).stdout.strip()
        loop_entry["device"] = device
        self.state.save()
        self.state.record("mount", path=str(mountpoint))
        system.run("mount", "-o", "noatime", device, str(mountpoint))
        major_minor = self._major_minor(device)
        group = cgroups.NodeCgroup(self.spec.name, node.name)
        self.state.record("throttle", device=major_minor)
        cgroups.throttle_device(group, major_minor, int(node.disk_read_bytes_s), int(node.disk_write_bytes_s),
                                max(1, int(node.disk_read_iops)), max(1, int(node.disk_write_iops)))
        if node.dirty_bytes and dirty.supported(major_minor):
            entry = self.state.record("dirty_limit", device=major_minor, previous=None)
            entry["previous"] = dirty.limit(major_minor, node.dirty_bytes)
            self.state.save()

    @staticmethod
    def _major_minor(device: str) -> str:
        st = os.stat(device)
        return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"

    # --- running ------------------------------------------------------------------------

    def launch(self, node: NodeSpec, argv: list[str], enter="node"):
        """Into the node's network namespace with its host name, then its cgroup; a sampler enters
        only the cgroup (the node pays for it, and the kernel's taskstats interface answers only in
        the host's network namespace, where the veth's host end counts the node's traffic); a
        machine of its own played by a node (a test board's sshd) only the network."""
        group = cgroups.NodeCgroup(self.spec.name, node.name)
        if enter == "limits":
            return argv, group.join
        wrapped = ["ip", "netns", "exec", self.netns(node), "unshare", "--uts", "--",
                   "sh", "-c", 'hostname "$0" && exec "$@"', node.name, *argv]
        return wrapped, (group.join if enter == "node" else None)

    def container_runtimes(self) -> tuple[str, ...]:
        # Docker's daemon would start the containers outside the node's namespace and cgroup.
        return ("podman",)

    def container_entry(self, node: NodeSpec) -> list[str]:
        """Back to this host's mount namespace, keeping the node's network, host name and cgroup:
        `ip netns exec` gives a node's commands a mount namespace of their own, where the cgroup
        hierarchies are hidden under the namespace's sysfs and whatever podman mounts (a container's
        root, its network namespace file) would vanish with the node's last process, leaving podman's
        records pointing at nothing. In this host's namespace podman keeps its mounts as it does
        anywhere, and removing a container from any node command finds them."""
        return ["nsenter", f"--mount=/proc/{os.getpid()}/ns/mnt", "--"]

    def mpi_networks(self, nodes: list[NodeSpec]) -> MpiNetworks:
        """The cluster network only: this host's bridge address is on it, where mpirun listens."""
        return MpiNetworks(ranks=[str(self.spec.subnet)], daemons=[str(self.spec.subnet)])

    @contextmanager
    def short_cpu_periods(self, nodes: list[NodeSpec]):
        """Short CFS periods on the nodes for the block, the same shares (see cgroups.CFS_PERIOD_US)."""
        groups = [cgroups.NodeCgroup(self.spec.name, n.name) for n in nodes]
        period = cgroups.polling_period_us(min(g.smallest_share() for g in groups))
        changed = []
        try:
            for group in groups:
                saved = group.cpu_limits()
                changed.append((group, saved))
                group.apply_limits(group.on_period(period))
            yield period
        finally:
            for group, saved in changed:
                try:
                    group.apply_limits(saved)
                except (SbclabError, OSError):
                    pass  # the node is already gone

    # --- measuring ------------------------------------------------------------------------

    def parts(self, node: NodeSpec) -> NodeParts:
        """Each node's own figures: its cgroup's CPU and memory, its loop device, its veth."""
        group = cgroups.NodeCgroup(self.spec.name, node.name)
        if group.version == 2:
            folder = str(cgroups.ROOT / group.relative)
            cgroup = {"version": 2, "unified": folder, "procs": f"{folder}/cgroup.procs"}
        else:
            cgroup = {"version": 1, "cpuacct": str(cgroups.ROOT / "cpuacct" / group.relative),
                      "memory": str(cgroups.ROOT / "memory" / group.relative),
                      "procs": str(cgroups.ROOT / "memory" / group.relative / "cgroup.procs")}
        return NodeParts(
            scope="node", cores=self._board_cores(node), cpu_capacity=node.cpu_cores, memory_limit=node.memory_bytes,
            cgroup=cgroup, device=self._loop_device(node),
            # The throttle holds requests before the loop device counts them busy, so the medium's
            # load is read as throughput against these limits (series.py).
            disk_limits={"read_bytes_s": node.disk_read_bytes_s, "write_bytes_s": node.disk_write_bytes_s,
                         "read_iops": node.disk_read_iops, "write_iops": node.disk_write_iops},
            interface={"name": self._veth(node), "peer_side": True})

    def node_processes(self, node: NodeSpec, pattern: str) -> list[int]:
        """The node's processes are those in its cgroup (its containers' included)."""
        wanted = re.compile(pattern)
        found = []
        for pid in cgroups.NodeCgroup(self.spec.name, node.name).pids():
            try:
                if wanted.search(" ".join(psutil.Process(pid).cmdline())):
                    found.append(pid)
            except psutil.Error:
                continue
        return found

    def memory_group(self, node: NodeSpec) -> cgroups.NodeCgroup:
        return cgroups.NodeCgroup(self.spec.name, node.name)

    def disk_throttle(self, node: NodeSpec, share: float) -> list[tuple[Path, str]]:
        """The writes that give the node's disk this share of its medium's rates and IOPS (1: as made)."""
        device = self._loop_device(node)
        if device is None:
            raise SbclabError(f"{node.name} has no disk device of its own.", "Bring the cluster up again.")
        return cgroups.throttle_writes(cgroups.NodeCgroup(self.spec.name, node.name), self._major_minor(f"/dev/{device}"),
                                       max(1, int(node.disk_read_bytes_s * share)), max(1, int(node.disk_write_bytes_s * share)),
                                       max(1, int(node.disk_read_iops * share)), max(1, int(node.disk_write_iops * share)))

    def _loop_device(self, node: NodeSpec) -> str | None:
        image = str(self.node_dir(node) / "disk.img")
        for entry in self.state.of_kind("loop"):
            if entry.get("image") == image and entry.get("device"):
                return Path(entry["device"]).name
        return None

    def cgroup_procs_files(self) -> list[Path]:
        files = []
        for node in self.spec.nodes:
            files += cgroups.NodeCgroup(self.spec.name, node.name).procs_files()
        return files

    def live_processes(self) -> list[psutil.Process]:
        in_groups = [proc for procs in self.cgroup_procs_files() for proc in reaper.in_cgroup(procs)]
        return super().live_processes() + in_groups

    # --- removal ------------------------------------------------------------------------

    def destroy(self) -> list[str]:
        leftovers = [f"process {p.pid} ({' '.join(p.cmdline()[:3])})" for p in self._stop_everything()]
        for entry in reversed(list(self.state.resources)):
            if self._remove(entry):
                self.state.forget(entry)
            else:
                leftovers.append(f"{entry['kind']} {entry.get('name') or entry.get('path') or entry.get('device') or entry.get('node')}")
        return leftovers

    def _stop_everything(self):
        survivors = self.stop_processes()
        in_groups = []
        for procs in self.cgroup_procs_files():
            in_groups += reaper.in_cgroup(procs)
        survivors += reaper.stop(in_groups, grace_s=1)
        if survivors:
            # A process killed while writing through a throttled disk sleeps uninterruptibly until
            # its writes drain at the node's rate; without the throttle they drain at the host's.
            for entry in self.state.of_kind("throttle"):
                cgroups.unthrottle_device(entry["device"])
            survivors = reaper.stop(survivors, grace_s=1)
        return survivors

    def _remove_container(self, entry: dict) -> bool:
        """Removed from inside its node, where podman's bridge and port rules live; recorded after the
        namespace, it goes before it. Should the namespace be gone, an empty one stands in, so the
        network teardown cannot touch this host's own bridge or firewall rules."""
        node = next((n for n in self.spec.nodes if n.name == entry["node"]), None)
        removal = containers.remove_argv(entry["runtime"], entry.get("options", ()), entry["name"])
        if node is not None and Path(f"/var/run/netns/{self.netns(node)}").exists():
            argv, prepare = self.launch(node, [*self.container_entry(node), *removal], enter="network")
        else:
            argv, prepare = ["unshare", "--net", "--", *removal], None
        try:
            done = subprocess.run(argv, capture_output=True, timeout=120, preexec_fn=prepare)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 or b"no such container" in done.stderr.lower()

    def _remove(self, entry: dict) -> bool:
        kind = entry["kind"]
        if kind == "throttle":
            cgroups.unthrottle_device(entry["device"])
            return True
        if kind == "dirty_limit":
            return entry.get("previous") is None or dirty.restore(entry["device"], entry["previous"])
        if kind == "mount":
            path = entry["path"]
            if not _mount_point(path):
                return True
            return system.quietly("umount", path) or system.quietly("umount", "-l", path)
        if kind == "loop":
            device = entry.get("device")
            if device:
                system.quietly("losetup", "-d", device)
            # A crash between losetup and recording the device: find it by its backing file.
            listed = system.run("losetup", "-j", entry["image"], check=False).stdout
            for line in listed.splitlines():
                system.quietly("losetup", "-d", line.split(":")[0])
            # A detach is deferred while something (udev, another losetup, the last process of a lazily
            # unmounted disk) still holds the device open; on a busy host that has taken over 5 s.
            deadline = time.monotonic() + 30
            while system.run("losetup", "-j", entry["image"], check=False).stdout.strip():
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)
            return True
        if kind == "image":
            Path(entry["path"]).unlink(missing_ok=True)
            return True
        if kind == "container":
            return self._remove_container(entry)
        if kind == "cgroup":
            return cgroups.NodeCgroup(self.spec.name, entry["node"]).remove()
        if kind == "veth":
            system.quietly("ip", "link", "del", entry["name"])
            return not Path(f"/sys/class/net/{entry['name']}").exists()
        if kind == "netns":
            system.quietly("ip", "netns", "del", entry["name"])
            return not Path(f"/var/run/netns/{entry['name']}").exists()
        if kind == "bridge":
            system.quietly("ip", "link", "del", entry["name"])
            return not Path(f"/sys/class/net/{entry['name']}").exists()
        if kind == "etc_netns":
            shutil.rmtree(entry["path"], ignore_errors=True)
            return not Path(entry["path"]).exists()
        if kind == "host_setting":
            return HostSetting(Path(entry["path"]), "1").release(self.state.root)
        if kind == "sysctl":  # recorded by an sbclab before host settings were held in common
            if not [n for n in ClusterState.names() if n != self.spec.name]:
                try:
                    Path(entry["path"]).write_text(entry["previous"] + "\n")
                except OSError:
                    return False
            return True
        if kind == "process":
            return True
        return True


def _mount_point(path: str) -> bool:
    """Whether something is mounted at path (a bind of a folder onto itself included, which
    os.path.ismount cannot tell: same device on both sides)."""
    escaped = path.replace("\\", "\\134").replace(" ", "\\040")
    return any(line.split()[4] == escaped for line in Path("/proc/self/mountinfo").read_text().splitlines())
