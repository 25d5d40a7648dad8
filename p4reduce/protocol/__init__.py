"""p4reduce wire protocol (docs/protocol.md): constants, P4 object names, numpy codecs, frames,
scapy layer (protocol.scapy_layer, imported on demand) and the reference switch model."""
from . import constants, p4names  # noqa: F401
from .constants import AGG_UDP_PORT, LANES, NEXT_NONE, SUBBLOCK, AggEvent, DropReason, Flags, Mode, MsgType  # noqa: F401
from .wire import Header, Layout, WireError, bitmap_of, decode, encode  # noqa: F401
