/* Turning a contribution into a result (docs/protocol.md section 5, "The result"): header fields
 * from the round's state, lengths, and source/destination. Per-replica destinations of the
 * multicast are written in egress (egress.p4). Included inside control ReduceIngress. */

action fill_result_header(bit<8> flags) {
    hdr.p4r.msg_type = MSG_RESULT;
    hdr.p4r.flags = flags;
    hdr.p4r.count = meta.num_workers;
    hdr.p4r.offset = meta.round_offset;
    hdr.p4r.next_offset = meta.min_next;
    hdr.p4r.exponent = meta.max_exp;
    hdr.p4r.bitmap = meta.union_bitmap;
}

/* UDP and IPv4 lengths from the sub-blocks the result carries (meta.payload_len). */
action set_result_lengths() {
    hdr.udp.len = UDP_HEADER_BYTES + meta.payload_len;
    hdr.udp.checksum = 0;
    hdr.ipv4.totalLen = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + meta.payload_len;
    hdr.ipv4.ttl = RESULT_TTL;
}

/* The result comes from the address the workers sent to; egress writes each worker's address. */
action multicast_result() {
    hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
    hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
    hdr.udp.srcPort = AGG_UDP_PORT;
    standard_metadata.mcast_grp = meta.job_mcast_grp;
    meta.result = RESULT_MULTICAST;
    agg_events.count(EVENT_RESULT_MULTICAST);
}

/* A resent result goes straight back to the sender. */
action unicast_result() {
    mac_addr_t sender_mac = hdr.ethernet.srcAddr;
    ipv4_addr_t sender_ip = hdr.ipv4.srcAddr;
    hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
    hdr.ethernet.dstAddr = sender_mac;
    hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
    hdr.ipv4.dstAddr = sender_ip;
    hdr.udp.dstPort = hdr.udp.srcPort;
    hdr.udp.srcPort = AGG_UDP_PORT;
    standard_metadata.egress_spec = standard_metadata.ingress_port;
    meta.result = RESULT_UNICAST;
    agg_events.count(EVENT_RESULT_UNICAST);
}

/* A contribution that is not the last of its round is consumed. */
action absorb() {
    agg_events.count(EVENT_ABSORBED);
    mark_to_drop(standard_metadata);
}
