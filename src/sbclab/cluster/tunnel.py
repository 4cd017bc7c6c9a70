"""A port on this host carried over an SSH connection to a port a board listens on.

On boards the daemons' web UIs and REST APIs listen on the board's loopback only (unauthenticated
YARN REST is a known way to run code on a cluster), so sbclab reads them the way an administrator
would, through SSH port forwarding: a listener on 127.0.0.1 here whose every connection becomes a
`direct-tcpip` channel of the board's SSH connection.
"""

import select
import socket
import threading

import paramiko


class Tunnel:
    def __init__(self, transport: paramiko.Transport, host: str, port: int):
        self.transport, self.host, self.port = transport, host, port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.local_port = self.listener.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, name=f"tunnel to {host}:{port}", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, peer = self.listener.accept()
            except OSError:
                return  # closed
            try:
                channel = self.transport.open_channel("direct-tcpip", (self.host, self.port), peer, timeout=10)
            except (paramiko.SSHException, OSError):
                client.close()  # the caller sees a refused connection, as it would without a tunnel
                continue
            threading.Thread(target=_pump, args=(client, channel), daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self.listener.close()


def _pump(client: socket.socket, channel: paramiko.Channel) -> None:
    """Bytes both ways until either side closes."""
    try:
        while True:
            ready, _, _ = select.select([client, channel], [], [], 300)
            if not ready:
                return
            if client in ready:
                data = client.recv(1 << 16)
                if not data:
                    return
                channel.sendall(data)
            if channel in ready:
                data = channel.recv(1 << 16)
                if not data:
                    return
                client.sendall(data)
    except OSError:
        return
    finally:
        channel.close()
        client.close()
