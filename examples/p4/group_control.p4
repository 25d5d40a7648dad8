/* Subset group "control": local variables, actions with directional and directionless
   parameters, tables with exact/lpm/ternary/range/optional keys, const entries with priorities,
   const default actions, sizes, direct counters, switch on action_run, .hit/.miss, exit and
   return. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header l4_t { bit<16> sport; bit<16> dport; }
struct headers_t { ethernet_t eth; ipv4_t ip; l4_t l4; }
struct metadata_t { bit<8> klass; bit<1> acl_hit; }

parser CParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x0800: ip; default: accept; }
    }
    state ip {
        pkt.extract(hdr.ip);
        transition select(hdr.ip.proto) { 6: l4; 17: l4; default: accept; }
    }
    state l4 { pkt.extract(hdr.l4); transition accept; }
}

control CVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) acl_stats;

    action drop() { mark_to_drop(sm); }
    action set_class(bit<8> klass) { meta.klass = klass; }
    action forward(bit<9> port) { sm.egress_spec = port; }
    action bump(inout bit<8> ttl, in bit<8> by) { ttl = ttl - by; }
    action permit() { meta.acl_hit = 1; }

    table classify {
        key = {
            hdr.ip.src: ternary;
            hdr.ip.proto: exact;
            hdr.l4.dport: range;
            hdr.l4.sport: optional;
        }
        actions = { set_class; NoAction; }
        const entries = {
            priority = 30: (0x0a000000 &&& 0xff000000, 6, 0 .. 1023, _): set_class(1);
            priority = 100: (_, 17, 53 .. 53, _): set_class(2);
            priority = 10: (_, 6, _, 7777): set_class(3);
        }
        const default_action = set_class(0);
    }
    table routes {
        key = { hdr.ip.dst: lpm; }
        actions = { forward; drop; }
        default_action = drop();
        size = 4096;
    }
    table acl {
        key = { hdr.eth.src: exact; meta.klass: exact; }
        actions = { permit; @defaultonly NoAction; }
        default_action = NoAction();
        counters = acl_stats;
    }
    apply {
        if (!hdr.ip.isValid()) {
            exit;
        }
        classify.apply();
        switch (routes.apply().action_run) {
            forward: {
                bump(hdr.ip.ttl, 1);
            }
            drop: {
                return;
            }
        }
        if (acl.apply().miss) {
            bit<8> penalty = meta.klass + 8w1;
            bump(hdr.ip.ttl, penalty);
        }
    }
}

control CEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control CDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ip); pkt.emit(hdr.l4); }
}

V1Switch(CParser(), CVerify(), CIngress(), CEgress(), CCompute(), CDeparser()) main;
