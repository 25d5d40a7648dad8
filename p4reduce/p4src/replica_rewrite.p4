/* Egress rewrite of multicast results (docs/protocol.md sections 3 and 5): the job's group holds
 * one replica per worker, with egress_rid = the worker's rank, and each replica gets its worker's
 * MAC, IP, UDP port and rank. */
#ifndef P4REDUCE_REPLICA_REWRITE_P4
#define P4REDUCE_REPLICA_REWRITE_P4
#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

/* addressed: false when the job has no address for this rank (the replica must be dropped) */
control ReplicaRewrite(inout headers_t hdr, in standard_metadata_t standard_metadata,
                       out bool addressed) {
    action set_worker_addr(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port) {
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.dstAddr = ip;
        hdr.udp.dstPort = udp_port;
        hdr.p4r.rank = (bit<8>)standard_metadata.egress_rid;
    }

    /* (job, rank) -> the worker's addresses */
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
        addressed = worker_addrs.apply().hit;
    }
}

#endif
