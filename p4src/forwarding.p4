/* Forwarding of all other traffic (ping, ARP, TCP control traffic): IPv4 routes first, then L2
 * by destination MAC. Both tables are filled by the controller (static MACs, no learning).
 * Included inside control ReduceIngress. */

action drop_packet() {
    mark_to_drop(standard_metadata);
}

action forward(bit<9> port) {
    standard_metadata.egress_spec = port;
}

/* Replicate to a multicast group (e.g. broadcast ARP); egress never sends a copy back out of
 * its ingress port. */
action flood(bit<16> mcast_grp) {
    standard_metadata.mcast_grp = mcast_grp;
    meta.flooded = 1;
}

/* Router behaviour: next-hop MACs and TTL decrement (checksum redone by ReduceComputeChecksum). */
action route(bit<9> port, mac_addr_t dst_mac, mac_addr_t src_mac) {
    standard_metadata.egress_spec = port;
    hdr.ethernet.dstAddr = dst_mac;
    hdr.ethernet.srcAddr = src_mac;
    hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
}

table ipv4_routes {
    key = { hdr.ipv4.dstAddr: lpm; }
    actions = { route; forward; drop_packet; NoAction; }
    default_action = NoAction();
    size = 1024;
}

table l2_forward {
    key = { hdr.ethernet.dstAddr: exact; }
    actions = { forward; flood; drop_packet; NoAction; }
    default_action = NoAction();
    size = 1024;
}
