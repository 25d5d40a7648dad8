"""Free ports on the loopback interface, for the servers a session starts (switch targets' gRPC
and Thrift ports, the controller's job API) and for tests and benchmarks that start them.

A port found free may be taken by another process before its server binds it; whoever can bind
port 0 and report the port it got (as the in-process P4Runtime server does) should do that instead.
Ports are chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where no
outgoing connection is given one meanwhile (CI: a switch's gRPC port taken that way, "already in
use"), and never twice by one process.
"""
from __future__ import annotations

import random
import socket

HOST = "127.0.0.1"


EPHEMERAL_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
LOWEST = 10000
_given: set[int] = set()          # ports this process handed out already


def ephemeral_start(path: str = EPHEMERAL_FILE) -> int:
    """The first port the kernel gives outgoing connections (32768 when it cannot be read)."""
    try:
        with open(path) as f:
            first = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
    return first if 1024 < first <= 65535 else 32768


def free_port(count: int = 1, kind: socket.SocketKind = socket.SOCK_STREAM, host: str = HOST) -> int:
    """The first of `count` consecutive ports that `kind` sockets (TCP by default) can bind on
    `host` right now, below the ephemeral range (or anywhere when that leaves too few); a block
    serves servers numbered from a base port (gRPC base + device id)."""
    if not 1 <= count <= 1000:
        raise ValueError(f"count must be in 1..1000, got {count}")
    top = ephemeral_start()
    lo, hi = (LOWEST, top - count) if top - count - LOWEST >= 1000 else (1024, 65535 - count)
    for _ in range(500):
        base = random.randint(lo, hi)
        if any(p in _given for p in range(base, base + count)):
            continue
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, kind)
                socks.append(s)
                s.bind((host, port))
            _given.update(range(base, base + count))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise OSError(f"no block of {count} free ports on {host}")


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port (a server is up)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
