/* Checksum update and deparser. Results get a fresh IPv4 checksum; UDP checksum 0 is legal. */
#ifndef P4REDUCE_DEPARSER_P4
#define P4REDUCE_DEPARSER_P4
#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "metadata.p4"

control ReduceComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

/* Every valid header, in the order of headers_t: Ethernet, IPv4, UDP, p4reduce, sub-blocks. */
control ReduceDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

#endif
