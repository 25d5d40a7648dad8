"""Wire-protocol constants (docs/protocol.md). The P4 side defines the same in p4src/config.p4;
tests/protocol/test_protocol_constants.py keeps the two in step."""
import enum

LANES = 256                     # int32 lanes per packet (1 KiB of payload: docs/protocol.md section 1)
SUBBLOCK = 16                   # lanes per sub-block (unit of sparsity)
NUM_SUBBLOCKS = LANES // SUBBLOCK
SLOTS = 4096                    # aggregator slots shared by all jobs (each has 2 shadow copies)
MAX_WORKERS = 32                # width of the per-slot seen bitmap
AGG_UDP_PORT = 48864            # 0xBEE0: the switch's aggregation UDP port (SwitchML's)

HEADER_BYTES = 24               # p4reduce header (the last 4 bytes: the job's wire token)
LANE_BYTES = 4                  # int32
SUBBLOCK_BYTES = SUBBLOCK * LANE_BYTES
UDP_HEADER_BYTES = 8
IPV4_HEADER_BYTES = 20
ETH_HEADER_BYTES = 14
FRAME_HEADER_BYTES = ETH_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_HEADER_BYTES  # around a UDP payload

NEXT_NONE = 0xFFFFFFFF          # next_offset: no further block on this stream
EXP_BIAS = 128                  # exponent code e means 2**(e - EXP_BIAS)
SLOT_MAX = (1 << 15) - 1        # slot field is 15 bits (the 16th is the shadow-copy bit)
LANE_MIN = -(1 << 31)
LANE_MAX = (1 << 31) - 1
RESULT_TTL = 64


def full_bitmap(num_subblocks: int = NUM_SUBBLOCKS) -> int:
    """Bitmap with every sub-block present (what a dense packet carries)."""
    return (1 << num_subblocks) - 1


class MsgType(enum.IntEnum):
    CONTRIB = 1                 # worker -> switch
    RESULT = 2                  # switch -> worker


class Flags(enum.IntFlag):
    NONE = 0
    EOT = 0x01                  # end of tensor for this stream
    RETX = 0x02                 # worker: retransmission; switch: result resent by unicast


class Mode(enum.IntEnum):
    DENSE = 0                   # contributions must carry every sub-block
    SPARSE = 1                  # zero sub-blocks are left out


class DropReason(enum.IntEnum):
    """Indices of counter ReduceIngress.drop_reasons."""
    TRUNCATED = 1
    BAD_CHECKSUM = 2
    BAD_TYPE = 3
    UNKNOWN_JOB = 4
    UNKNOWN_WORKER = 5
    BAD_RANK = 6
    RANK_RANGE = 7
    SLOT_RANGE = 8
    BAD_BITMAP = 9
    BAD_LENGTH = 10
    OFFSET_MISMATCH = 11
    DUPLICATE_PENDING = 12
    NO_ROUTE = 13
    NO_WORKER_ADDR = 14
    STALE_COPY = 15
    SPOOFED_PORT = 16           # a known worker's addresses, arriving on another switch port
    SPOOFED_SOURCE = 17         # IPv4 from a host port with another source than the host's (source guard)
    BAD_WIRE_TOKEN = 18         # a contribution whose wire token is not its job's (WireTokenCheck)
    STALE_RESULT = 19           # a result from the parent that no slot copy waits for (a duplicate, a late copy)


DROP_REASONS_SIZE = 20


class AggEvent(enum.IntEnum):
    """Indices of counter ReduceIngress.agg_events."""
    ABSORBED = 0
    RESULT_MULTICAST = 1
    RESULT_UNICAST = 2
    FORWARDED = 3
    SENT_UP = 4                 # a tree child's completed round sent to its parent as one contribution
    RESENT_UP = 5               # ... sent again: a worker retransmitted and no result had come down
    RESULT_DOWN = 6             # the parent's result multicast to a tree child's children


AGG_EVENTS_SIZE = 7
