/* Engine test program: header stacks (.next, .last, push_front, pop_front, constant index), select
   with masks, ranges and default, lookahead, verify, and parser errors seen by ingress. */
#include <core.p4>
#include <v1model.p4>

error { BadKind }
header tag_t { bit<7> val; bit<1> bos; }
header kind_t { bit<8> kind; bit<8> idx; }
header info_t { bit<8> err; bit<8> path; bit<8> peek; bit<8> depth; bit<8> last; }
struct headers_t { kind_t k; tag_t[4] tags; info_t info; }
struct meta_t { bit<8> path; bit<8> peek; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.k);
        verify(hdr.k.kind != 0xFF, error.BadKind);
        transition select(hdr.k.kind) {
            0x10 &&& 0xF0: tags;      // 0x10..0x1f
            0x20 .. 0x2F: peek;
            default: accept;
        }
    }
    state tags {
        pkt.extract(hdr.tags.next);
        meta.path = meta.path + 1;
        transition select(hdr.tags.last.bos) { 0: tags; 1: accept; }
    }
    state peek {
        meta.peek = pkt.lookahead<bit<8>>();
        transition select(pkt.lookahead<bit<4>>()) { 0xA: tags; default: accept; }
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.info.setValid();
        hdr.info.err = (sm.parser_error == error.NoError) ? 8w0 :
                       (sm.parser_error == error.StackOutOfBounds) ? 8w3 :
                       (sm.parser_error == error.PacketTooShort) ? 8w1 :
                       (sm.parser_error == error.BadKind) ? 8w9 : 8w7;
        hdr.info.path = meta.path;
        hdr.info.peek = meta.peek;
        if (hdr.k.kind == 0x11) {
            hdr.tags.push_front(1);
            hdr.tags[0].setValid();
            hdr.tags[0].val = 0x55;
            hdr.tags[0].bos = 0;
        } else if (hdr.k.kind == 0x12) {
            hdr.tags.pop_front(1);
        } else if (hdr.k.kind == 0x13) {
            hdr.tags[1].val = 0x7F;
        }
        hdr.info.depth = hdr.tags[0].isValid() ? (hdr.tags[1].isValid() ? (hdr.tags[2].isValid() ? 8w3 : 8w2) : 8w1) : 8w0;
        sm.egress_spec = sm.ingress_port;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.k); pkt.emit(hdr.tags); pkt.emit(hdr.info); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
