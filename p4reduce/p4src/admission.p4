/* Admission (docs/protocol.md sections 3 and 5, steps 1-6): which job a packet belongs to, which
 * rank its sender is, and every check that keeps a job's slots safe from malformed packets, other
 * jobs and other hosts. A packet of no job aggregated here (ordinary traffic, or a contribution
 * passing through on its way to the aggregating switch) is left to forwarding. On an interior
 * switch of a job's tree, the parent's result for a round is admitted too (section 11). */
#ifndef P4REDUCE_ADMISSION_P4
#define P4REDUCE_ADMISSION_P4
#include <core.p4>
#include <v1model.p4>
#include "constants.p4"
#include "metadata.p4"
#include "payload_length.p4"

/* Outcome: drop_reason != DROP_NONE drops the packet; otherwise local_job says whether it is a
 * contribution to aggregate here (from `worker` of `job`) or a packet to forward, and from_parent
 * that it is the parent's result for a round this switch sent up (no worker: the tree's uplink). */
control Admission(in headers_t hdr, in standard_metadata_t standard_metadata,
                  out bool local_job, out bool from_parent, out job_t job, out worker_t worker,
                  out drop_reason_t drop_reason) {
    PayloadLength() payload_length;

    action set_job(bit<32> slot_base, bit<16> slot_count, bit<8> num_workers, bit<16> mcast_grp,
                   bit<8> mode, bit<32> wire_token) {
        job.slot_base = slot_base;
        job.slot_count = slot_count;
        job.num_workers = num_workers;
        job.mcast_grp = mcast_grp;
        job.mode = mode;
        job.wire_token = wire_token;
    }

    /* job id -> the job's slot range, size, multicast group, mode and wire token */
    table jobs {
        key = { hdr.p4r.job_id: exact; }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* The tree's root: a round completes after `children` contributions (its child switches,
     * plus any workers attached here), and the result goes down to them. */
    action aggregate_root(bit<8> children) {
        job.children = children;
    }

    /* An interior switch: a round completes after `children` contributions, and its partial sum
     * goes up to the parent as one worker (rank up_rank, from up_ip, out of up_port). */
    action aggregate_child(bit<8> children, bit<9> up_port, bit<8> up_rank, bit<32> up_ip,
                           bit<48> up_src_mac, bit<48> up_dst_mac) {
        job.children = children;
        job.has_parent = true;
        job.up_port = up_port;
        job.up_rank = up_rank;
        job.up_ip = up_ip;
        job.up_src_mac = up_src_mac;
        job.up_dst_mac = up_dst_mac;
    }

    /* job id -> the job's place in a tree of switches; a miss aggregates the job flat, here alone */
    table tree {
        key = { hdr.p4r.job_id: exact; }
        actions = { aggregate_root; aggregate_child; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* A worker's rank, and the switch port its packets arrive on: a contribution carrying the
     * worker's addresses that enters through any other port is spoofed (DROP_SPOOFED_PORT). */
    action set_rank(bit<8> rank, bit<9> port) {
        worker.rank = rank;
        worker.port = port;
    }

    /* (source IP, source UDP port, job) -> rank and port: the only way a packet gets a rank */
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

    apply {
        local_job = false;
        job.slot_base = 0;
        job.slot_count = 0;
        job.num_workers = 0;
        job.mcast_grp = 0;
        job.mode = 0;
        job.wire_token = 0;
        job.children = 0;
        job.has_parent = false;
        job.up_port = 0;
        job.up_rank = 0;
        job.up_ip = 0;
        job.up_src_mac = 0;
        job.up_dst_mac = 0;
        from_parent = false;
        worker.rank = 0;
        worker.port = 0;
        drop_reason = DROP_NONE;

        /* step 1: parsed whole, intact, and a contribution (or a result: step 2) */
        if (standard_metadata.parser_error != error.NoError) {
            drop_reason = DROP_TRUNCATED;       /* on any packet: BMv2 does not drop by itself */
            return;
        }
        if (!hdr.p4r.isValid()) {
            return;                             /* ordinary traffic */
        }
        if (standard_metadata.checksum_error == 1) {
            drop_reason = DROP_BAD_CHECKSUM;
            return;
        }
        bool is_result = hdr.p4r.msg_type == MSG_RESULT;
        if (hdr.p4r.msg_type != MSG_CONTRIB && !is_result) {
            drop_reason = DROP_BAD_TYPE;
            return;
        }

        /* step 2: a job of this switch, from a known worker on its own port; or the parent's
         * result, which only an interior switch of the job's tree takes, and only on its uplink */
        if (!jobs.apply().hit) {
            if (is_result) {
                drop_reason = DROP_BAD_TYPE;
            }
            return;                             /* not aggregated here: forwarded */
        }
        local_job = true;
        job.children = job.num_workers;
        tree.apply();
        if (is_result) {
            if (!job.has_parent || standard_metadata.ingress_port != job.up_port) {
                drop_reason = DROP_BAD_TYPE;
                return;
            }
            from_parent = true;
        } else {
            if (!workers.apply().hit) {
                drop_reason = DROP_UNKNOWN_WORKER;
                return;
            }
            if (standard_metadata.ingress_port != worker.port) {
                drop_reason = DROP_SPOOFED_PORT;
                return;
            }

            /* step 3: the rank the worker claims is its own, and within the job */
            if (hdr.p4r.rank != worker.rank) {
                drop_reason = DROP_BAD_RANK;
                return;
            }
            if (worker.rank >= job.num_workers || worker.rank >= MAX_WORKERS) {
                drop_reason = DROP_RANK_RANGE;
                return;
            }
        }

        /* step 4: a slot of the job */
        if ((bit<16>)hdr.p4r.slot >= job.slot_count) {
            drop_reason = DROP_SLOT_RANGE;
            return;
        }

        /* step 5: sub-blocks of this layout only; all of them in a dense job */
        if ((hdr.p4r.bitmap & ~FULL_BITMAP) != 0
                || (job.mode == MODE_DENSE && hdr.p4r.bitmap != FULL_BITMAP)) {
            drop_reason = DROP_BAD_BITMAP;
            return;
        }

        /* step 6: lengths agree with the bitmap, and nothing trails the IPv4 packet */
        bit<16> payload_bytes;
        payload_length.apply(hdr, payload_bytes);
        if (hdr.udp.len != UDP_HEADER_BYTES + payload_bytes
                || hdr.ipv4.totalLen != IPV4_HEADER_BYTES + hdr.udp.len
                || standard_metadata.packet_length != ETH_HEADER_BYTES + (bit<32>)hdr.ipv4.totalLen) {
            drop_reason = DROP_BAD_LENGTH;
            return;
        }
    }
}

#endif
