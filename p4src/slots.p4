/* Slot state: per slot copy, the set of workers seen and the contribution count (SwitchML).
 * Index 2 * (slot_base + slot) + ver; ver is the shadow copy. Included inside ReduceIngress. */

register<worker_set_t>(REG_SIZE) seen;
register<bit<8>>(REG_SIZE) count;              /* contributions mod num_workers; 0 = complete */
register<bit<32>>(REG_SIZE) round_offset;      /* offset of the round in progress */
register<sb_bitmap_t>(REG_SIZE) union_bitmap;  /* union of the round's sub-block bitmaps */

action locate_slot() {
    meta.reg_index = ((meta.slot_base + (bit<32>)hdr.p4r.slot) << 1) | (bit<32>)hdr.p4r.ver;
    meta.me = (worker_set_t)1 << meta.rank;
    seen.read(meta.seen, meta.reg_index);
    count.read(meta.count, meta.reg_index);
}

/* Counting this contribution: set our bit here and clear it in the other copy, which releases
 * that copy for the round after next (the worker has its result, or it would not be here). */
action record_contribution() {
    worker_set_t other;
    seen.read(other, meta.reg_index ^ 1);
    seen.write(meta.reg_index ^ 1, other & ~meta.me);
    seen.write(meta.reg_index, meta.seen | meta.me);
    meta.count = meta.count + 1;
    meta.count = (meta.count == meta.num_workers) ? 8w0 : meta.count;
    count.write(meta.reg_index, meta.count);
}

action start_round() {
    meta.old_union = 0;
    round_offset.write(meta.reg_index, hdr.p4r.offset);
    meta.round_offset = hdr.p4r.offset;
}

action join_round() {
    union_bitmap.read(meta.old_union, meta.reg_index);
}

action read_other_count() {
    count.read(meta.other_count, meta.reg_index ^ 1);
}

action read_round_offset() {
    round_offset.read(meta.round_offset, meta.reg_index);
}

action merge_bitmap() {
    meta.union_bitmap = meta.old_union | hdr.p4r.bitmap;
    union_bitmap.write(meta.reg_index, meta.union_bitmap);
}

/* For a resent result: the stored state of a completed round. */
action read_stored_round() {
    union_bitmap.read(meta.union_bitmap, meta.reg_index);
    round_offset.read(meta.round_offset, meta.reg_index);
}
