"""The codec of p4reduce payloads (the UDP payload: 24-byte header + present sub-blocks).

Layout in docs/protocol.md section 2; `Layout` carries the compile-time sizes so programs compiled
with other LANES/SUBBLOCK values can be spoken to as well. Three levels, one definition:

* `Header`, `encode`, `decode`: checked, for everything that is not a hot loop;
* the fast path for per-packet loops (worker streaming, traffic generators, stand-ins):
  `pack_header` / `pack_header_into` / `unpack_header` (the header as a struct, slot and version
  split out of their 16-bit word by `slot_ver` / `split_slot_ver`), `with_flags` / `FLAGS_OFFSET`,
  `Layout.present`, `encode_subblocks` / `read_subblocks`; no range checks. Code that builds
  frames in place takes the header's size and field positions from here (`HEADER_BYTES`,
  `FLAGS_OFFSET`), so a new header field is a change to this module only;
* `encode_batch` / `decode_batch`: vectorized over many packets (HEADER_DTYPE arrays).
"""
from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

import numpy as np

from . import constants as C

HEADER_DTYPE = np.dtype([
    ("msg_type", "u1"), ("flags", "u1"), ("job_id", ">u2"), ("rank", "u1"), ("count", "u1"),
    ("slot_ver", ">u2"), ("offset", ">u4"), ("next_offset", ">u4"), ("exponent", "u1"),
    ("reserved", "u1"), ("bitmap", ">u2"), ("wire_token", ">u4"),
])
assert HEADER_DTYPE.itemsize == C.HEADER_BYTES
LANE_DTYPE = np.dtype(">i4")

# The same header as a struct (field for field HEADER_DTYPE), for the fast path.
_FIELDS: Mapping[str, tuple] = HEADER_DTYPE.fields or {}
HEADER_STRUCT = struct.Struct("!" + "".join({1: "B", 2: "H", 4: "I"}[dtype.itemsize] for dtype, *_ in _FIELDS.values()))
assert HEADER_STRUCT.size == C.HEADER_BYTES
FLAGS_OFFSET = _FIELDS["flags"][1]      # byte offset of the flags in a payload
WIRE_TOKEN_OFFSET = _FIELDS["wire_token"][1]      # byte offset of the wire token in a payload
SLOT_BITS = 15                                      # slot_ver: ver in the top bit, slot below
SLOT_MASK = (1 << SLOT_BITS) - 1
assert SLOT_MASK == C.SLOT_MAX


def slot_ver(slot: int, ver: int) -> int:
    """The header's 16-bit slot_ver word of a slot and its shadow-copy version."""
    return ver << SLOT_BITS | slot


def split_slot_ver(word: int) -> tuple[int, int]:
    """(slot, ver) of a slot_ver word."""
    return word & SLOT_MASK, word >> SLOT_BITS


def pack_header(msg_type: int, flags: int, job_id: int, rank: int, count: int, ver: int, slot: int,
                offset: int, next_offset: int, exponent: int, reserved: int, bitmap: int,
                wire_token: int) -> bytes:
    """The 24 header bytes, fields in Header's order (fast path: a field out of range raises
    struct.error, nothing else is checked)."""
    return HEADER_STRUCT.pack(msg_type, flags, job_id, rank, count, ver << SLOT_BITS | slot, offset,
                              next_offset, exponent, reserved, bitmap, wire_token)


def pack_header_into(buf: bytearray | memoryview, offset: int, msg_type: int, flags: int, job_id: int,
                     rank: int, count: int, ver: int, slot: int, first_offset: int, next_offset: int,
                     exponent: int, reserved: int, bitmap: int, wire_token: int) -> None:
    """pack_header, written into `buf` at `offset` (no allocation: the worker's preallocated
    frames); `first_offset` is the header's `offset` field."""
    HEADER_STRUCT.pack_into(buf, offset, msg_type, flags, job_id, rank, count, ver << SLOT_BITS | slot,
                            first_offset, next_offset, exponent, reserved, bitmap, wire_token)


def unpack_header(buf: bytes | bytearray | memoryview, offset: int = 0) -> tuple[int, ...]:
    """The header at `offset` of `buf` as a tuple in Header's field order (msg_type, flags, job_id,
    rank, count, ver, slot, offset, next_offset, exponent, reserved, bitmap, wire_token): Header(*t)
    makes one. The caller checks that `buf` holds HEADER_BYTES from `offset`."""
    mt, fl, job, rank, count, sv, off, nxt, exp, res, bm, wt = HEADER_STRUCT.unpack_from(buf, offset)
    return mt, fl, job, rank, count, sv >> SLOT_BITS, sv & SLOT_MASK, off, nxt, exp, res, bm, wt


def with_flags(payload: bytes, flags: int) -> bytes:
    """`payload` with `flags` set in its header (e.g. Flags.RETX on a retransmission)."""
    i = FLAGS_OFFSET
    return payload[:i] + bytes([payload[i] | int(flags)]) + payload[i + 1:]


