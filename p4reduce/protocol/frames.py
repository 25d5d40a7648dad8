"""Ethernet/IPv4/UDP framing around p4reduce payloads, for traffic generators, tests and
stand-ins (real workers use UDP sockets and never build frames): build one, parse one."""
from __future__ import annotations

import dataclasses
import ipaddress
import struct

from . import constants as C

ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17

Addr = str | int


class FrameError(ValueError):
    """A frame that is not well-formed Ethernet/IPv4/UDP."""


def mac_bytes(mac: Addr) -> bytes:
    if isinstance(mac, int):
        return mac.to_bytes(6, "big")
    parts = mac.split(":")
    if len(parts) != 6:
        raise FrameError(f"bad MAC address {mac!r}")
    return bytes(int(p, 16) for p in parts)


def mac_str(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


def ip_int(ip: Addr) -> int:
    return ip if isinstance(ip, int) else int(ipaddress.IPv4Address(ip))


def ip_str(ip: int) -> str:
    return str(ipaddress.IPv4Address(ip))


def ipv4_checksum(header: bytes) -> int:
    """RFC 791 header checksum (ones' complement sum of 16-bit words)."""
    if len(header) % 2:
        header += b"\0"
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def udp_frame(src_mac: Addr, dst_mac: Addr, src_ip: Addr, dst_ip: Addr, sport: int, dport: int,
              payload: bytes, ttl: int = 64, ident: int = 0) -> bytes:
    """A well-formed frame (correct lengths and IPv4 checksum, UDP checksum 0)."""
    udp_len = C.UDP_HEADER_BYTES + len(payload)
    total = C.IPV4_HEADER_BYTES + udp_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, 0x4000, ttl, IPPROTO_UDP, 0,
                     ip_int(src_ip).to_bytes(4, "big"), ip_int(dst_ip).to_bytes(4, "big"))
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0)
    eth = mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!H", ETHERTYPE_IPV4)
    return eth + ip + udp + payload


_ETH, _IP = C.ETH_HEADER_BYTES, C.ETH_HEADER_BYTES + C.IPV4_HEADER_BYTES   # where IPv4 and UDP start


@dataclasses.dataclass
class UdpFrame:
    """A parsed Ethernet/IPv4/UDP frame, with what a non-strict parse found wrong."""
    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    sport: int
    dport: int
    ttl: int
    payload: bytes              # cut at the UDP length
    ip_total: int = 0           # IPv4 total length field
    udp_len: int = 0            # UDP length field
    checksum_ok: bool = True    # the IPv4 header checksum verifies

    def lengths_ok(self, frame_len: int) -> bool:
        """IPv4 total length = 20 + UDP length, and the frame is exactly that long."""
        return self.ip_total == C.IPV4_HEADER_BYTES + self.udp_len and frame_len == _ETH + self.ip_total


def ipv4_source(frame: bytes) -> int | None:
    """The IPv4 source address of an Ethernet/IPv4 frame as an int; None for any other frame."""
    if len(frame) < _IP or struct.unpack_from("!H", frame, 12)[0] != ETHERTYPE_IPV4:
        return None
    return int.from_bytes(frame[_ETH + 12:_ETH + 16], "big")


def parse_udp_frame(frame: bytes, strict: bool = True) -> UdpFrame:
    """Parse and (strict) check lengths and IPv4 checksum; the payload is cut at the UDP length."""
    if len(frame) < C.FRAME_HEADER_BYTES:
        raise FrameError(f"frame of {len(frame)} bytes is too short for Ethernet/IPv4/UDP")
    etype = struct.unpack_from("!H", frame, 12)[0]
    if etype != ETHERTYPE_IPV4:
        raise FrameError(f"ethertype 0x{etype:04x} is not IPv4")
    ip = frame[_ETH:_IP]
    vihl, _, total, _, _, ttl, proto, _, src, dst = struct.unpack("!BBHHHBBH4s4s", ip)
    if vihl != 0x45:
        raise FrameError(f"IPv4 version/IHL byte 0x{vihl:02x}: want 0x45")
    if proto != IPPROTO_UDP:
        raise FrameError(f"IP protocol {proto} is not UDP")
    sport, dport, ulen, _ = struct.unpack_from("!HHHH", frame, _IP)
    checksum_ok = ipv4_checksum(ip) == 0
    if strict:
        if not checksum_ok:
            raise FrameError("IPv4 header checksum is wrong")
        if total != C.IPV4_HEADER_BYTES + ulen:
            raise FrameError(f"IPv4 total length {total} != 20 + UDP length {ulen}")
        if _ETH + total > len(frame):
            raise FrameError(f"IPv4 total length {total} exceeds the frame ({len(frame)} bytes)")
    return UdpFrame(mac_str(frame[6:12]), mac_str(frame[0:6]), ip_str(int.from_bytes(src, "big")),
                    ip_str(int.from_bytes(dst, "big")), sport, dport, ttl, frame[C.FRAME_HEADER_BYTES:_IP + ulen],
                    total, ulen, checksum_ok)
