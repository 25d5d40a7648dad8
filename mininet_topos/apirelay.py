"""Reach the controller's job API from inside Mininet hosts, out of band.

Mininet hosts live in their own network namespaces, so `127.0.0.1:8090` inside a host is not the
controller, and the data network only carries what the P4 switch forwards. The relay opens a
listening socket *inside each host's namespace* on the controller's address (setns on one thread,
the socket keeps its namespace) and forwards every connection to the controller in the root
namespace. Workers therefore use the same `--controller 127.0.0.1:8090` inside and outside
Mininet, and management traffic never crosses (or disturbs) the P4 switch.

The forwarded connection leaves from a per-host loopback source address (`api_source` in the
topology description, 127.100.0.<host index>), so the controller can tell which host is calling.
"""
import ctypes
import os
import socket
import threading

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


class RelayError(RuntimeError):
    pass


def api_source(index: int) -> str:
    """The loopback source address the relay uses for host number index."""
    return f"127.100.{index >> 8}.{index & 0xFF}"


def _setns(fd: int):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise RelayError(f"setns: {os.strerror(err)}")


def listen_in_netns(netns_path: str, addr: tuple[str, int]) -> socket.socket:
    """A listening TCP socket created inside the network namespace at netns_path."""
    result = {}

    def create():
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(netns_path, os.O_RDONLY)
        try:
            _setns(target)
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(addr)
                sock.listen(64)
                result["sock"] = sock
            finally:
                _setns(own)
        except Exception as err:  # reported to the caller's thread
            result["error"] = err
        finally:
            os.close(own)
            os.close(target)

    # A throwaway thread: if switching back ever failed, no other thread is left in the host's netns.
    thread = threading.Thread(target=create, name="p4reduce-netns")
    thread.start()
    thread.join()
    if "error" in result:
        raise RelayError(f"cannot listen on {addr[0]}:{addr[1]} in {netns_path}: {result['error']}")
    return result["sock"]


def _pump(src: socket.socket, dst: socket.socket):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


class ApiRelay:
    """relay = ApiRelay(("127.0.0.1", 8090)); relay.add_host(netns, index); ...; relay.close()."""

    def __init__(self, controller_addr: tuple[str, int], listen_addr: tuple[str, int] | None = None):
        self.controller_addr = controller_addr
        self.listen_addr = listen_addr or controller_addr
        self._listeners: dict[str, socket.socket] = {}
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()

    def add_host(self, netns_path: str, index: int):
        sock = listen_in_netns(netns_path, self.listen_addr)
        self._listeners[netns_path] = sock
        thread = threading.Thread(target=self._accept, args=(sock, api_source(index)),
                                  name=f"p4reduce-relay-{index}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self, listener: socket.socket, source: str):
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                upstream.bind((source, 0))
                upstream.settimeout(5)
                upstream.connect(self.controller_addr)
                upstream.settimeout(None)
            except OSError:
                client.close()       # the controller is not up: the worker sees a refused call
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def close(self):
        self._closed.set()
        for sock in self._listeners.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._listeners.clear()
