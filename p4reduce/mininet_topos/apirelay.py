"""Reach the controller's job API from inside Mininet hosts, out of band.

Mininet hosts live in their own network namespaces, so `127.0.0.1:8090` inside a host is not the
controller, and the data network only carries what the P4 switch forwards. The relay opens a
listening socket *inside each host's namespace* on the controller's address (setns on one thread,
the socket keeps its namespace) and forwards every connection to the controller in the root
namespace. Workers therefore use the same `--controller 127.0.0.1:8090` inside and outside
Mininet, and management traffic never crosses (or disturbs) the P4 switch.

The forwarded connection leaves from a per-host loopback source address (`api_source` in the
topology description, 127.100.0.<host index>), so the controller can tell which host is calling.

Credentials (docs/job-api.md, "Security model"): a request that carries its own `Authorization` header
passes through untouched. The tooling that created a job may *grant* it to some hosts
(`grant(job, credential, hosts)`): a request from such a host for that job (`/v1/jobs/NAME/...`) that
carries no credential gets the job's credential added, so workers started in those hosts need only the job's
name, as before; hosts without a grant get nothing added (the API answers them 401). The relay
never holds or adds the admin credential. Every connection is bounded: the request head must arrive
within HEAD_TIMEOUT_S and HEAD_LIMIT bytes, and a host may hold MAX_CONNECTIONS_PER_HOST at once.
"""
import ctypes
import os
import socket
import threading
import urllib.parse
from collections.abc import Iterable
from typing import Any

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)

HEAD_LIMIT = 16 * 1024          # request line + headers
HEAD_TIMEOUT_S = 10.0
MAX_CONNECTIONS_PER_HOST = 64
ALL_HOSTS = None


class RelayError(RuntimeError):
    pass


def api_source(index: int) -> str:
    """The loopback source address the relay uses for host number index."""
    return f"127.100.{index >> 8}.{index & 0xFF}"


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise RelayError(f"setns: {os.strerror(err)}")


def listen_in_netns(netns_path: str, addr: tuple[str, int]) -> socket.socket:
    """A listening TCP socket created inside the network namespace at netns_path."""
    result: dict[str, Any] = {}

    def create() -> None:
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


def _pump(src: socket.socket, dst: socket.socket) -> None:
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


def read_head(sock: socket.socket, limit: int = HEAD_LIMIT) -> bytes | None:
    """Bytes up to and including the end of the request head (and whatever followed in the same
    reads), or None if the head is over `limit` bytes or the client stops sending."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > limit:
            return None
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    head_end = data.index(b"\r\n\r\n")
    return data if head_end <= limit else None


def job_of_request(head: bytes) -> str | None:
    """The job name a request head is about (`/v1/jobs/NAME[/...]`), or None."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3:
        return None
    path = parts[1].split("?", 1)[0].split("/")
    if len(path) < 4 or path[:3] != ["", "v1", "jobs"] or not path[3]:
        return None
    try:
        return urllib.parse.unquote(path[3], errors="strict")
    except UnicodeDecodeError:
        return None


def has_authorization(head: bytes) -> bool:
    lines = head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]
    return any(line.split(b":", 1)[0].strip().lower() == b"authorization" for line in lines)


def with_credential(head: bytes, credential: str) -> bytes:
    """The request with an Authorization header added after its request line."""
    line, rest = head.split(b"\r\n", 1)
    return line + b"\r\nAuthorization: Bearer " + credential.encode("ascii") + b"\r\n" + rest


class ApiRelay:
    """relay = ApiRelay(("127.0.0.1", 8090)); relay.add_host(netns, index); relay.grant(job, credential,
    [index, ...]); ...; relay.close()."""

    def __init__(self, controller_addr: tuple[str, int], listen_addr: tuple[str, int] | None = None):
        self.controller_addr = controller_addr
        self.listen_addr = listen_addr or controller_addr
        self._listeners: dict[str, socket.socket] = {}
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._grants: dict[int | None, dict[str, str]] = {}   # host index (None: all) -> job -> credential
        self._busy: dict[int, threading.BoundedSemaphore] = {}

    def add_host(self, netns_path: str, index: int) -> None:
        sock = listen_in_netns(netns_path, self.listen_addr)
        self._listeners[netns_path] = sock
        self._busy[index] = threading.BoundedSemaphore(MAX_CONNECTIONS_PER_HOST)
        thread = threading.Thread(target=self._accept, args=(sock, index),
                                  name=f"p4reduce-relay-{index}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def grant(self, job: str, credential: str, hosts: Iterable[int] | None = ALL_HOSTS) -> None:
        """Requests for `job` from `hosts` (host indices; None: every host) that carry no credential
        get `credential` added."""
        with self._lock:
            for index in ([ALL_HOSTS] if hosts is ALL_HOSTS else list(hosts)):
                self._grants.setdefault(index, {})[job] = credential

    def revoke(self, job: str) -> None:
        with self._lock:
            for grants in self._grants.values():
                grants.pop(job, None)

    def credential_for(self, index: int, job: str | None) -> str | None:
        if job is None:
            return None
        with self._lock:
            return self._grants.get(index, {}).get(job) or self._grants.get(ALL_HOSTS, {}).get(job)

    def _accept(self, listener: socket.socket, index: int) -> None:
        busy = self._busy[index]
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if not busy.acquire(blocking=False):
                client.close()      # this host holds MAX_CONNECTIONS_PER_HOST already
                continue
            threading.Thread(target=self._serve, args=(client, index, busy), daemon=True).start()

    def _serve(self, client: socket.socket, index: int, busy: threading.BoundedSemaphore) -> None:
        upstream = None
        try:
            upstream = self._open(client, index)
            if upstream is None:
                return
            forward = threading.Thread(target=_pump, args=(client, upstream), daemon=True)
            forward.start()
            _pump(upstream, client)
            try:        # the controller is done: stop waiting for more from the client
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            forward.join()
        finally:
            _close(client, upstream)
            busy.release()

    def _open(self, client: socket.socket, index: int) -> socket.socket | None:
        """Read the request head (bounded), add the granted credential, connect to the controller and
        send the head: the upstream socket, or None (the client's connection is then closed)."""
        try:
            client.settimeout(HEAD_TIMEOUT_S)
            head = read_head(client)
            if head is None:
                return None
            credential = None if has_authorization(head) else self.credential_for(index, job_of_request(head))
            if credential is not None:
                head = with_credential(head, credential)
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError:
            return None
        try:
            upstream.bind((api_source(index), 0))
            upstream.settimeout(5)
            upstream.connect(self.controller_addr)
            upstream.sendall(head)
            upstream.settimeout(None)
            client.settimeout(None)
            return upstream
        except OSError:      # the controller is not up: the worker sees a closed connection
            upstream.close()
            return None

    def close(self) -> None:
        self._closed.set()
        for sock in self._listeners.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._listeners.clear()


def _close(*socks: socket.socket | None) -> None:
    for s in socks:
        if s is not None:
            try:
                s.close()
            except OSError:
                pass
