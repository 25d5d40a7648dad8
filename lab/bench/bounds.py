"""The link-rate bound of a cell: the bytes that must cross the busiest link, over the link rate.

No allreduce on a shaped star can finish faster than its busiest link can carry what must cross
it, so the ratio of a measured time to this bound says how much of the link a system leaves idle.
Bytes are Ethernet frames as tbf counts them (no preamble or FCS), for the least traffic each
system needs, in one direction (links are full duplex and each direction carries the same):

* p4reduce dense: every worker sends each block once and receives its sum once: ceil(size /
  LANES) frames of 42 + 24 + 4 x LANES bytes per worker link;
* p4reduce sparse: the same for the blocks that are non-zero on some worker (``density`` of them);
* gloo (ring allreduce): 2 (N - 1) / N tensors per worker link, in TCP segments of MSS 1448
  (1514-byte frames with timestamps);
* ps-tcp: the server's link carries the N workers' tensors in and N sums out, in TCP segments.

ACKs travel the other direction and are left out, so the bound is a lower bound for the TCP
systems too.
"""
from __future__ import annotations

import math

from p4reduce.protocol import constants as C

TCP_MSS = 1448
TCP_FRAME = TCP_MSS + C.ETH_HEADER_BYTES + C.IPV4_HEADER_BYTES + 32   # TCP header with timestamps
BYTES_PER_ELEMENT = 4


def _tcp_bytes(payload: float) -> float:
    return payload / TCP_MSS * TCP_FRAME


def busiest_link_bytes(system: str, workers: int, size: int, lanes: int = C.LANES,
                       density: float = 1.0) -> float:
    """Bytes that must cross the busiest link in one direction for one allreduce."""
    tensor = size * BYTES_PER_ELEMENT
    if system.startswith("p4reduce"):
        blocks = max(1, round(math.ceil(size / lanes) * density))   # bench/tensors.py's non-zero blocks
        return blocks * (C.FRAME_HEADER_BYTES + C.HEADER_BYTES + lanes * C.LANE_BYTES)
    if system == "gloo":
        return _tcp_bytes(2 * (workers - 1) / workers * tensor)
    if system == "ps-tcp":
        return _tcp_bytes(workers * tensor)
    raise ValueError(f"no link-rate bound for system {system!r}")


def link_bound_s(system: str, workers: int, size: int, bw_mbps: float, lanes: int = C.LANES,
                 density: float = 1.0) -> float:
    """Seconds the busiest link needs for one allreduce at `bw_mbps` Mbit/s."""
    return busiest_link_bytes(system, workers, size, lanes, density) * 8 / (bw_mbps * 1e6)
