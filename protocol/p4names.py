"""Names of the P4 program's control-plane objects (as in the BMv2 JSON and the P4Info), so the
controller and tests never spell them by hand."""

INGRESS = "ReduceIngress"
EGRESS = "ReduceEgress"

# tables
JOBS = f"{INGRESS}.jobs"                    # key hdr.p4r.job_id
WORKERS = f"{INGRESS}.workers"              # keys hdr.ipv4.srcAddr, hdr.udp.srcPort, hdr.p4r.job_id
IPV4_ROUTES = f"{INGRESS}.ipv4_routes"      # key hdr.ipv4.dstAddr (lpm)
L2_FORWARD = f"{INGRESS}.l2_forward"        # key hdr.ethernet.dstAddr
WORKER_ADDRS = f"{EGRESS}.worker_addrs"     # keys hdr.p4r.job_id, standard_metadata.egress_rid
SOURCE_GUARD = f"{INGRESS}.source_guard"    # key standard_metadata.ingress_port

# table keys (JSON key names / P4Info match field names)
JOBS_KEY = ("hdr.p4r.job_id",)
WORKERS_KEY = ("hdr.ipv4.srcAddr", "hdr.udp.srcPort", "hdr.p4r.job_id")
IPV4_ROUTES_KEY = ("hdr.ipv4.dstAddr",)
L2_FORWARD_KEY = ("hdr.ethernet.dstAddr",)
WORKER_ADDRS_KEY = ("hdr.p4r.job_id", "standard_metadata.egress_rid")
SOURCE_GUARD_KEY = ("standard_metadata.ingress_port",)

# actions (parameters in docs/protocol.md section 3)
SET_JOB = f"{INGRESS}.set_job"              # slot_base, slot_count, num_workers, mcast_grp, mode
SET_RANK = f"{INGRESS}.set_rank"            # rank, port (the worker's ingress port)
ROUTE = f"{INGRESS}.route"                  # port, dst_mac, src_mac
FORWARD = f"{INGRESS}.forward"              # port
FLOOD = f"{INGRESS}.flood"                  # mcast_grp
DROP_PACKET = f"{INGRESS}.drop_packet"
SET_WORKER_ADDR = f"{EGRESS}.set_worker_addr"   # mac, ip, udp_port
HOST_SOURCE = f"{INGRESS}.host_source"      # ip (the only IPv4 source allowed on the port)

# counters (indices: protocol.constants.DropReason / AggEvent)
DROP_REASONS = f"{INGRESS}.drop_reasons"
AGG_EVENTS = f"{INGRESS}.agg_events"
EGRESS_DROPS = f"{EGRESS}.egress_drops"         # only NO_WORKER_ADDR

# registers, indexed by 2 * (slot_base + slot) + ver
SEEN = f"{INGRESS}.seen"
COUNT = f"{INGRESS}.count"
ROUND_OFFSET = f"{INGRESS}.round_offset"
UNION_BITMAP = f"{INGRESS}.union_bitmap"
MIN_NEXT = f"{INGRESS}.min_next"
MAX_EXP = f"{INGRESS}.max_exp"


def lane_register(subblock: int, lane: int) -> str:
    """Register holding lane `lane` of sub-block `subblock` (element subblock*SUBBLOCK + lane)."""
    return f"{INGRESS}.sb{subblock}_l{lane}"


def register_index(slot_base: int, slot: int, ver: int) -> int:
    """Register index of a job's slot copy."""
    return 2 * (slot_base + slot) + ver