class WireError(ValueError):
    """A payload that does not follow docs/protocol.md."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """Compile-time sizes of the program being spoken to. Both are required: they are a build
    setting of the switch's program (the job API's `lanes`/`subblock`), not protocol constants, so
    a layout nobody named would hide a mismatch with the switch."""
    lanes: int
    subblock: int

    def __post_init__(self):
        if self.subblock <= 0 or self.lanes % self.subblock:
            raise WireError(f"lanes ({self.lanes}) must be a multiple of subblock ({self.subblock})")
        if not 1 <= self.lanes // self.subblock <= 16:
            raise WireError(f"lanes/subblock = {self.lanes // self.subblock}: must be 1..16 (16-bit bitmap)")

    @property
    def num_subblocks(self) -> int:
        return self.lanes // self.subblock

    @property
    def full_bitmap(self) -> int:
        return (1 << self.num_subblocks) - 1

    def payload_bytes(self, bitmap: int) -> int:
        """UDP payload size of a packet with this bitmap."""
        return C.HEADER_BYTES + bin(bitmap).count("1") * self.subblock * C.LANE_BYTES

    @property
    def dense_ipv4_bytes(self) -> int:
        """IPv4 size of a dense packet (every sub-block present): what the links' MTU must carry."""
        return C.IPV4_HEADER_BYTES + C.UDP_HEADER_BYTES + self.payload_bytes(self.full_bitmap)

    def present(self, bitmap: int) -> list[int]:
        """Indices of the sub-blocks `bitmap` names, in wire order."""
        return [k for k in range(self.num_subblocks) if bitmap >> k & 1]


DEFAULT_LAYOUT = Layout(C.LANES, C.SUBBLOCK)   # the default build's (make build without LANES/SUBBLOCK)


@dataclasses.dataclass
class Header:
    """The p4reduce header, field by field (ver and slot split out of their 16-bit word)."""
    msg_type: int = C.MsgType.CONTRIB
    flags: int = 0
    job_id: int = 0
    rank: int = 0
    count: int = 0
    ver: int = 0
    slot: int = 0
    offset: int = 0
    next_offset: int = C.NEXT_NONE
    exponent: int = C.EXP_BIAS
    reserved: int = 0
    bitmap: int = 0
    wire_token: int = 0         # the job's wire token (docs/protocol.md section 2, "Security model")

    _LIMITS: ClassVar[dict[str, int]] = {"msg_type": 8, "flags": 8, "job_id": 16, "rank": 8, "count": 8, "ver": 1,
               "slot": 15, "offset": 32, "next_offset": 32, "exponent": 8, "reserved": 8,
               "bitmap": 16, "wire_token": 32}

    def validate(self) -> None:
        for name, bits in self._LIMITS.items():
            value = getattr(self, name)
            if not 0 <= int(value) < (1 << bits):
                raise WireError(f"header field {name}={value} does not fit in {bits} bits")

    def pack(self) -> bytes:
        self.validate()
        return pack_header(*(int(v) for v in dataclasses.astuple(self)))

    @classmethod
    def unpack(cls, data: bytes) -> Header:
        if len(data) < C.HEADER_BYTES:
            raise WireError(f"payload of {len(data)} bytes is shorter than the {C.HEADER_BYTES}-byte header")
        return cls(*unpack_header(data))


def bitmap_of(lanes: np.ndarray, layout: Layout = DEFAULT_LAYOUT) -> np.ndarray:
    """Bitmap of non-zero sub-blocks for each row of `lanes` (shape (..., LANES)) -> uint16 (...)."""
    lanes = np.asarray(lanes)
    if lanes.shape[-1] != layout.lanes:
        raise WireError(f"lanes has {lanes.shape[-1]} elements per block, layout wants {layout.lanes}")
    nz = lanes.reshape(lanes.shape[:-1] + (layout.num_subblocks, layout.subblock)).any(axis=-1)
    weights = (1 << np.arange(layout.num_subblocks)).astype(np.uint32)
    return (nz.astype(np.uint32) @ weights).astype(np.uint16)


def encode_subblocks(lanes: np.ndarray, bitmap: int, layout: Layout = DEFAULT_LAYOUT) -> bytes:
    """The payload body: the sub-blocks of the full block `lanes` that `bitmap` names, big-endian
    int32 (fast path: the shape and the int32 range are the caller's business)."""
    present = layout.present(bitmap)
    if not present:
        return b""
    block = np.asarray(lanes).astype(LANE_DTYPE).reshape(layout.num_subblocks, layout.subblock)
    return block[present].tobytes()


