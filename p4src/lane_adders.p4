/* Lane adders: one register array per lane (sb<K>_l<J> holds element K*SUBBLOCK+J of the block),
 * each 2 * SLOTS long. Per sub-block, three actions:
 *   write_sbK: the first contributor of sub-block K in the round stores its lanes;
 *   add_sbK:   later contributors add, saturating at the int32 limits; the header keeps the sum;
 *   load_sbK:  make sub-block K valid in the packet and fill it with the stored sums.
 * Included inside control ReduceIngress. */

/* Lane registers hold the int32 bit pattern as bit<32>, and every read is cast to int<32>
 * explicitly: on BMv2 a register cell read straight into an int<32> field keeps its unsigned value
 * (0xfffffffb computes as 4294967291, not -5), which would break the saturating add. */
#define LANE_REGISTER(K, J) register<bit<32>>(REG_SIZE) sb##K##_l##J;
#define SUBBLOCK_REGISTERS(K) FOR_EACH_LANE(LANE_REGISTER, K)
FOR_EACH_SUBBLOCK(SUBBLOCK_REGISTERS)

#define LANE_WRITE(K, J) sb##K##_l##J.write(meta.reg_index, (bit<32>)hdr.sb##K.l##J);
#define LANE_ADD(K, J)                                                    \
    sb##K##_l##J.read(stored, meta.reg_index);                            \
    hdr.sb##K.l##J = (lane_t)stored |+| hdr.sb##K.l##J;                   \
    sb##K##_l##J.write(meta.reg_index, (bit<32>)hdr.sb##K.l##J);
#define LANE_LOAD(K, J)                                                   \
    sb##K##_l##J.read(stored, meta.reg_index);                            \
    hdr.sb##K.l##J = (lane_t)stored;

#define SUBBLOCK_ACTIONS(K)                                               \
    action write_sb##K() {                                                \
        FOR_EACH_LANE(LANE_WRITE, K)                                      \
    }                                                                     \
    action add_sb##K() {                                                  \
        bit<32> stored;                                                   \
        FOR_EACH_LANE(LANE_ADD, K)                                        \
    }                                                                     \
    action load_sb##K() {                                                 \
        bit<32> stored;                                                   \
        hdr.sb##K.setValid();                                             \
        FOR_EACH_LANE(LANE_LOAD, K)                                       \
    }
FOR_EACH_SUBBLOCK(SUBBLOCK_ACTIONS)

/* Apply-block steps, expanded once per sub-block: */

/* accumulate a present sub-block: write if nobody sent it yet this round, add otherwise */
#define ACCUMULATE_SUBBLOCK(K)                                            \
    if (hdr.sb##K.isValid()) {                                            \
        if ((meta.old_union & SB_BIT(K)) == 0) { write_sb##K(); }         \
        else { add_sb##K(); }                                             \
    }
/* last contribution: add the union's sub-blocks this packet did not carry */
#define COMPLETE_SUBBLOCK(K)                                              \
    if ((meta.union_bitmap & SB_BIT(K)) != 0 && !hdr.sb##K.isValid()) {   \
        load_sb##K();                                                     \
    }
/* resent result: exactly the union's sub-blocks, from the registers */
#define RELOAD_SUBBLOCK(K)                                                \
    if ((meta.union_bitmap & SB_BIT(K)) != 0) { load_sb##K(); }           \
    else { hdr.sb##K.setInvalid(); }
