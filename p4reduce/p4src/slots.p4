/* Slot state (docs/protocol.md sections 4 and 5): per slot copy, the workers seen, the
 * contribution count, the round's offset and the union of its bitmaps (SwitchML's bitmap and
 * counter, with OmniReduce's union). Register index 2 * (slot_base + slot) + ver; ver is the
 * shadow copy. This stage decides what a contribution does to its round; the lane adders, the
 * exponent and next offset and the result follow its decision (round_t). On an interior switch of
 * a tree (section 11) a completed copy waits for the parent's result, and have_result says it came. */
#ifndef P4REDUCE_SLOTS_P4
#define P4REDUCE_SLOTS_P4
#include <core.p4>
#include <v1model.p4>
#include "constants.p4"
#include "metadata.p4"

/* Outcome: drop_reason != DROP_NONE drops the contribution (a duplicate while its round is open,
 * a stale copy, an offset that is not the round's) or the parent's result (no copy waits for it);
 * otherwise `round` says what it does. */
control Slots(in p4r_t p4r, in job_t job, in bit<8> rank, in bool from_parent,
              out round_t round, out drop_reason_t drop_reason) {
    register<worker_set_t>(REG_SIZE) seen;
    register<bit<8>>(REG_SIZE) count;              /* contributions mod job.children; 0 = complete */
    register<bit<32>>(REG_SIZE) round_offset;      /* offset of the round in progress */
    register<sb_bitmap_t>(REG_SIZE) union_bitmap;  /* union of the round's sub-block bitmaps */
    register<bit<8>>(REG_SIZE) have_result;        /* 1: the copy holds the parent's result */

    apply {
        round.index = ((job.slot_base + (bit<32>)p4r.slot) << 1) | (bit<32>)p4r.ver;
        round.first = false;
        round.last = false;
        round.resend = false;
        round.have_result = false;
        round.stored = 0;
        round.union_bitmap = 0;
        round.offset = p4r.offset;
        drop_reason = DROP_NONE;

        worker_set_t me = (worker_set_t)1 << rank;
        worker_set_t seen_here;
        bit<8> counted;
        seen.read(seen_here, round.index);
        count.read(counted, round.index);
        bit<8> has_result;
        have_result.read(has_result, round.index);

        if (from_parent) {
            /* The parent's result is this copy's only while the copy waits for it: its round sent
             * up complete (count 0 with children seen) at this offset, no result yet. Anything
             * else is a duplicate or a late copy. The result is then stored as a round's first
             * contribution would be, and becomes the copy's result. */
            bit<32> waiting_offset;
            round_offset.read(waiting_offset, round.index);
            if (counted != 0 || has_result != 0 || seen_here == 0 || waiting_offset != p4r.offset) {
                drop_reason = DROP_STALE_RESULT;
                return;
            }
            have_result.write(round.index, 1);
            round.first = true;
            round.union_bitmap = p4r.bitmap;
            union_bitmap.write(round.index, round.union_bitmap);
            return;
        }

        if ((seen_here & me) != 0) {
            /* a retransmission of a contribution already counted */
            if (counted != 0) {
                drop_reason = DROP_DUPLICATE_PENDING;
                return;
            }
            round.resend = true;            /* the round is complete: resend its result */
            round.have_result = has_result != 0;
            union_bitmap.read(round.union_bitmap, round.index);
            round_offset.read(round.offset, round.index);
            round.stored = round.union_bitmap;
            return;
        }

        if (counted == 0) {
            /* a new round may only start here once the other copy's round is complete */
            bit<8> counted_other;
            count.read(counted_other, round.index ^ 1);
            if (counted_other != 0) {
                drop_reason = DROP_STALE_COPY;
                return;
            }
            round.first = true;
            round_offset.write(round.index, p4r.offset);
            have_result.write(round.index, 0);
        } else {
            round_offset.read(round.offset, round.index);
            if (round.offset != p4r.offset) {
                drop_reason = DROP_OFFSET_MISMATCH;
                return;
            }
            union_bitmap.read(round.stored, round.index);
        }

        /* Count the contribution: set our bit here and clear it in the other copy, which releases
         * that copy for the round after next (the worker has its result, or it would not be here). */
        worker_set_t seen_other;
        seen.read(seen_other, round.index ^ 1);
        seen.write(round.index ^ 1, seen_other & ~me);
        seen.write(round.index, seen_here | me);
        counted = counted + 1;
        if (counted == job.children) {
            counted = 0;
        }
        count.write(round.index, counted);
        round.last = counted == 0;

        round.union_bitmap = round.stored | p4r.bitmap;
        union_bitmap.write(round.index, round.union_bitmap);
    }
}

#endif
