/* Shared exponent and next offset (docs/protocol.md sections 5 and 7): per slot copy, the maximum
 * of the round's exponents (SwitchML's shared scale) and the minimum of its next offsets
 * (OmniReduce: the next block anyone needs). */
#ifndef P4REDUCE_EXPONENT_NEXT_P4
#define P4REDUCE_EXPONENT_NEXT_P4
#include <core.p4>
#include <v1model.p4>
#include "metadata.p4"

/* merged: the round's values so far, this contribution included (a resent round's stored ones) */
control ExponentNext(in p4r_t p4r, in round_t round, out exp_next_t merged) {
    register<bit<32>>(REG_SIZE) min_next;
    register<bit<8>>(REG_SIZE) max_exp;

    action start() {
        merged.min_next = p4r.next_offset;
        merged.max_exp = p4r.exponent;
        min_next.write(round.index, merged.min_next);
        max_exp.write(round.index, merged.max_exp);
    }

    action merge() {
        min_next.read(merged.min_next, round.index);
        max_exp.read(merged.max_exp, round.index);
        merged.min_next = (p4r.next_offset < merged.min_next) ? p4r.next_offset : merged.min_next;
        merged.max_exp = (p4r.exponent > merged.max_exp) ? p4r.exponent : merged.max_exp;
        min_next.write(round.index, merged.min_next);
        max_exp.write(round.index, merged.max_exp);
    }

    action read_stored() {
        min_next.read(merged.min_next, round.index);
        max_exp.read(merged.max_exp, round.index);
    }

    apply {
        if (round.resend) {
            read_stored();
        } else if (round.first) {
            start();
        } else {
            merge();
        }
    }
}

#endif
