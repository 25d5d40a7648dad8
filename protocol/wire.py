"""numpy codecs for p4reduce payloads (the UDP payload: 20-byte header + present sub-blocks).

Layout in docs/protocol.md section 2. `Layout` carries the compile-time sizes so programs
compiled with other LANES/SUBBLOCK values can be spoken to as well.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import ClassVar

import numpy as np

from . import constants as C

HEADER_DTYPE = np.dtype([
    ("msg_type", "u1"), ("flags", "u1"), ("job_id", ">u2"), ("rank", "u1"), ("count", "u1"),
    ("slot_ver", ">u2"), ("offset", ">u4"), ("next_offset", ">u4"), ("exponent", "u1"),
    ("reserved", "u1"), ("bitmap", ">u2"),
])
assert HEADER_DTYPE.itemsize == C.HEADER_BYTES
LANE_DTYPE = np.dtype(">i4")


class WireError(ValueError):
    """A payload that does not follow docs/protocol.md."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """Compile-time sizes of the program being spoken to."""
    lanes: int = C.LANES
    subblock: int = C.SUBBLOCK

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


DEFAULT_LAYOUT = Layout()


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

    _LIMITS: ClassVar[dict[str, int]] = {"msg_type": 8, "flags": 8, "job_id": 16, "rank": 8, "count": 8, "ver": 1,
               "slot": 15, "offset": 32, "next_offset": 32, "exponent": 8, "reserved": 8,
               "bitmap": 16}

    def validate(self) -> None:
        for name, bits in self._LIMITS.items():
            value = getattr(self, name)
            if not 0 <= int(value) < (1 << bits):
                raise WireError(f"header field {name}={value} does not fit in {bits} bits")

    def pack(self) -> bytes:
        self.validate()
        rec = np.zeros((), HEADER_DTYPE)
        for name in HEADER_DTYPE.names:
            if name == "slot_ver":
                rec[name] = (int(self.ver) << 15) | int(self.slot)
            else:
                rec[name] = int(getattr(self, name))
        return rec.tobytes()

    @classmethod
    def unpack(cls, data: bytes) -> Header:
        if len(data) < C.HEADER_BYTES:
            raise WireError(f"payload of {len(data)} bytes is shorter than the {C.HEADER_BYTES}-byte header")
        rec = np.frombuffer(data, HEADER_DTYPE, count=1)[0]
        fields = {name: int(rec[name]) for name in HEADER_DTYPE.names if name != "slot_ver"}
        slot_ver = int(rec["slot_ver"])
        return cls(ver=slot_ver >> 15, slot=slot_ver & 0x7FFF, **fields)


def bitmap_of(lanes: np.ndarray, layout: Layout = DEFAULT_LAYOUT) -> np.ndarray:
    """Bitmap of non-zero sub-blocks for each row of `lanes` (shape (..., LANES)) -> uint16 (...)."""
    lanes = np.asarray(lanes)
    if lanes.shape[-1] != layout.lanes:
        raise WireError(f"lanes has {lanes.shape[-1]} elements per block, layout wants {layout.lanes}")
    nz = lanes.reshape(lanes.shape[:-1] + (layout.num_subblocks, layout.subblock)).any(axis=-1)
    weights = (1 << np.arange(layout.num_subblocks)).astype(np.uint32)
    return (nz.astype(np.uint32) @ weights).astype(np.uint16)


def _present(bitmap: int, layout: Layout) -> list[int]:
    return [k for k in range(layout.num_subblocks) if bitmap >> k & 1]


def encode(header: Header, lanes: np.ndarray | None = None, layout: Layout = DEFAULT_LAYOUT) -> bytes:
    """Payload for `header` carrying the sub-blocks of `lanes` named by header.bitmap.

    `lanes` is the full block (LANES int32 values); absent sub-blocks are not sent, whatever they hold.
    """
    if header.bitmap & ~layout.full_bitmap:
        raise WireError(f"bitmap 0x{header.bitmap:x} names sub-blocks beyond {layout.num_subblocks}")
    present = _present(header.bitmap, layout)
    if present and lanes is None:
        raise WireError("bitmap names sub-blocks but no lanes were given")
    body = b""
    if present:
        block = np.asarray(lanes)
        if block.shape != (layout.lanes,):
            raise WireError(f"lanes must have shape ({layout.lanes},), got {block.shape}")
        _check_int32(block)
        sub = block.reshape(layout.num_subblocks, layout.subblock)[present]
        body = sub.astype(LANE_DTYPE).tobytes()
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
    present = _present(header.bitmap, layout)
    if present:
        lanes = np.frombuffer(payload, LANE_DTYPE, offset=C.HEADER_BYTES)
        block[present] = lanes.reshape(len(present), layout.subblock)
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
