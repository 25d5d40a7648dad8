/* Lane adders (docs/protocol.md sections 4 and 5): the sums themselves. Lane J of sub-block K
 * (element K * SUBBLOCK + J of a block) has a register of its own, lane_adders.sbK.lJ, 2 * SLOTS
 * cells long. Per sub-block and packet, one of:
 *   store: the round's first sender of the sub-block writes its lanes;
 *   add:   later senders add, saturating at the int32 limits; the packet keeps the sums;
 *   load:  the packet gets the stored sums (a sub-block it did not carry, or a resent result).
 * To change the arithmetic of a lane (wrap instead of saturate, max instead of sum), edit
 * LANE_ADD below and the matching line of the reference model (docs/protocol.md section 9). */
#ifndef P4REDUCE_LANE_ADDERS_P4
#define P4REDUCE_LANE_ADDERS_P4
#include <core.p4>
#include <v1model.p4>
#include "metadata.p4"

/* The lanes of one sub-block; sb_bit is the sub-block's bit in a bitmap. Lane registers hold the
 * int32 bit pattern as bit<32>, and every read is cast to int<32> explicitly: on BMv2 a register
 * cell read straight into an int<32> field keeps its unsigned value (0xfffffffb computes as
 * 4294967291, not -5), which would break the saturating add. */
control SubBlockAdder(inout subblock_t sb, in round_t round, in sb_bitmap_t sb_bit) {
#define LANE_REGISTER(J) register<bit<32>>(REG_SIZE) l##J;
    FOR_EACH_LANE(LANE_REGISTER)

#define LANE_STORE(J) l##J.write(round.index, (bit<32>)sb.l##J);
    action store() {
        FOR_EACH_LANE(LANE_STORE)
    }

#define LANE_ADD(J)                                                       \
    l##J.read(stored, round.index);                                       \
    sb.l##J = (lane_t)stored |+| sb.l##J;                                 \
    l##J.write(round.index, (bit<32>)sb.l##J);
    action add() {
        bit<32> stored;
        FOR_EACH_LANE(LANE_ADD)
    }

#define LANE_LOAD(J)                                                      \
    l##J.read(stored, round.index);                                       \
    sb.l##J = (lane_t)stored;
    action load() {
        bit<32> stored;
        sb.setValid();
        FOR_EACH_LANE(LANE_LOAD)
    }

    apply {
        bool held = (round.stored & sb_bit) != 0;   /* the registers hold the round's sums */
        if (round.resend) {
            /* a resent result carries exactly the round's sub-blocks, from the registers */
            if (held) {
                load();
            } else {
                sb.setInvalid();
            }
        } else if (sb.isValid()) {
            if (held) {
                add();
            } else {
                store();
            }
        } else if (held && round.last) {
            load();                                 /* the result needs what others sent */
        }
    }
}

/* Every sub-block's adder, instances sb0, sb1, ... applied to the packet's sub-blocks. */
control LaneAdders(inout headers_t hdr, in round_t round) {
#define SUBBLOCK_ADDER(K) SubBlockAdder() sb##K;
    FOR_EACH_SUBBLOCK(SUBBLOCK_ADDER)

#define APPLY_SUBBLOCK_ADDER(K) sb##K.apply(hdr.sb##K, round, SB_BIT(K));
    apply {
        FOR_EACH_SUBBLOCK(APPLY_SUBBLOCK_ADDER)
    }
}

#endif
