/* Engine test program: widths, wraparound, signed arithmetic, slices, concatenation, saturation.
   Ingress computes every result into the `r` header from the operands in `o`. */
#include <core.p4>
#include <v1model.p4>

header ops_t { bit<8> a; bit<8> b; bit<16> c; int<8> s; int<8> t; }
header res_t {
    bit<8> add; bit<8> sub; bit<16> mul; bit<8> shl; bit<8> shr; bit<8> slice; bit<16> concat;
    int<8> sadd; int<8> ssat; bit<8> usat; bit<8> usub_sat; bit<8> lt_signed; bit<8> neg; bit<8> cast_down;
    bit<16> cast_up; int<16> sext; bit<8> tern; bit<8> logic;
}
struct headers_t { ops_t o; res_t r; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.o); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.r.setValid();
        hdr.r.add = hdr.o.a + hdr.o.b;
        hdr.r.sub = hdr.o.a - hdr.o.b;
        hdr.r.mul = (bit<16>)hdr.o.a * (bit<16>)hdr.o.b;
        hdr.r.shl = hdr.o.a << 3;
        hdr.r.shr = hdr.o.a >> 3;
        hdr.r.slice = hdr.o.c[11:4];
        hdr.r.concat = hdr.o.a ++ hdr.o.b;
        hdr.r.sadd = hdr.o.s + hdr.o.t;
        hdr.r.ssat = hdr.o.s |+| hdr.o.t;
        hdr.r.usat = hdr.o.a |+| hdr.o.b;
        hdr.r.usub_sat = hdr.o.a |-| hdr.o.b;
        hdr.r.lt_signed = (hdr.o.s < hdr.o.t) ? 8w1 : 8w0;
        hdr.r.neg = ~hdr.o.a;
        hdr.r.cast_down = (bit<8>)hdr.o.c;
        hdr.r.cast_up = (bit<16>)hdr.o.a;
        hdr.r.sext = (int<16>)hdr.o.s;
        hdr.r.tern = (hdr.o.a > hdr.o.b && !(hdr.o.c == 0)) ? hdr.o.a : hdr.o.b;
        hdr.r.logic = (hdr.o.a & 0xF0) | (hdr.o.b ^ 0x0F);
        sm.egress_spec = 1;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.o); pkt.emit(hdr.r); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
