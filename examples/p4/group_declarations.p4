/* Subset group "declarations": typedef, const, enum, serializable enum, error, match_kind use,
   header stack, struct nesting, bit<N>/int<N>/bool. The ingress tags the packet with a
   classification computed from these types. */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<9> port_t;
const port_t CPU_PORT = 64;
const bit<16> ETH_TAG = 0x88b5;

error { BadTagVersion }

enum Color { RED, GREEN }
enum bit<8> Kind { DATA = 1, CONTROL = 2, OTHER = 0xff }

header ethernet_t { mac_t dst; mac_t src; bit<16> etype; }
header tag_t { bit<4> version; bit<4> flags; Kind kind; int<16> delta; bool urgent; bit<7> pad; }
header label_t { bit<8> value; }
struct inner_t { bit<8> x; bool flag; }
struct headers_t { ethernet_t eth; tag_t tag; label_t[2] labels; }
struct metadata_t { inner_t inner; Kind kind; int<16> total; }

parser DeclParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { ETH_TAG: tag; default: accept; }
    }
    state tag {
        pkt.extract(hdr.tag);
        verify(hdr.tag.version == 1, error.BadTagVersion);
        transition accept;
    }
}

control DeclVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control DeclIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action classify(Kind k) { meta.kind = k; }
    table kinds {
        key = { hdr.tag.kind: exact; hdr.tag.urgent: exact; }
        actions = { classify; NoAction; }
        default_action = classify(Kind.OTHER);
    }
    apply {
        if (sm.parser_error == error.BadTagVersion) {
            sm.egress_spec = CPU_PORT;
            return;
        }
        if (!hdr.tag.isValid()) {
            mark_to_drop(sm);
            return;
        }
        kinds.apply();
        Color c = hdr.tag.urgent ? Color.RED : Color.GREEN;
        meta.inner.flag = c == Color.RED;
        meta.total = hdr.tag.delta + (int<16>)-5;
        hdr.tag.delta = meta.total;
        hdr.tag.flags = (bit<4>)(bit<8>)meta.kind;
        sm.egress_spec = sm.ingress_port;
    }
}

control DeclEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control DeclCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control DeclDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(DeclParser(), DeclVerify(), DeclIngress(), DeclEgress(), DeclCompute(), DeclDeparser()) main;
