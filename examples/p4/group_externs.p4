/* Subset group "v1model externs": register, counter, direct_counter, hash (crc16, crc32,
   identity, csum16), random, mark_to_drop, clone / clone_preserving_field_list,
   resubmit_preserving_field_list, recirculate_preserving_field_list, truncate, checksums, log_msg,
   assert/assume, standard_metadata, and @controller_header packet-in/out headers. */
#include <core.p4>
#include <v1model.p4>

const bit<32> MIRROR_SESSION = 5;
const bit<9> CPU_PORT = 64;

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> pad; }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header stats_t { bit<32> h_crc32; bit<16> h_crc16; bit<16> h_ident; bit<16> h_csum; bit<8> rnd; bit<8> seen; }
struct headers_t { packet_out_t pout; packet_in_t pin; ethernet_t eth; stats_t stats; }
struct metadata_t {
    @field_list(1) bit<8> round;
    bit<32> slot;
}

parser XParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { CPU_PORT: from_cpu; default: eth; }
    }
    state from_cpu { pkt.extract(hdr.pout); transition eth; }
    state eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x88b7: stats; default: accept; }
    }
    state stats { pkt.extract(hdr.stats); transition accept; }
}

control XVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.stats.isValid(), { hdr.stats.h_crc32, hdr.stats.h_crc16 },
                        hdr.stats.h_csum, HashAlgorithm.csum16);
    }
}

control XIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(256) seen;
    counter(256, CounterType.packets) per_port;
    counter(1, CounterType.bytes) total_bytes;

    action to_cpu() {
        hdr.pin.setValid();
        hdr.pin.ingress_port = sm.ingress_port;
        sm.egress_spec = CPU_PORT;
    }
    apply {
        per_port.count((bit<32>)sm.ingress_port);
        total_bytes.count(0);
        if (hdr.pout.isValid()) {
            sm.egress_spec = hdr.pout.egress_port;
            hdr.pout.setInvalid();
            exit;
        }
        if (!hdr.stats.isValid()) {
            to_cpu();
            return;
        }
        hash(hdr.stats.h_crc32, HashAlgorithm.crc32, 32w0, { hdr.eth.src, hdr.eth.dst }, 32w0xFFFFFFFF);
        hash(hdr.stats.h_crc16, HashAlgorithm.crc16, 16w0, { hdr.eth.src }, 17w65536);
        hash(hdr.stats.h_ident, HashAlgorithm.identity, 16w0, { hdr.eth.etype }, 17w65536);
        hash(hdr.stats.h_csum, HashAlgorithm.csum16, 16w0, { hdr.stats.h_crc32, hdr.stats.h_crc16 }, 17w65536);
        random(hdr.stats.rnd, 8w0, 8w0);
        meta.slot = (bit<32>)hdr.eth.src[7:0];
        bit<8> old;
        seen.read(old, meta.slot);
        hdr.stats.seen = old;
        seen.write(meta.slot, old + 1);
        log_msg("slot {} seen {} times", { meta.slot, old });
        assert(sm.ingress_port != CPU_PORT);
        assume(hdr.eth.isValid());
        if (old == 0) {
            clone(CloneType.I2E, MIRROR_SESSION);
        } else if (old == 1) {
            meta.round = old;
            clone_preserving_field_list(CloneType.I2E, MIRROR_SESSION, 1);
        }
        if (sm.instance_type == 0 && hdr.eth.dst == 0xFFFFFFFFFFFF) {
            meta.round = 1;
            resubmit_preserving_field_list(1);
        }
        sm.egress_spec = sm.ingress_port;
    }
}

control XEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {      // ingress clone
            truncate(32w14);
        }
        if (hdr.eth.dst == 0x0000000000FF && sm.instance_type == 0) {
            recirculate_preserving_field_list(1);
        }
    }
}

control XCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.stats.isValid(), { hdr.stats.h_crc32, hdr.stats.h_crc16 },
                        hdr.stats.h_csum, HashAlgorithm.csum16);
    }
}

control XDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.pin); pkt.emit(hdr.eth); pkt.emit(hdr.stats); }
}

V1Switch(XParser(), XVerify(), XIngress(), XEgress(), XCompute(), XDeparser()) main;
