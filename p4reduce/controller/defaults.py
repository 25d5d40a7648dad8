"""Numbers the controller takes from the protocol (protocol/constants.py and the address plan,
protocol/addressing.py, the single sources) and the few choices of its own (the flood group, how long
ended jobs are remembered)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4reduce.protocol import constants
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC
from p4reduce.protocol.wire import DEFAULT_LAYOUT, Layout

if TYPE_CHECKING:
    from p4reduce.controller.topology import Topology

FLOOD_GROUP = 1              # L2 flood group (broadcast/ARP) installed by the forwarding installer
ENDED_MEMORY_S = 300.0       # how long an ended job's name answers 409 job_ended
MAX_JOBS = 4096              # job ids 1..MAX_JOBS (job_id is 16 bits; groups stay 16-bit)
IN_FLIGHT_BYTES = 64 * 1024  # lane bytes a job's default slots hold per worker (64 x 1 KiB packets)
MAX_DEFAULT_SLOTS = 64       # ... and never more slots than this (narrow programs)


def udp_port() -> int:
    return constants.AGG_UDP_PORT


def max_workers() -> int:
    return constants.MAX_WORKERS


def max_jobs() -> int:
    return MAX_JOBS


def num_slots() -> int:
    return constants.SLOTS


def default_job_slots(total: int, layout: Layout = DEFAULT_LAYOUT) -> int:
    """Slots of a job that names none: enough for IN_FLIGHT_BYTES of lanes in flight per worker
    (64 packets of 256 lanes, 16 of 1024), at most MAX_DEFAULT_SLOTS and the pool. A fixed
    count would put twice the bytes in flight with twice the lanes and overflow a shaped link's
    queue (docs/protocol.md, "Wider packets on links with a larger MTU")."""
    by_bytes = IN_FLIGHT_BYTES // (layout.lanes * constants.LANE_BYTES)
    return max(1, min(MAX_DEFAULT_SLOTS, by_bytes, total))


def switch_endpoint(topology: Topology | None) -> dict[str, Any]:
    """Where workers send aggregation packets: the aggregation switch's IP, UDP port and MAC."""
    sw = topology.aggregation_switch if topology is not None else None
    return {"ip": getattr(sw, "ip", None) or SERVICE_IP,
            "udp_port": udp_port(),
            "mac": getattr(sw, "mac", None) or SERVICE_MAC}
