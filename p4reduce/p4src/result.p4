/* Turning a contribution into a result (docs/protocol.md section 5, "The result"): the header from
 * the round's state, the lengths from the sub-blocks it carries, and its way out: a multicast to
 * the job's group when the round completes, or back to the sender alone when a retransmission
 * asks again for a completed round. Egress (ReplicaRewrite) addresses each multicast replica.
 * On an interior switch of a tree the parent's result goes down to the children the same way. */
#ifndef P4REDUCE_RESULT_P4
#define P4REDUCE_RESULT_P4
#include <core.p4>
#include <v1model.p4>
#include "constants.p4"
#include "metadata.p4"
#include "payload_length.p4"

/* from_parent: the packet is the parent's result, to pass down; delivery: RESULT_MULTICAST or
 * RESULT_UNICAST, for egress */
control Result(inout headers_t hdr, inout standard_metadata_t standard_metadata,
               in job_t job, in round_t round, in exp_next_t merged, in bool from_parent,
               out bit<2> delivery) {
    PayloadLength() payload_length;

    action fill_header(bit<8> flags) {
        hdr.p4r.msg_type = MSG_RESULT;
        hdr.p4r.flags = flags;
        hdr.p4r.count = job.num_workers;
        hdr.p4r.offset = round.offset;
        hdr.p4r.next_offset = merged.min_next;
        hdr.p4r.exponent = merged.max_exp;
        hdr.p4r.bitmap = round.union_bitmap;
        hdr.p4r.wire_token = job.wire_token;   /* workers take only results with their job's wire token */
    }

    /* The result comes from the address the workers sent to; egress writes each worker's. */
    action multicast() {
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.udp.srcPort = AGG_UDP_PORT;
        standard_metadata.mcast_grp = job.mcast_grp;
        delivery = RESULT_MULTICAST;
    }

    /* The parent's result already comes from the address the workers sent to (the parent made
     * it so): only the Ethernet source is this switch's. */
    action multicast_down() {
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.udp.srcPort = AGG_UDP_PORT;
        standard_metadata.mcast_grp = job.mcast_grp;
        delivery = RESULT_MULTICAST;
    }

    /* A resent result goes straight back to the sender. */
    action unicast() {
        mac_addr_t sender_mac = hdr.ethernet.srcAddr;
        ipv4_addr_t sender_ip = hdr.ipv4.srcAddr;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = sender_mac;
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = sender_ip;
        hdr.udp.dstPort = hdr.udp.srcPort;
        hdr.udp.srcPort = AGG_UDP_PORT;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        delivery = RESULT_UNICAST;
    }

    /* UDP and IPv4 lengths from the sub-blocks the result carries. */
    action set_lengths(bit<16> payload_bytes) {
        hdr.udp.len = UDP_HEADER_BYTES + payload_bytes;
        hdr.udp.checksum = 0;
        hdr.ipv4.totalLen = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + payload_bytes;
        hdr.ipv4.ttl = RESULT_TTL;
    }

    apply {
        bit<8> flags = (merged.min_next == NEXT_NONE) ? FLAG_EOT : 8w0;
        if (round.resend) {
            fill_header(flags | FLAG_RETX);
            unicast();
        } else if (from_parent) {
            fill_header(flags);
            multicast_down();
        } else {
            fill_header(flags);
            multicast();
        }
        bit<16> result_bytes;
        payload_length.apply(hdr, result_bytes);
        set_lengths(result_bytes);
    }
}

#endif
