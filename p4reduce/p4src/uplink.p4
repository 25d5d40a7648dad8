/* Uplink (docs/protocol.md section 11): on an interior switch of a job's tree, a completed round
 * is not a result but one contribution to the parent, which takes this switch for one worker of
 * rank up_rank. The packet that completed the round (or a worker's retransmission into it, while
 * no result has come down) becomes that contribution: the round's partial sum, merged exponent and
 * next offset, from this switch's own address to the unchanged destination, the service address. */
#ifndef P4REDUCE_UPLINK_P4
#define P4REDUCE_UPLINK_P4
#include <core.p4>
#include <v1model.p4>
#include "constants.p4"
#include "metadata.p4"
#include "payload_length.p4"

control Uplink(inout headers_t hdr, inout standard_metadata_t standard_metadata,
               in job_t job, in round_t round, in exp_next_t merged) {
    PayloadLength() payload_length;

    action fill_header(bit<8> flags) {
        hdr.p4r.msg_type = MSG_CONTRIB;
        hdr.p4r.flags = flags;
        hdr.p4r.rank = job.up_rank;
        hdr.p4r.count = 0;
        hdr.p4r.offset = round.offset;
        hdr.p4r.next_offset = merged.min_next;
        hdr.p4r.exponent = merged.max_exp;
        hdr.p4r.bitmap = round.union_bitmap;
        hdr.p4r.wire_token = job.wire_token;
    }

    /* The parent knows this switch by (up_ip, AGG_UDP_PORT) on its port towards it. */
    action send_up(bit<16> payload_bytes) {
        hdr.ethernet.srcAddr = job.up_src_mac;
        hdr.ethernet.dstAddr = job.up_dst_mac;
        hdr.ipv4.srcAddr = job.up_ip;
        hdr.ipv4.totalLen = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + payload_bytes;
        hdr.ipv4.ttl = RESULT_TTL;
        hdr.udp.srcPort = AGG_UDP_PORT;
        hdr.udp.len = UDP_HEADER_BYTES + payload_bytes;
        hdr.udp.checksum = 0;
        standard_metadata.egress_spec = job.up_port;
    }

    apply {
        bit<8> flags = (merged.min_next == NEXT_NONE) ? FLAG_EOT : 8w0;
        if (round.resend) {
            flags = flags | FLAG_RETX;
        }
        fill_header(flags);
        bit<16> contribution_bytes;
        payload_length.apply(hdr, contribution_bytes);
        send_up(contribution_bytes);
    }
}

#endif
