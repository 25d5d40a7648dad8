"""`python -m p4reduce.protocol.pcap_dump FILE [--count N] [--lanes] [--json]`: one line per packet of
a capture (the switch's pcaps/, tcpdump, Wireshark), p4reduce packets decoded field by field.

It streams: packets are read, decoded and printed one at a time (pcap or pcapng, any size, no
scapy), so `--count 20` on a large capture answers at once. The same fields as the Wireshark
dissector (`make wireshark`), for a terminal or a script (`--json`).
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Iterator
from typing import IO, Any

from . import constants as C
from . import wire

PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
              b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9)}
PCAPNG_SHB = 0x0A0D0D0A
LINKTYPE_ETHERNET = 1
MAX_RECORD = 1 << 20          # a record longer than this is a damaged file, not a packet


class CaptureError(ValueError):
    """The file is not a capture this tool reads, or is damaged; the message says where."""


def read_frames(stream: IO[bytes]) -> Iterator[tuple[float, bytes]]:
    """(timestamp, Ethernet frame) of each packet of a pcap or pcapng stream, one at a time."""
    head = stream.read(4)
    if head in PCAP_MAGIC:
        yield from _pcap(stream, *PCAP_MAGIC[head])
    elif len(head) == 4 and struct.unpack("<I", head)[0] == PCAPNG_SHB:
        yield from _pcapng(stream, head)
    else:
        raise CaptureError("not a pcap or pcapng capture (unknown magic number)")


def _pcap(stream: IO[bytes], endian: str, tick: float) -> Iterator[tuple[float, bytes]]:
    rest = stream.read(20)
    if len(rest) < 20:
        raise CaptureError("truncated pcap file header")
    linktype = struct.unpack(endian + "HHiIII", rest)[5] & 0xFFFF
    if linktype != LINKTYPE_ETHERNET:
        raise CaptureError(f"link type {linktype}: only Ethernet captures are decoded")
    record = struct.Struct(endian + "IIII")
    index = 0
    while True:
        raw = stream.read(record.size)
        if not raw:
            return
        if len(raw) < record.size:
            raise CaptureError(f"packet {index}: truncated record header (the capture was cut off)")
        seconds, frac, captured, _ = record.unpack(raw)
        if captured > MAX_RECORD:
            raise CaptureError(f"packet {index}: record of {captured} bytes: the file is damaged")
        data = stream.read(captured)
        if len(data) < captured:
            raise CaptureError(f"packet {index}: truncated (the capture was cut off)")
        yield seconds + frac * tick, data
        index += 1


def _pcapng(stream: IO[bytes], raw: bytes) -> Iterator[tuple[float, bytes]]:
    endian = "<"
    linktypes: list[int] = []
    index = 0
    while raw:
        if len(raw) < 4:
            raise CaptureError(f"pcapng block after packet {index}: truncated")
        if struct.unpack("<I", raw)[0] == PCAPNG_SHB:         # section header: says the byte order
            rest = stream.read(8)
            if len(rest) < 8 or rest[4:] not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
                raise CaptureError(f"pcapng section header after packet {index}: damaged")
            endian = "<" if rest[4:] == b"\x4d\x3c\x2b\x1a" else ">"
            btype, length, skip = PCAPNG_SHB, struct.unpack(endian + "I", rest[:4])[0], 12
            linktypes = []
        else:
            rest = stream.read(4)
            if len(rest) < 4:
                raise CaptureError(f"pcapng block after packet {index}: truncated")
            btype, length, skip = struct.unpack(endian + "I", raw)[0], struct.unpack(endian + "I", rest)[0], 8
        if length < 12 or length > MAX_RECORD or length % 4:
            raise CaptureError(f"pcapng block after packet {index}: length {length}: the file is damaged")
        body = stream.read(length - skip)
        if len(body) < length - skip:
            raise CaptureError(f"pcapng block after packet {index}: truncated (the capture was cut off)")
        if btype == 1 and len(body) >= 2:                       # interface description
            linktypes.append(struct.unpack_from(endian + "H", body)[0])
        elif btype == 6 and len(body) >= 20:                    # enhanced packet
            iface, hi, lo, captured, _ = struct.unpack_from(endian + "IIIII", body)
            if iface < len(linktypes) and linktypes[iface] == LINKTYPE_ETHERNET:
                yield (hi << 32 | lo) * 1e-6, body[20:20 + captured]
            index += 1
        elif btype == 3 and linktypes and linktypes[0] == LINKTYPE_ETHERNET:   # simple packet
            yield 0.0, body[4:length - 12]
            index += 1
        raw = stream.read(4)


def decode_frame(frame: bytes, port: int = C.AGG_UDP_PORT) -> dict[str, Any]:
    """What a frame is: for p4reduce packets, every header field and the lanes present."""
    if len(frame) < 14:
        return {"kind": "short", "summary": f"frame of {len(frame)} bytes"}
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype == 0x0806:
        return {"kind": "arp", "summary": "ARP"}
    if ethertype == 0x86DD:
        return {"kind": "ipv6", "summary": "IPv6"}
    if ethertype != 0x0800 or len(frame) < 34:
        return {"kind": "ether", "summary": f"Ethernet type {ethertype:#06x}"}
    ihl = (frame[14] & 0x0F) * 4
    proto = frame[23]
    src = ".".join(str(b) for b in frame[26:30])
    dst = ".".join(str(b) for b in frame[30:34])
    names = {1: "ICMP", 6: "TCP", 17: "UDP"}
    l4 = 14 + ihl
    if proto in (6, 17) and len(frame) >= l4 + 4:
        sport, dport = struct.unpack_from("!HH", frame, l4)
        out: dict[str, Any] = {"kind": names[proto].lower(), "src": f"{src}:{sport}", "dst": f"{dst}:{dport}",
                               "summary": f"{src}:{sport} > {dst}:{dport} {names[proto]}"}
        if proto == 17 and port in (sport, dport) and len(frame) >= l4 + 8:
            return {**out, **_p4reduce(frame[l4 + 8:])}
        return out
    return {"kind": "ipv4", "src": src, "dst": dst, "summary": f"{src} > {dst} {names.get(proto, f'IP proto {proto}')}"}


def _p4reduce(payload: bytes) -> dict[str, Any]:
    if len(payload) < C.HEADER_BYTES:
        return {"kind": "p4reduce", "error": f"payload of {len(payload)} bytes, shorter than the header"}
    h = wire.Header(*wire.unpack_header(payload))
    fields = {k: getattr(h, k) for k in ("msg_type", "flags", "job_id", "rank", "count", "slot", "ver", "offset",
                                         "next_offset", "exponent", "bitmap", "wire_token") if hasattr(h, k)}
    out: dict[str, Any] = {"kind": "p4reduce", **fields}
    present = [k for k in range(16) if h.bitmap >> k & 1]
    body = len(payload) - C.HEADER_BYTES
    if present and body % (4 * len(present)) == 0 and body:
        sub = body // (4 * len(present))
        values = struct.unpack_from(f"!{body // 4}i", payload, C.HEADER_BYTES)
        out["lanes"] = {k * sub + j: values[n * sub + j] for n, k in enumerate(present) for j in range(sub)}
    elif body or present:
        out["error"] = f"{body} payload bytes do not fit bitmap {h.bitmap:#06x}"
    return out


def describe(number: int, info: dict[str, Any], show_lanes: bool = False) -> str:
    """The one-line text of a decoded frame."""
    if info["kind"] != "p4reduce":
        return f"{number:6d} {info['summary']}"
    if "msg_type" not in info:
        return f"{number:6d} {info['summary']} p4reduce: {info['error']}"
    kind = C.MsgType(info["msg_type"]).name if info["msg_type"] in (1, 2) else f"type{info['msg_type']}"
    flags = "|".join(str(f.name) for f in C.Flags if f and info["flags"] & f) or "-"
    nxt = "none" if info["next_offset"] == C.NEXT_NONE else str(info["next_offset"])
    line = (f"{number:6d} {info['src']} > {info['dst']} {kind} job={info['job_id']} rank={info['rank']} "
            f"slot={info['slot']}/v{info['ver']} off={info['offset']} next={nxt} exp={info['exponent']} "
            f"bitmap={info['bitmap']:#06x} count={info['count']} flags={flags}"
            + (f" wire_token={info['wire_token']:#010x}" if "wire_token" in info else ""))
    if "error" in info:
        line += f" MALFORMED: {info['error']}"
    if show_lanes and "lanes" in info:
        line += " lanes=" + " ".join(f"{i}:{v}" for i, v in info["lanes"].items())
    return line


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _port(text: str) -> int:
    value = _positive(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a UDP port in 1..65535, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4reduce.protocol.pcap_dump",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("pcap", help="capture file (pcap or pcapng; `-` reads standard input)")
    ap.add_argument("--count", type=_positive, default=None, metavar="N", help="stop after N packets (default: all)")
    ap.add_argument("--lanes", action="store_true", help="print the lanes of every p4reduce packet (index:value)")
    ap.add_argument("--only", action="store_true", help="only p4reduce packets")
    ap.add_argument("--json", action="store_true", help="one JSON object per packet instead of text")
    ap.add_argument("--port", type=_port, default=C.AGG_UDP_PORT,
                    help="the aggregation UDP port (default %(default)s)")
    args = ap.parse_args(argv)
    try:
        stream = sys.stdin.buffer if args.pcap == "-" else open(args.pcap, "rb")
    except OSError as exc:
        print(f"pcap_dump: cannot read {args.pcap}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    shown = 0
    try:
        with stream:
            for number, (ts, frame) in enumerate(read_frames(stream)):
                info = decode_frame(frame, args.port)
                if args.only and info["kind"] != "p4reduce":
                    continue
                if args.json:
                    if "lanes" in info and not args.lanes:
                        info = {k: v for k, v in info.items() if k != "lanes"}
                    print(json.dumps({"packet": number, "time": round(ts, 6), **info}))
                else:
                    print(describe(number, info, args.lanes))
                shown += 1
                if args.count is not None and shown >= args.count:
                    break
    except CaptureError as exc:
        print(f"pcap_dump: {args.pcap}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # `| head`: the reader has what it wanted
        sys.stderr.close()
        return 0
    except OSError as exc:
        print(f"pcap_dump: cannot read {args.pcap}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
