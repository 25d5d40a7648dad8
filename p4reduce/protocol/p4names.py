"""Names of the P4 program's control-plane objects (as in the BMv2 JSON and the P4Info), so the
controller and tests never spell them by hand.

Every pipeline stage of p4src/ is a control of its own, instantiated by the top-level ingress or
egress; p4c names an object of an instantiated control `<TopControl>.<instance>.<object>`, so the
stage's instance name (below) is part of every name.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

INGRESS = "ReduceIngress"
EGRESS = "ReduceEgress"

# stage instances (p4src/p4reduce.p4)
_GUARD = f"{INGRESS}.source_guard"
_ARP = f"{INGRESS}.arp_responder"
_ADMISSION = f"{INGRESS}.admission"
_FORWARDING = f"{INGRESS}.forwarding"
_SLOTS = f"{INGRESS}.slots"
_EXPONENT_NEXT = f"{INGRESS}.exponent_next"
_LANE_ADDERS = f"{INGRESS}.lane_adders"
_REPLICA_REWRITE = f"{EGRESS}.replica_rewrite"

# tables
JOBS = f"{_ADMISSION}.jobs"                             # key hdr.p4r.job_id
WORKERS = f"{_ADMISSION}.workers"                       # keys hdr.ipv4.srcAddr, hdr.udp.srcPort, hdr.p4r.job_id
TREE = f"{_ADMISSION}.tree"                             # key hdr.p4r.job_id (a miss: the job is flat)
IPV4_ROUTES = f"{_FORWARDING}.ipv4_routes"              # key hdr.ipv4.dstAddr (lpm)
L2_FORWARD = f"{_FORWARDING}.l2_forward"                # key hdr.ethernet.dstAddr
WORKER_ADDRS = f"{_REPLICA_REWRITE}.worker_addrs"       # keys hdr.p4r.job_id, standard_metadata.egress_rid
SOURCE_GUARD = f"{_GUARD}.hosts"                        # key standard_metadata.ingress_port
ARP_RESPONDER = f"{_ARP}.addresses"                     # key hdr.arp.tpa

# table keys (JSON key names / P4Info match field names)
JOBS_KEY = ("hdr.p4r.job_id",)
WORKERS_KEY = ("hdr.ipv4.srcAddr", "hdr.udp.srcPort", "hdr.p4r.job_id")
TREE_KEY = ("hdr.p4r.job_id",)
IPV4_ROUTES_KEY = ("hdr.ipv4.dstAddr",)
L2_FORWARD_KEY = ("hdr.ethernet.dstAddr",)
WORKER_ADDRS_KEY = ("hdr.p4r.job_id", "standard_metadata.egress_rid")
SOURCE_GUARD_KEY = ("standard_metadata.ingress_port",)
ARP_RESPONDER_KEY = ("hdr.arp.tpa",)

# actions (parameters in docs/protocol.md section 3)
SET_JOB = f"{_ADMISSION}.set_job"       # slot_base, slot_count, num_workers, mcast_grp, mode, wire_token
SET_RANK = f"{_ADMISSION}.set_rank"                     # rank, port (the worker's ingress port)
AGGREGATE_ROOT = f"{_ADMISSION}.aggregate_root"         # children
AGGREGATE_CHILD = f"{_ADMISSION}.aggregate_child"       # children, up_port, up_rank, up_ip, up_src_mac, up_dst_mac
ROUTE = f"{_FORWARDING}.route"                          # port, dst_mac, src_mac
FORWARD = f"{_FORWARDING}.forward"                      # port
FLOOD = f"{_FORWARDING}.flood"                          # mcast_grp
DROP_PACKET = f"{_FORWARDING}.drop_packet"
SET_WORKER_ADDR = f"{_REPLICA_REWRITE}.set_worker_addr"  # mac, ip, udp_port
HOST_SOURCE = f"{_GUARD}.host_source"                   # ip (the only IPv4 source allowed on the port)
ARP_REPLY = f"{_ARP}.reply"                             # mac (the owner of the asked address)

# counters (indices: protocol.constants.DropReason / AggEvent); the pipeline counts, not a stage
DROP_REASONS = f"{INGRESS}.drop_reasons"
AGG_EVENTS = f"{INGRESS}.agg_events"
EGRESS_DROPS = f"{EGRESS}.egress_drops"                 # only NO_WORKER_ADDR

# registers, indexed by 2 * (slot_base + slot) + ver
SEEN = f"{_SLOTS}.seen"
COUNT = f"{_SLOTS}.count"
ROUND_OFFSET = f"{_SLOTS}.round_offset"
UNION_BITMAP = f"{_SLOTS}.union_bitmap"
HAVE_RESULT = f"{_SLOTS}.have_result"                   # 1: a tree child's copy holds its parent's result
MIN_NEXT = f"{_EXPONENT_NEXT}.min_next"
MAX_EXP = f"{_EXPONENT_NEXT}.max_exp"

_LANE_REGISTER = re.compile(re.escape(_LANE_ADDERS) + r"\.sb(\d+)\.l(\d+)")


def lane_register(subblock: int, lane: int) -> str:
    """Register holding lane `lane` of sub-block `subblock` (element subblock*SUBBLOCK + lane)."""
    return f"{_LANE_ADDERS}.sb{subblock}.l{lane}"


def is_lane_register(name: str) -> bool:
    """Whether `name` (full) is a lane register: bit<32> cells that hold signed int32 sums."""
    return _LANE_REGISTER.fullmatch(name) is not None


def lane_layout(register_names: Iterable[str]) -> tuple[int, int]:
    """(NUM_SUBBLOCKS, SUBBLOCK) of a program, from its register names (P4Info or BMv2 JSON):
    the lane registers are exactly sb{K}.l{J} for K < NUM_SUBBLOCKS and J < SUBBLOCK.
    Raises ValueError when they do not form that grid."""
    cells = {(int(m[1]), int(m[2])) for m in map(_LANE_REGISTER.fullmatch, register_names) if m}
    if not cells:
        raise ValueError(f"no lane registers {lane_register(0, 0)}, ... in the program")
    num_subblocks = 1 + max(k for k, _ in cells)
    subblock = 1 + max(j for _, j in cells)
    if len(cells) != num_subblocks * subblock:
        raise ValueError(f"lane registers do not form a {num_subblocks} x {subblock} grid "
                         f"({len(cells)} of them)")
    return num_subblocks, subblock


def register_index(slot_base: int, slot: int, ver: int) -> int:
    """Register index of a job's slot copy."""
    return 2 * (slot_base + slot) + ver
