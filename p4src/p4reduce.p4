/* p4reduce: in-network integer aggregation for distributed training on v1model (BMv2).
 *
 * Dense aggregation with loss recovery as in SwitchML (NSDI'21) and zero-block skipping as in
 * OmniReduce (SIGCOMM'21), in one state machine: a dense packet is one whose sub-block bitmap is
 * full. The specification is docs/protocol.md; this file is the pipeline, and each stage's
 * tables, registers and actions live in their own file:
 *
 *   config.p4, constants.p4   sizes (LANES, SUBBLOCK, SLOTS, MAX_WORKERS) and protocol values
 *   lanes.p4                  per-sub-block / per-lane iteration macros
 *   headers.p4                headers and metadata
 *   parser.p4                 parser (bitmap-driven sub-blocks) and checksum verification
 *   source_guard.p4           IP source guard on host-facing ports
 *   forwarding.p4             L3/L2 forwarding of all other traffic
 *   admission.p4              job and worker tables, drop and event counters
 *   slots.p4                  seen bitmap, count, round offset, union bitmap
 *   lane_adders.p4            one register per lane, write / saturating add / load
 *   exponent_next.p4          max exponent and min next offset
 *   result.p4                 contribution -> result rewrite
 *   egress.p4                 per-worker destination of multicast replicas
 *   deparser.p4               checksum update and deparser
 */
#include <core.p4>
#include <v1model.p4>

#include "config.p4"
#include "constants.p4"
#include "lanes.p4"
#include "headers.p4"
#include "parser.p4"

control ReduceIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
#include "forwarding.p4"
#include "admission.p4"
#include "source_guard.p4"
#include "slots.p4"
#include "lane_adders.p4"
#include "exponent_next.p4"
#include "result.p4"

    apply {
        /* ---- source guard: a host sends IPv4 only from its own address ---- */
        if (hdr.ipv4.isValid()) {
            if (source_guard.apply().hit) {
                if (hdr.ipv4.srcAddr != meta.host_ip) {
                    drop_with(DROP_SPOOFED_SOURCE);
                    return;
                }
            }
        }

        if (standard_metadata.parser_error != error.NoError) {
            drop_with(DROP_TRUNCATED);
            return;
        }

        /* ---- is this an aggregation packet for a job of this switch? ---- */
        if (hdr.p4r.isValid()) {
            if (standard_metadata.checksum_error == 1) {
                drop_with(DROP_BAD_CHECKSUM);
                return;
            }
            if (hdr.p4r.msg_type != MSG_CONTRIB) {
                drop_with(DROP_BAD_TYPE);
                return;
            }
            if (jobs.apply().hit) {
                meta.local_job = 1;
            }
        }

        /* ---- everything else: route, else switch. Contributions for jobs this switch does not
         * aggregate are forwarded too (a leaf passes them up to the aggregating switch); with no
         * route for them they are dropped as UNKNOWN_JOB. ---- */
        if (meta.local_job == 0) {
            bool routed = false;
            if (hdr.ipv4.isValid()) {
                routed = ipv4_routes.apply().hit;
            }
            if (!routed) {
                if (!l2_forward.apply().hit) {
                    if (hdr.p4r.isValid()) {
                        drop_with(DROP_UNKNOWN_JOB);
                    } else {
                        drop_with(DROP_NO_ROUTE);
                    }
                    return;
                }
            }
            agg_events.count(EVENT_FORWARDED);
            return;
        }

        /* ---- admission ---- */
        if (!workers.apply().hit) {
            drop_with(DROP_UNKNOWN_WORKER);
            return;
        }
        if (standard_metadata.ingress_port != meta.worker_port) {
            drop_with(DROP_SPOOFED_PORT);
            return;
        }
        if (hdr.p4r.rank != meta.rank) {
            drop_with(DROP_BAD_RANK);
            return;
        }
        if (meta.rank >= meta.num_workers || meta.rank >= MAX_WORKERS) {
            drop_with(DROP_RANK_RANGE);
            return;
        }
        if ((bit<16>)hdr.p4r.slot >= meta.slot_count) {
            drop_with(DROP_SLOT_RANGE);
            return;
        }
        if ((hdr.p4r.bitmap & ~FULL_BITMAP) != 0
                || (meta.mode == MODE_DENSE && hdr.p4r.bitmap != FULL_BITMAP)) {
            drop_with(DROP_BAD_BITMAP);
            return;
        }
        meta.payload_len = P4R_HEADER_BYTES;
        FOR_EACH_SUBBLOCK(ADD_SUBBLOCK_LENGTH)
        if (hdr.udp.len != UDP_HEADER_BYTES + meta.payload_len
                || hdr.ipv4.totalLen != IPV4_HEADER_BYTES + hdr.udp.len
                || standard_metadata.packet_length != ETH_HEADER_BYTES + (bit<32>)hdr.ipv4.totalLen) {
            drop_with(DROP_BAD_LENGTH);
            return;
        }

        /* ---- slot ---- */
        locate_slot();
        if ((meta.seen & meta.me) != 0) {
            /* a retransmission of a contribution already counted */
            if (meta.count == 0) {
                read_stored_round();
                read_stored_next_and_exponent();
                FOR_EACH_SUBBLOCK(RELOAD_SUBBLOCK)
                fill_result_header((meta.min_next == NEXT_NONE) ? FLAG_EOT | FLAG_RETX : FLAG_RETX);
                unicast_result();
            } else {
                drop_with(DROP_DUPLICATE_PENDING);
                return;
            }
        } else {
            if (meta.count == 0) {
                /* a new round may only start here once the other copy's round is complete */
                meta.first = 1;
                read_other_count();
                if (meta.other_count != 0) {
                    drop_with(DROP_STALE_COPY);
                    return;
                }
            } else {
                meta.first = 0;
                read_round_offset();
                if (meta.round_offset != hdr.p4r.offset) {
                    drop_with(DROP_OFFSET_MISMATCH);
                    return;
                }
            }
            record_contribution();

            /* ---- lanes, bitmap, exponent, next offset ---- */
            if (meta.first == 1) {
                start_round();
                first_next_and_exponent();
            } else {
                join_round();
                merge_next_and_exponent();
            }
            FOR_EACH_SUBBLOCK(ACCUMULATE_SUBBLOCK)
            merge_bitmap();

            if (meta.count != 0) {
                absorb();
                return;
            }
            FOR_EACH_SUBBLOCK(COMPLETE_SUBBLOCK)
            fill_result_header((meta.min_next == NEXT_NONE) ? FLAG_EOT : 8w0);
            multicast_result();
        }

        /* ---- result lengths (both kinds) ---- */
        meta.payload_len = P4R_HEADER_BYTES;
        FOR_EACH_SUBBLOCK(ADD_SUBBLOCK_LENGTH)
        set_result_lengths();
    }
}

#include "egress.p4"
#include "deparser.p4"

V1Switch(ReduceParser(), ReduceVerifyChecksum(), ReduceIngress(), ReduceEgress(),
         ReduceComputeChecksum(), ReduceDeparser()) main;
