/* Egress: each replica of a multicast result gets its worker's MAC, IP, UDP port and rank,
 * looked up by (job, egress_rid = rank); flooded copies never return to their ingress port. */
#ifndef P4REDUCE_EGRESS_P4
#define P4REDUCE_EGRESS_P4
#include "headers.p4"

control ReduceEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    counter(DROP_REASONS_SIZE, CounterType.packets_and_bytes) egress_drops;

    action set_worker_addr(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port) {
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.dstAddr = ip;
        hdr.udp.dstPort = udp_port;
        hdr.p4r.rank = (bit<8>)standard_metadata.egress_rid;
    }

    table worker_addrs {
        key = {
            hdr.p4r.job_id: exact;
            standard_metadata.egress_rid: exact;
        }
        actions = { set_worker_addr; NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    apply {
        if (meta.result == RESULT_MULTICAST) {
            if (!worker_addrs.apply().hit) {
                egress_drops.count(DROP_NO_WORKER_ADDR);
                mark_to_drop(standard_metadata);
            }
        } else if (meta.flooded == 1 && standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

#endif
