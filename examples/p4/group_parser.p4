/* Subset group "parser": select on tuples with masks, ranges and default, header stacks via
   .next/.last, lookahead, verify (also to reject a packet: BMv2 has no reject state, and p4c-bm2-ss
   compiles 'transition reject' as accept with a warning). The parsed path is reported in a
   trailer. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> kind; bit<8> len; }
header opt_t { bit<7> value; bit<1> last; }
header trailer_t { bit<8> path; bit<8> opts; bit<8> peek; bit<8> err; }
struct headers_t { ethernet_t eth; tag_t tag; opt_t[4] opts; trailer_t trailer; }
struct metadata_t { bit<8> path; bit<8> peek; }

parser PParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.path = 0;
        transition select(hdr.eth.etype) {
            0x9000 &&& 0xFF00: tagged;      // 0x90xx
            0x8800 .. 0x88FF: opts;
            0xDEAD: bad;
            default: accept;
        }
    }
    state tagged {
        pkt.extract(hdr.tag);
        meta.path = meta.path | 1;
        verify(hdr.tag.len <= 64, error.HeaderTooShort);
        transition select(hdr.tag.kind, hdr.tag.len) {
            (1, _): opts;
            (2, 0 .. 15): peek;
            (_, 0xF0 &&& 0xF0): accept;
            default: accept;
        }
    }
    state opts {
        pkt.extract(hdr.opts.next);
        meta.path = meta.path | 2;
        transition select(hdr.opts.last.last) { 1w1: peek; default: opts; }
    }
    state bad {
        verify(false, error.NoMatch);    // parsing stops here with parser_error NoMatch
        transition accept;
    }
    state peek {
        meta.peek = pkt.lookahead<bit<8>>();
        meta.path = meta.path | 4;
        transition accept;
    }
}

control PVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control PIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.trailer.setValid();
        hdr.trailer.path = meta.path;
        hdr.trailer.opts = (bit<8>)(bit<1>)hdr.opts[0].isValid() + (bit<8>)(bit<1>)hdr.opts[1].isValid()
                         + (bit<8>)(bit<1>)hdr.opts[2].isValid() + (bit<8>)(bit<1>)hdr.opts[3].isValid();
        hdr.trailer.peek = meta.peek;
        if (sm.parser_error == error.NoError) { hdr.trailer.err = 0; }
        else if (sm.parser_error == error.StackOutOfBounds) { hdr.trailer.err = 1; }
        else if (sm.parser_error == error.HeaderTooShort) { hdr.trailer.err = 2; }
        else { hdr.trailer.err = 3; }
        sm.egress_spec = sm.ingress_port;
    }
}

control PEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control PCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control PDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); pkt.emit(hdr.opts); pkt.emit(hdr.trailer); }
}

V1Switch(PParser(), PVerify(), PIngress(), PEgress(), PCompute(), PDeparser()) main;
