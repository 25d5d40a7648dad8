/* Protocol values (docs/protocol.md); protocol/constants.py has the same for Python. */
#ifndef P4REDUCE_CONSTANTS_P4
#define P4REDUCE_CONSTANTS_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<8>  IPPROTO_UDP    = 17;

const bit<16> P4R_HEADER_BYTES = 24;
const bit<16> UDP_HEADER_BYTES = 8;
const bit<16> IPV4_HEADER_BYTES = 20;
const bit<32> ETH_HEADER_BYTES = 14;
const bit<8>  RESULT_TTL = 64;

const bit<8>  MSG_CONTRIB = 1;          /* worker -> switch */
const bit<8>  MSG_RESULT  = 2;          /* switch -> worker */

const bit<8>  FLAG_EOT  = 0x01;         /* end of tensor for this stream */
const bit<8>  FLAG_RETX = 0x02;         /* retransmission / result resent by unicast */

/* Job modes, set_job's `mode`: DENSE jobs' contributions carry every sub-block, SPARSE ones leave
 * zero sub-blocks out. Macros, not consts: the program only ever tests for DENSE, and p4c warns
 * about a const nobody reads. */
#define MODE_DENSE 0
#define MODE_SPARSE 1

const bit<32> NEXT_NONE = 0xFFFFFFFF;

/* what ingress decided to do with an aggregation packet (metadata, read by egress) */
const bit<2>  RESULT_NONE      = 0;
const bit<2>  RESULT_MULTICAST = 1;
const bit<2>  RESULT_UNICAST   = 2;

/* indices of counters ReduceIngress.drop_reasons and ReduceEgress.egress_drops; a stage that
 * decides a packet's fate hands its reason to the pipeline, DROP_NONE when it does not drop */
typedef bit<32> drop_reason_t;
const bit<32> DROP_NONE              = 0;
const bit<32> DROP_TRUNCATED         = 1;
const bit<32> DROP_BAD_CHECKSUM      = 2;
const bit<32> DROP_BAD_TYPE          = 3;
const bit<32> DROP_UNKNOWN_JOB       = 4;
const bit<32> DROP_UNKNOWN_WORKER    = 5;
const bit<32> DROP_BAD_RANK          = 6;
const bit<32> DROP_RANK_RANGE        = 7;
const bit<32> DROP_SLOT_RANGE        = 8;
const bit<32> DROP_BAD_BITMAP        = 9;
const bit<32> DROP_BAD_LENGTH        = 10;
const bit<32> DROP_OFFSET_MISMATCH   = 11;
const bit<32> DROP_DUPLICATE_PENDING = 12;
const bit<32> DROP_NO_ROUTE          = 13;
const bit<32> DROP_NO_WORKER_ADDR    = 14;
const bit<32> DROP_STALE_COPY        = 15;
const bit<32> DROP_SPOOFED_PORT      = 16;
const bit<32> DROP_SPOOFED_SOURCE    = 17;
const bit<32> DROP_BAD_WIRE_TOKEN    = 18;
const bit<32> DROP_STALE_RESULT      = 19;  /* a result from the parent no slot copy waits for */
#define DROP_REASONS_SIZE 20

/* indices of counter ReduceIngress.agg_events */
const bit<32> EVENT_ABSORBED         = 0;
const bit<32> EVENT_RESULT_MULTICAST = 1;
const bit<32> EVENT_RESULT_UNICAST   = 2;
const bit<32> EVENT_FORWARDED        = 3;
const bit<32> EVENT_SENT_UP          = 4;   /* a child's partial sum sent to its parent */
const bit<32> EVENT_RESENT_UP        = 5;   /* ... sent again: a worker asked, no result yet */
const bit<32> EVENT_RESULT_DOWN      = 6;   /* the parent's result multicast to the children */
#define AGG_EVENTS_SIZE 7

#endif
