"""Which network interface holds an address: what gloo must bind (in a Mininet host the host
name resolves to 127.0.0.1, and gloo would otherwise bind that and fail in connectFullMesh)."""
from __future__ import annotations

import fcntl
import socket
import struct

SIOCGIFADDR = 0x8915          # Linux ioctl: an interface's IPv4 address


def interface_of(ip: str) -> str | None:
    """The name of the network interface that holds IPv4 address ``ip`` (None if none does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                answer = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue                                   # no IPv4 address on this interface
            if socket.inet_ntoa(answer[20:24]) == ip:
                return name
    return None
