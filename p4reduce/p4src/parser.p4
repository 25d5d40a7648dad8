/* Parser: Ethernet / ARP, Ethernet / IPv4 / UDP, and on UDP port AGG_UDP_PORT the p4reduce header followed by
 * the sub-blocks its bitmap names (absent sub-blocks are zeros and take no bytes). */
#ifndef P4REDUCE_PARSER_P4
#define P4REDUCE_PARSER_P4
#include <core.p4>
#include <v1model.p4>
#include "constants.p4"
#include "headers.p4"
#include "metadata.p4"

/* parse_sbK: if bit K of the bitmap is set, extract sub-block K; then go on to sub-block NEXT. */
#define SUBBLOCK_STATES(K, NEXT)                                          \
    state parse_sb##K {                                                   \
        transition select(hdr.p4r.bitmap) {                               \
            SB_BIT(K) &&& SB_BIT(K): extract_sb##K;                       \
            default: parse_sb##NEXT;                                      \
        }                                                                 \
    }                                                                     \
    state extract_sb##K {                                                 \
        pkt.extract(hdr.sb##K);                                           \
        transition parse_sb##NEXT;                                        \
    }

parser ReduceParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }
    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* only unfragmented IPv4 without options carries aggregation packets */
        transition select(hdr.ipv4.ihl, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (4w5, 13w0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            AGG_UDP_PORT: parse_p4r;
            default: accept;
        }
    }
    state parse_p4r {
        pkt.extract(hdr.p4r);
        transition parse_sb0;
    }
    FOR_EACH_SUBBLOCK_STEP(SUBBLOCK_STATES)
    state parse_sbEND {
        transition accept;
    }
}

control ReduceVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

#endif
