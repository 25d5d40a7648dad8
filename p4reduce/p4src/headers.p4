/* Headers (docs/protocol.md section 2) and the types of their fields. */
#ifndef P4REDUCE_HEADERS_P4
#define P4REDUCE_HEADERS_P4
#include <core.p4>
#include "iteration.p4"

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef int<32> lane_t;
typedef bit<16> sb_bitmap_t;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

/* ARP for IPv4 over Ethernet (RFC 826): the switch answers requests for its service address. */
header arp_t {
    bit<16>     htype;          /* 1: Ethernet */
    bit<16>     ptype;          /* 0x0800: IPv4 */
    bit<8>      hlen;           /* 6 */
    bit<8>      plen;           /* 4 */
    bit<16>     oper;           /* 1 request, 2 reply */
    mac_addr_t  sha;
    ipv4_addr_t spa;
    mac_addr_t  tha;
    ipv4_addr_t tpa;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     totalLen;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     fragOffset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdrChecksum;
    ipv4_addr_t srcAddr;
    ipv4_addr_t dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> len;
    bit<16> checksum;
}

/* The p4reduce header, 24 bytes. */
header p4r_t {
    bit<8>      msg_type;       /* MSG_CONTRIB or MSG_RESULT */
    bit<8>      flags;          /* FLAG_EOT, FLAG_RETX */
    bit<16>     job_id;
    bit<8>      rank;           /* sender (contribution) or receiver (result) */
    bit<8>      count;          /* contributions aggregated (results) */
    bit<1>      ver;            /* shadow copy */
    bit<15>     slot;           /* relative to the job's slot_base */
    bit<32>     offset;         /* element offset of the block */
    bit<32>     next_offset;    /* next block on this stream (min over the round in results) */
    bit<8>      exponent;       /* biased shared exponent (max over the round in results) */
    bit<8>      reserved;
    sb_bitmap_t bitmap;         /* present sub-blocks (union over the round in results) */
    bit<32>     wire_token;     /* the job's wire token: checked on contributions, stamped on results */
}

/* One sub-block of SUBBLOCK int32 lanes: fields l0, l1, ... */
#define LANE_FIELD(J) lane_t l##J;
header subblock_t {
    FOR_EACH_LANE(LANE_FIELD)
}

/* Sub-blocks sb0, sb1, ... in wire order: the deparser emits the struct as a whole. */
#define SUBBLOCK_HEADER(K) subblock_t sb##K;
struct headers_t {
    ethernet_t ethernet;
    arp_t      arp;
    ipv4_t     ipv4;
    udp_t      udp;
    p4r_t      p4r;
    FOR_EACH_SUBBLOCK(SUBBLOCK_HEADER)
}

#endif
