"""Value encoding between Python and P4Runtime bytestrings.

P4Runtime carries every value as a big-endian bytestring; we send the canonical form (no leading
zero bytes, at least one byte) and accept any form on read. People write values as ints, MACs
("00:11:22:33:44:55"), IPv4 addresses ("10.0.0.1") or decimal/hex strings, as p4runtime-shell does.
"""
from __future__ import annotations

import ipaddress
import re

_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")


def parse_ipv4(value: object, what: str = "address") -> str:
    """Dotted-quad string of an IPv4 address, or ValueError naming `what`."""
    try:
        return str(ipaddress.IPv4Address(str(value)))
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not an IPv4 address") from None


def parse_mac(value: object, what: str = "MAC") -> str:
    """Lower-case aa:bb:cc:dd:ee:ff, or ValueError naming `what`."""
    if not isinstance(value, str) or not _MAC.match(value) or "-" in value:
        raise ValueError(f"{what}: {value!r} is not a MAC address (aa:bb:cc:dd:ee:ff)")
    return value.lower()


def parse_int(value: object, bitwidth: int | None = None, what: str = "value") -> int:
    """int from an int, MAC, IPv4, '0x..' or decimal string; checked against `bitwidth`."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a number, got {value!r}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, (bytes, bytearray)):
        n = int.from_bytes(value, "big")
    elif isinstance(value, str):
        s = value.strip()
        try:
            if _MAC.match(s):
                n = int(s.replace(":", "").replace("-", ""), 16)
            elif s.count(".") == 3:
                n = int(ipaddress.IPv4Address(s))
            elif ":" in s:
                n = int(ipaddress.IPv6Address(s))
            else:
                n = int(s, 0)
        except ValueError:
            raise ValueError(f"{what}: cannot parse {value!r} as a number, MAC or IP address") from None
    else:
        raise ValueError(f"{what}: expected a number or string, got {type(value).__name__}")
    if n < 0:
        if bitwidth is None or n < -(1 << (bitwidth - 1)):
            raise ValueError(f"{what}: {value!r} is negative")
        n &= (1 << bitwidth) - 1  # two's complement for signed fields
    if bitwidth is not None and n >= (1 << bitwidth):
        raise ValueError(f"{what}: {value!r} does not fit in {bitwidth} bits")
    return n


def encode(value: object, bitwidth: int, what: str = "value") -> bytes:
    """Canonical P4Runtime bytestring of `value` for a field of `bitwidth` bits."""
    n = parse_int(value, bitwidth, what)
    return n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    """int from a P4Runtime bytestring (canonical or padded)."""
    return int.from_bytes(data, "big") if data else 0


def format_mac(n: int) -> str:
    return ":".join(f"{b:02x}" for b in n.to_bytes(6, "big"))


def format_ipv4(n: int) -> str:
    return str(ipaddress.IPv4Address(n))


def to_signed(n: int, bitwidth: int) -> int:
    """Reinterpret an unsigned bit pattern as two's complement."""
    return n - (1 << bitwidth) if n >> (bitwidth - 1) & 1 else n
