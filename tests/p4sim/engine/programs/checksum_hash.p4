/* Engine test program: IPv4 checksum verify/update, hash() with crc16/crc32/identity/csum16. */
#include <core.p4>
#include <v1model.p4>

header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header hashes_t { bit<16> crc16; bit<32> crc32; bit<16> ident; bit<16> csum; bit<8> cksum_err; }
struct headers_t { ipv4_t ip; hashes_t hs; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ip); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ip.isValid(), { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.len, hdr.ip.id,
            hdr.ip.flags, hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst }, hdr.ip.csum, HashAlgorithm.csum16);
    }
}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.hs.setValid();
        hash(hdr.hs.crc16, HashAlgorithm.crc16, 16w0, { hdr.ip.src, hdr.ip.dst }, 32w65536);
        hash(hdr.hs.crc32, HashAlgorithm.crc32, 32w0, { hdr.ip.src, hdr.ip.dst }, 64w4294967296);
        hash(hdr.hs.ident, HashAlgorithm.identity, 16w100, { hdr.ip.id }, 32w1000);
        hash(hdr.hs.csum, HashAlgorithm.csum16, 16w0, { hdr.ip.src, hdr.ip.dst }, 32w65536);
        hdr.hs.cksum_err = (bit<8>)sm.checksum_error;
        hdr.ip.ttl = hdr.ip.ttl - 1;
        sm.egress_spec = 1;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ip.isValid(), { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.len, hdr.ip.id,
            hdr.ip.flags, hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst }, hdr.ip.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ip); pkt.emit(hdr.hs); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
