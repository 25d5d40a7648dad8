/* Subset group "expressions": arithmetic with wraparound, saturating |+| |-|, bitwise ops,
   shifts, comparisons, logical ops, slices (read and write), concatenation, casts, ?: and
   header validity. Results are written into an 'ops' header that the packet carries. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ops_t {
    bit<8> a; bit<8> b; int<8> sa; int<8> sb;
    bit<8> sum; bit<8> diff; bit<8> prod; bit<8> usat_add; bit<8> usat_sub;
    int<8> ssat_add; int<8> ssat_sub; bit<8> band; bit<8> bor; bit<8> bxor; bit<8> bnot;
    bit<8> shl; bit<8> shr; bit<4> hi_nibble; bit<4> pad; bit<16> concat; bit<8> neg; bit<8> cmp; bit<8> pick;
    bit<8> sliced;
}
struct headers_t { ethernet_t eth; ops_t ops; }
struct metadata_t { }

parser ExprParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x88b6: ops; default: accept; }
    }
    state ops { pkt.extract(hdr.ops); transition accept; }
}

control ExprVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ExprIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action compute() {
        hdr.ops.sum = hdr.ops.a + hdr.ops.b;
        hdr.ops.diff = hdr.ops.a - hdr.ops.b;
        hdr.ops.prod = hdr.ops.a * hdr.ops.b;
        hdr.ops.usat_add = hdr.ops.a |+| hdr.ops.b;
        hdr.ops.usat_sub = hdr.ops.a |-| hdr.ops.b;
        hdr.ops.ssat_add = hdr.ops.sa |+| hdr.ops.sb;
        hdr.ops.ssat_sub = hdr.ops.sa |-| hdr.ops.sb;
        hdr.ops.band = hdr.ops.a & hdr.ops.b;
        hdr.ops.bor = hdr.ops.a | hdr.ops.b;
        hdr.ops.bxor = hdr.ops.a ^ hdr.ops.b;
        hdr.ops.bnot = ~hdr.ops.a;
        hdr.ops.shl = hdr.ops.a << 3;
        hdr.ops.shr = hdr.ops.a >> hdr.ops.b[2:0];
        hdr.ops.hi_nibble = hdr.ops.a[7:4];
        hdr.ops.concat = hdr.ops.a ++ hdr.ops.b;
        hdr.ops.neg = -hdr.ops.a;
        hdr.ops.cmp = (bit<8>)((bit<1>)(hdr.ops.a < hdr.ops.b)) | ((hdr.ops.sa < hdr.ops.sb) ? 8w2 : 8w0)
                      | ((hdr.ops.a == hdr.ops.b || !(hdr.ops.a != 0)) ? 8w4 : 8w0);
        hdr.ops.pick = hdr.ops.a > hdr.ops.b ? hdr.ops.a : hdr.ops.b;
        hdr.ops.sliced = 0;
        hdr.ops.sliced[3:0] = hdr.ops.b[7:4];
        hdr.ops.sliced[7:6] = 2w3;
    }
    apply {
        if (hdr.ops.isValid()) {
            compute();
            sm.egress_spec = sm.ingress_port;
        } else {
            mark_to_drop(sm);
        }
    }
}

control ExprEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control ExprCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control ExprDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ops); } }

V1Switch(ExprParser(), ExprVerify(), ExprIngress(), ExprEgress(), ExprCompute(), ExprDeparser()) main;
