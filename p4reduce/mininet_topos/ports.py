"""Free ports on the loopback interface, for the servers a session starts (switch targets' gRPC
and Thrift ports, the controller's job API) and for tests and benchmarks that start them.

A port found free may be taken by another process before its server binds it; whoever can bind
port 0 and report the port it got (as the in-process P4Runtime server does) should do that instead.
"""
from __future__ import annotations

import random
import socket

HOST = "127.0.0.1"


def free_port(count: int = 1, kind: socket.SocketKind = socket.SOCK_STREAM, host: str = HOST) -> int:
    """The first of `count` consecutive ports that `kind` sockets (TCP by default) can bind on
    `host` right now; a block serves servers numbered from a base port (gRPC base + device id)."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if count == 1:
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind((host, 0))
            return s.getsockname()[1]
    for _ in range(200):
        base = random.randint(20000, 60000 - count)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, kind)
                socks.append(s)
                s.bind((host, port))
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
