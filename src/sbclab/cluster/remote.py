"""Commands on real boards over SSH (paramiko), in parallel across the inventory's hosts.

Host keys are checked against known_hosts (the user's, or one given): an unknown key is refused
unless the caller passes accept_new, which then records it; a key that differs from the recorded one
is always refused — that is what a man in the middle looks like. Authentication is by key or agent
only: no password is asked for, passed on or logged.

Commands are argument lists, joined with shlex quoting, so no value reaches the remote shell unquoted.
"""

import ipaddress
import logging
import shlex
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

import paramiko

from ..errors import SbclabError
from .inventory import Host
from .tunnel import Tunnel

# A board that cannot be reached is reported once, with its name and the fix (connect()); paramiko's
# transport thread would otherwise print its own traceback for it on stderr.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts").expanduser()
T = TypeVar("T")


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str
    stderr: str


class _Refuse(paramiko.MissingHostKeyPolicy):
    def missing_host_key(self, client, hostname, key):
        raise SbclabError(f"{hostname} offers a host key this machine has not seen ({key.get_name()} "
                          f"{key.fingerprint}).",
                          "Check the fingerprint on the board (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub) and "
                          "run again with --accept-new-host-keys, or add it to known_hosts yourself.")


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """Trust on first use, as OpenSSH's StrictHostKeyChecking=accept-new: recorded, never replaced."""

    def __init__(self, known_hosts: Path):
        self.known_hosts = known_hosts

    def missing_host_key(self, client, hostname, key):
        self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
        with self.known_hosts.open("a") as f:
            f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)


def _known_name(host: Host) -> str:
    return host.address if host.port == 22 else f"[{host.address}]:{host.port}"


