/* Job and worker admission (docs/protocol.md sections 3 and 5): which job a packet belongs to,
 * which rank its source is, and every check that keeps one job away from another's slots.
 * Included inside control ReduceIngress. */

counter(DROP_REASONS_SIZE, CounterType.packets_and_bytes) drop_reasons;
counter(AGG_EVENTS_SIZE, CounterType.packets_and_bytes) agg_events;

/* Drop the packet and count why. */
action drop_with(bit<32> reason) {
    drop_reasons.count(reason);
    mark_to_drop(standard_metadata);
}

action set_job(bit<32> slot_base, bit<16> slot_count, bit<8> num_workers, bit<16> mcast_grp,
               bit<8> mode) {
    meta.slot_base = slot_base;
    meta.slot_count = slot_count;
    meta.num_workers = num_workers;
    meta.job_mcast_grp = mcast_grp;
    meta.mode = mode;
}

/* job id -> the job's slot range, size, multicast group and mode */
table jobs {
    key = { hdr.p4r.job_id: exact; }
    actions = { set_job; NoAction; }
    default_action = NoAction();
    size = 1024;
}

/* A worker's rank, and the switch port its packets arrive on: a contribution carrying the
 * worker's addresses that enters through any other port is spoofed (DROP_SPOOFED_PORT). */
action set_rank(bit<8> rank, bit<9> port) {
    meta.rank = rank;
    meta.worker_port = port;
}

/* (source IP, source UDP port, job) -> rank and ingress port: the only way a packet gets a rank */
table workers {
    key = {
        hdr.ipv4.srcAddr: exact;
        hdr.udp.srcPort: exact;
        hdr.p4r.job_id: exact;
    }
    actions = { set_rank; NoAction; }
    default_action = NoAction();
    size = 8192;
}

/* Length of the p4reduce payload implied by the sub-blocks the parser extracted. */
#define ADD_SUBBLOCK_LENGTH(K) if (hdr.sb##K.isValid()) { meta.payload_len = meta.payload_len + SUBBLOCK_BYTES; }