def read_subblocks(payload: bytes | bytearray, present: list[int], out: np.ndarray,
                   layout: Layout = DEFAULT_LAYOUT) -> None:
    """Store the sub-blocks a payload carries into rows `present` of `out` (num_subblocks,
    subblock); the other rows are left alone (fast path: the length is the caller's business)."""
    if present:
        data = np.frombuffer(payload, LANE_DTYPE, count=len(present) * layout.subblock, offset=C.HEADER_BYTES)
        out[present] = data.reshape(len(present), layout.subblock)


def encode(header: Header, lanes: np.ndarray | None = None, layout: Layout = DEFAULT_LAYOUT) -> bytes:
    """Payload for `header` carrying the sub-blocks of `lanes` named by header.bitmap.

    `lanes` is the full block (LANES int32 values); absent sub-blocks are not sent, whatever they hold.
    """
    if header.bitmap & ~layout.full_bitmap:
        raise WireError(f"bitmap 0x{header.bitmap:x} names sub-blocks beyond {layout.num_subblocks}")
    if header.bitmap and lanes is None:
        raise WireError("bitmap names sub-blocks but no lanes were given")
    body = b""
    if header.bitmap:
        block = np.asarray(lanes)
        if block.shape != (layout.lanes,):
            raise WireError(f"lanes must have shape ({layout.lanes},), got {block.shape}")
        _check_int32(block)
        body = encode_subblocks(block, header.bitmap, layout)
    return header.pack() + body


def decode(payload: bytes, layout: Layout = DEFAULT_LAYOUT) -> tuple[Header, np.ndarray]:
    """-> (header, full block of LANES int32 with zeros for absent sub-blocks). Strict on length."""
    header = Header.unpack(payload)
    if header.bitmap & ~layout.full_bitmap:
        raise WireError(f"bitmap 0x{header.bitmap:x} names sub-blocks beyond {layout.num_subblocks}")
    want = layout.payload_bytes(header.bitmap)
    if len(payload) != want:
        raise WireError(f"payload is {len(payload)} bytes, bitmap 0x{header.bitmap:x} needs {want}")
    block = np.zeros((layout.num_subblocks, layout.subblock), np.int32)
    read_subblocks(payload, layout.present(header.bitmap), block, layout)
    return header, block.reshape(layout.lanes)


def encode_batch(headers: np.ndarray, lanes: np.ndarray, layout: Layout = DEFAULT_LAYOUT) -> list[bytes]:
    """Vectorized encode of N packets: `headers` a HEADER_DTYPE array (N,), `lanes` (N, LANES).

    Each packet carries the sub-blocks its own bitmap names.
    """
    headers = np.asarray(headers, HEADER_DTYPE)
    lanes = np.asarray(lanes)
    if lanes.shape != (headers.shape[0], layout.lanes):
        raise WireError(f"lanes must have shape ({headers.shape[0]}, {layout.lanes}), got {lanes.shape}")
    _check_int32(lanes)
    if np.any(headers["bitmap"] & ~np.uint16(layout.full_bitmap)):
        raise WireError("a bitmap names sub-blocks beyond the layout")
    hdr_bytes = headers.tobytes()
    sub = lanes.astype(LANE_DTYPE).reshape(len(headers), layout.num_subblocks, layout.subblock)
    sub_bytes = sub.view(np.uint8).reshape(len(headers), layout.num_subblocks, -1)
    mask = ((headers["bitmap"][:, None].astype(np.uint32) >> np.arange(layout.num_subblocks)) & 1).astype(bool)
    out = []
    hb = C.HEADER_BYTES
    for i in range(len(headers)):
        out.append(hdr_bytes[i * hb:(i + 1) * hb] + sub_bytes[i][mask[i]].tobytes())
    return out


def decode_batch(payloads: Iterable[bytes], layout: Layout = DEFAULT_LAYOUT) -> tuple[np.ndarray, np.ndarray]:
    """-> (HEADER_DTYPE array (N,), int32 lanes (N, LANES)) with zeros for absent sub-blocks."""
    payloads = list(payloads)
    headers = np.zeros(len(payloads), HEADER_DTYPE)
    lanes = np.zeros((len(payloads), layout.lanes), np.int32)
    for i, p in enumerate(payloads):
        _h, block = decode(p, layout)
        headers[i] = np.frombuffer(p[:C.HEADER_BYTES], HEADER_DTYPE)[0]
        lanes[i] = block
    return headers, lanes


def header_array(headers: Sequence[Header]) -> np.ndarray:
    """Header objects -> HEADER_DTYPE array (for encode_batch)."""
    return np.frombuffer(b"".join(h.pack() for h in headers), HEADER_DTYPE).copy()


def _check_int32(values: np.ndarray) -> None:
    if values.dtype.kind not in "iu":
        raise WireError(f"lanes must be integers, got dtype {values.dtype}")
    if values.size and (values.min() < C.LANE_MIN or values.max() > C.LANE_MAX):
        raise WireError("lane values must fit in int32")