class Connection:
    """One open SSH session to one board."""

    def __init__(self, host: Host, known_hosts: Path = DEFAULT_KNOWN_HOSTS, accept_new: bool = False,
                 timeout_s: float = 10):
        self.host = host
        client = paramiko.SSHClient()
        if known_hosts.exists():
            client.load_host_keys(str(known_hosts))
        client.set_missing_host_key_policy(_AcceptNew(known_hosts) if accept_new else _Refuse())
        try:
            client.connect(host.address, port=host.port, username=host.user,
                           key_filename=str(host.key_path) if host.key_path else None,
                           timeout=timeout_s, banner_timeout=timeout_s, auth_timeout=timeout_s,
                           allow_agent=True, look_for_keys=host.key_path is None)
        except paramiko.BadHostKeyException as err:
            client.close()
            raise SbclabError(f"{host.name} ({_known_name(host)}) offers a host key that differs from the one in "
                              f"{known_hosts}: got {err.key.fingerprint}, expected {err.expected_key.fingerprint}.",
                              "This is refused always. If the board was reinstalled, remove its old line "
                              f"(ssh-keygen -R '{_known_name(host)}' -f {known_hosts}) and check the new key.") from err
        except paramiko.AuthenticationException as err:
            client.close()
            raise SbclabError(f"{host.name}: SSH key authentication as '{host.user}' failed.",
                              "Install your public key on the board (ssh-copy-id) or set the host's "
                              "ansible_ssh_private_key_file; sbclab does not use passwords.") from err
        except (OSError, socket.timeout, paramiko.SSHException) as err:
            client.close()
            if isinstance(err, SbclabError):
                raise
            raise SbclabError(f"{host.name} ({host.address}:{host.port}) cannot be reached over SSH: {err}.",
                              "Check that the board is on, on the network, and runs sshd on that port.") from err
        self.client = client
        self._sftp: paramiko.SFTPClient | None = None
        self._tunnels: dict[tuple[str, int], Tunnel] = {}

    def run(self, argv: list[str], timeout_s: float = 60, stdin: str | None = None) -> Outcome:
        command = shlex.join(argv)
        try:
            chan_in, out, err = self.client.exec_command(command, timeout=timeout_s)
            if stdin is not None:
                chan_in.write(stdin)
                chan_in.channel.shutdown_write()
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
            return Outcome(out.channel.recv_exit_status(), stdout, stderr)
        except (socket.timeout, paramiko.SSHException) as err:
            raise SbclabError(f"{self.host.name}: '{command}' did not finish within {timeout_s:g} s ({err}).",
                              "Check the board's load and network.") from err

    def stream(self, argv: list[str], out: IO[bytes], timeout_s: float | None = None,
               stdin: IO[bytes] | None = None) -> int | None:
        """Run argv, its output and errors written to out as they come; its exit status, or None if
        it had not finished within timeout_s (it is then left running: the caller stops it)."""
        channel = self.client.get_transport().open_session()
        try:
            channel.set_combine_stderr(True)
            channel.exec_command(shlex.join(argv))
            if stdin is not None:
                for block in iter(lambda: stdin.read(1 << 20), b""):
                    channel.sendall(block)
                channel.shutdown_write()
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            channel.settimeout(0.5)
            while True:
                try:
                    data = channel.recv(1 << 16)
                except socket.timeout:
                    data = None
                if data:
                    out.write(data)
                    out.flush()
                elif data == b"":  # end of output; the exit status follows it
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    return channel.recv_exit_status() if channel.status_event.wait(left) else None
                if deadline is not None and time.monotonic() > deadline:
                    return None
        finally:
            channel.close()

    def attached(self, argv: list[str], out: IO[bytes], err: IO[bytes]) -> int:
        """Run argv with its output and errors copied to out and err as they come; its standard input
        stays open as long as this connection lives, so a command that waits for its end (_TIED in
        backends/ssh.py) learns when this process is gone, however it went."""
        channel = self.client.get_transport().open_session()
        try:
            channel.exec_command(shlex.join(argv))
            while True:
                moved = False
                if channel.recv_ready():
                    out.write(channel.recv(1 << 16))
                    out.flush()
                    moved = True
                if channel.recv_stderr_ready():
                    err.write(channel.recv_stderr(1 << 16))
                    err.flush()
                    moved = True
                if not moved:
                    if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                        return channel.recv_exit_status()
                    time.sleep(0.01)
        finally:
            channel.close()

    def sftp(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self.client.open_sftp()
        return self._sftp

    def tunnel(self, host: str, port: int) -> int:
        """A port on this host's loopback that reaches host:port as the board sees it (tunnel.py)."""
        key = (host, port)
        if key not in self._tunnels:
            self._tunnels[key] = Tunnel(self.client.get_transport(), host, port)
        return self._tunnels[key].local_port

    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()

    def shell(self, script: str, args: list[str], timeout_s: float = 60) -> Outcome:
        """A fixed sbclab script run by sh, fed on stdin so it needs no quoting; values go in as its
        arguments ($1, ...), quoted like every command."""
        return self.run(["sh", "-s", *args], timeout_s, stdin=script)

    def close(self) -> None:
        for tunnel in self._tunnels.values():
            tunnel.close()
        self._tunnels.clear()
        if self._sftp is not None:
            self._sftp.close()
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def address_towards(address: str) -> str:
    """This host's address on the way to `address` (the source the kernel's route picks)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((address, 9))  # UDP: no packet is sent, only the route chosen
        return probe.getsockname()[0]


def resolved_ipv4(address: str) -> str:
    """The IPv4 address a board's inventory address (an IP or a DNS name) stands for, here."""
    try:
        return str(ipaddress.IPv4Address(address))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(address, None, socket.AF_INET)[0][4][0]
    except OSError as err:
        raise SbclabError(f"{address} has no IPv4 address here ({err}).",
                          "Give the board's IPv4 address in the inventory.") from err


def smallest_network(addresses: list[str]) -> str:
    """The narrowest IPv4 network (CIDR) that holds every one of addresses: the bits the lowest and
    the highest share hold everything between them."""
    ips = [int(ipaddress.IPv4Address(a)) for a in addresses]
    prefix = 32 - (min(ips) ^ max(ips)).bit_length()
    return str(ipaddress.IPv4Network((min(ips), prefix), strict=False))


def in_parallel(items: list, work: Callable[[object], T], name: Callable[[object], str]) -> dict[str, T | SbclabError]:
    """work(item) for every item at once, by name; an item that fails gives its error instead of a
    result, so every board is tried and each failure can be reported with its board."""
    def one(item):
        try:
            return work(item)
        except SbclabError as err:
            return err

    with ThreadPoolExecutor(max_workers=min(16, max(1, len(items)))) as pool:
        return dict(zip(map(name, items), pool.map(one, items)))


def raise_first(results: dict[str, object], doing: str) -> None:
    """The first board's failure among in_parallel's results, naming how many more failed."""
    failed = {name: err for name, err in results.items() if isinstance(err, SbclabError)}
    if failed:
        name, err = next(iter(failed.items()))
        others = f" (and {len(failed) - 1} more board(s))" if len(failed) > 1 else ""
        raise SbclabError(f"{doing} failed on {name}{others}: {err.message}", err.hint)


def connect(hosts: list[Host], known_hosts: Path = DEFAULT_KNOWN_HOSTS,
            accept_new: bool = False) -> dict[str, "Connection | SbclabError"]:
    """A connection to every host at once, by name; a host that cannot be reached gives its error.
    The caller closes them."""
    return in_parallel(hosts, lambda host: Connection(host, known_hosts, accept_new), lambda host: host.name)
