/* Forwarding of all other traffic (ping, ARP, TCP control traffic, and contributions to jobs
 * aggregated by another switch): IPv4 routes first, then L2 by destination MAC. Both tables are
 * filled by the controller (static MACs, no learning). */
#ifndef P4REDUCE_FORWARDING_P4
#define P4REDUCE_FORWARDING_P4
#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

/* forwarded: a table found the packet a way out (or dropped it on purpose); false = no route.
 * flooded: it goes to a multicast group, and egress must not send a copy back where it came in. */
control Forwarding(inout headers_t hdr, inout standard_metadata_t standard_metadata,
                   out bool forwarded, out bool flooded) {
    action drop_packet() {
        mark_to_drop(standard_metadata);
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    /* Replicate to a multicast group (e.g. broadcast ARP). */
    action flood(bit<16> mcast_grp) {
        standard_metadata.mcast_grp = mcast_grp;
        flooded = true;
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

    apply {
        forwarded = false;
        flooded = false;
        if (hdr.ipv4.isValid()) {
            forwarded = ipv4_routes.apply().hit;
        }
        if (!forwarded) {
            forwarded = l2_forward.apply().hit;
        }
    }
}

#endif
