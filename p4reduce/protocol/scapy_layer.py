"""scapy layer for p4reduce (debugging, pcap reading, tests): `P4Reduce` carries the header and
a list of `SubBlock`s, as many as the bitmap names. Bound to UDP port AGG_UDP_PORT both ways, so
`rdpcap` dissects aggregation traffic automatically.

The number of lanes per sub-block is SUBBLOCK (protocol.constants); for a program compiled with
another SUBBLOCK, call `set_subblock(n)` before dissecting.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scapy.fields import (
    BitField,
    ByteEnumField,
    ByteField,
    FieldListField,
    FlagsField,
    IntField,
    PacketListField,
    ShortField,
    SignedIntField,
    XByteField,
    XIntField,
    XShortField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from . import constants as C
from .wire import Layout

_subblock = C.SUBBLOCK


def set_subblock(lanes_per_subblock: int) -> None:
    """Dissect sub-blocks of this many lanes (default protocol.constants.SUBBLOCK)."""
    global _subblock
    if lanes_per_subblock < 1:
        raise ValueError(f"lanes per sub-block must be >= 1, got {lanes_per_subblock}")
    _subblock = lanes_per_subblock


class SubBlock(Packet):
    """SUBBLOCK big-endian int32 lanes."""
    name = "P4ReduceSubBlock"
    fields_desc: ClassVar[list] = [
        FieldListField("lanes", [], SignedIntField("lane", 0), count_from=lambda pkt: _subblock)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class P4Reduce(Packet):
    name = "P4Reduce"
    fields_desc: ClassVar[list] = [
        ByteEnumField("msg_type", C.MsgType.CONTRIB, {int(m): m.name for m in C.MsgType}),
        FlagsField("flags", 0, 8, ["EOT", "RETX"]),
        ShortField("job_id", 0),
        ByteField("rank", 0),
        ByteField("count", 0),
        BitField("ver", 0, 1),
        BitField("slot", 0, 15),
        IntField("offset", 0),
        IntField("next_offset", C.NEXT_NONE),
        ByteField("exponent", C.EXP_BIAS),
        XByteField("reserved", 0),
        XShortField("bitmap", 0),
        XIntField("wire_token", 0),
        PacketListField("subblocks", [], SubBlock,
                        count_from=lambda pkt: bin(pkt.bitmap).count("1")),
    ]

    def lanes(self, num_subblocks: int = C.NUM_SUBBLOCKS) -> np.ndarray:
        """The full block as int32, zeros for absent sub-blocks."""
        out = np.zeros((num_subblocks, _subblock), np.int32)
        present = Layout(num_subblocks * _subblock, _subblock).present(self.bitmap)
        for k, sb in zip(present, self.subblocks):
            out[k] = sb.lanes
        return out.reshape(-1)

    def mysummary(self) -> str:
        kind = C.MsgType(self.msg_type).name if self.msg_type in (1, 2) else str(self.msg_type)
        return self.sprintf(f"P4Reduce {kind} job=%job_id% rank=%rank% slot=%slot%/v%ver% "
                            f"off=%offset% next=%next_offset% bitmap=%bitmap%")


bind_layers(UDP, P4Reduce, dport=C.AGG_UDP_PORT)
bind_layers(UDP, P4Reduce, sport=C.AGG_UDP_PORT)


def from_block(header_fields: dict, block: np.ndarray, bitmap: int) -> P4Reduce:
    """Build a P4Reduce packet from a full block and the bitmap of sub-blocks to carry."""
    block = np.asarray(block).reshape(-1, _subblock)
    subs = [SubBlock(lanes=[int(v) for v in block[k]]) for k in range(block.shape[0]) if bitmap >> k & 1]
    return P4Reduce(bitmap=bitmap, subblocks=subs, **header_fields)
