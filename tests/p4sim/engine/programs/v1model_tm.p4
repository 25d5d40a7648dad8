/* Engine test program: v1model traffic manager features driven by h.op.
   1 unicast to port 2, 2 multicast group 1, 3 I2E clone (session 5) + unicast,
   4 resubmit, 5 recirculate, 6 E2E clone (session 5), 7 drop, 8 truncate to 6 bytes.
   Preserved field lists keep meta.keep across clone, resubmit and recirculate. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> itype; bit<16> inport; bit<8> keep; bit<16> rid; bit<16> eport; }
struct headers_t { h_t h; }
struct meta_t { @field_list(1) bit<8> keep; bit<8> scratch; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type != 0) {
            hdr.h.inport = (bit<16>)sm.ingress_port;
            hdr.h.keep = meta.keep;
            sm.egress_spec = 3;
            return;
        }
        if (hdr.h.op == 1) { sm.egress_spec = 2; }
        else if (hdr.h.op == 2) { sm.mcast_grp = 1; }
        else if (hdr.h.op == 3) { meta.keep = 0x77; clone_preserving_field_list(CloneType.I2E, 5, 1); sm.egress_spec = 2; }
        else if (hdr.h.op == 4) { meta.keep = 0x55; meta.scratch = 1; resubmit_preserving_field_list(1); }
        else if (hdr.h.op == 5 || hdr.h.op == 6 || hdr.h.op == 8) { sm.egress_spec = 2; }
        else { mark_to_drop(sm); }
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.itype = (bit<8>)sm.instance_type;
        hdr.h.rid = sm.egress_rid;
        hdr.h.eport = (bit<16>)sm.egress_port;
        // a unicast packet reaches egress with instance_type 0 even after a recirculation (as in
        // BMv2): meta.keep, preserved by the recirculation, tells the second pass apart
        if (sm.instance_type == 0 && meta.keep == 0) {
            if (hdr.h.op == 5) { meta.keep = 0x66; recirculate_preserving_field_list(1); }
            else if (hdr.h.op == 6) { meta.keep = 0x44; clone_preserving_field_list(CloneType.E2E, 5, 1); }
            else if (hdr.h.op == 8) { truncate(6); }
        } else if (sm.instance_type == 2) {
            hdr.h.keep = meta.keep;
        }
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
