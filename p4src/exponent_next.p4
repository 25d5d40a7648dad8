/* Shared exponent and next offset: per slot copy the maximum of the round's exponents (SwitchML's
 * shared scale) and the minimum of its next offsets (OmniReduce: the next block anyone needs).
 * Included inside control ReduceIngress. */

register<bit<32>>(REG_SIZE) min_next;
register<bit<8>>(REG_SIZE) max_exp;

action first_next_and_exponent() {
    meta.min_next = hdr.p4r.next_offset;
    meta.max_exp = hdr.p4r.exponent;
    min_next.write(meta.reg_index, meta.min_next);
    max_exp.write(meta.reg_index, meta.max_exp);
}

action merge_next_and_exponent() {
    min_next.read(meta.min_next, meta.reg_index);
    max_exp.read(meta.max_exp, meta.reg_index);
    meta.min_next = (hdr.p4r.next_offset < meta.min_next) ? hdr.p4r.next_offset : meta.min_next;
    meta.max_exp = (hdr.p4r.exponent > meta.max_exp) ? hdr.p4r.exponent : meta.max_exp;
    min_next.write(meta.reg_index, meta.min_next);
    max_exp.write(meta.reg_index, meta.max_exp);
}

action read_stored_next_and_exponent() {
    min_next.read(meta.min_next, meta.reg_index);
    max_exp.read(meta.max_exp, meta.reg_index);
}
