"""Programs of the kinds issue #16 found failing on real BMv2 with p4sim-compile's JSON (a
recirculation program, a ternary table, an I2E clone), written here: each must pass the checks
BMv2 and its P4Runtime server make at load (bmv2_check.py), emit the JSON p4c would for the
construct, and behave on p4sim's engine as BMv2 does."""
import struct

from bmv2_check import check_bmv2, check_p4info
from compiler_helpers import by_name, compile_text, program

from p4sim.engine import Switch

RECIRC = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> want; bit<8> passes; bit<8> kind; bit<8> seen_itype; bit<16> seen_port; }
struct headers_t { h_t h; }
struct pass_t { bit<8> count; bit<8> first_port; }
struct meta_t { @field_list(1) pass_t pass; bit<8> kind; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        meta.kind = hdr.h.want > 2 ? 8w2 : 8w1;
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) { meta.pass.first_port = (bit<8>)sm.ingress_port; }
        hdr.h.kind = meta.kind;
        hdr.h.seen_itype = (bit<8>)sm.instance_type;
        hdr.h.seen_port = (bit<16>)sm.ingress_port;
        sm.egress_spec = (bit<9>)meta.pass.first_port + 1;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.pass.count < hdr.h.want) {
            meta.pass.count = meta.pass.count + 1;
            hdr.h.passes = meta.pass.count;
            recirculate_preserving_field_list(1);
        }
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""


def test_recirculation_program(tmp_path):
    """?: outside an action is BMv2's "?" operator (an unknown operator makes BMv2 load nothing),
    and @field_list on a struct member preserves every field inside it."""
    res = compile_text(tmp_path, RECIRC)
    assert check_bmv2(res.bmv2) == [] and check_p4info(res.bmv2, res.p4info) == []
    start = res.bmv2["parsers"][0]["parse_states"][0]
    assert start["parser_ops"][1]["parameters"][1]["value"]["value"]["op"] == "?"
    assert [e["value"] for e in res.bmv2["field_lists"][0]["elements"]] == [
        ["scalars", "meta_t.pass.count"], ["scalars", "meta_t.pass.first_port"]]
    sw = Switch(res.bmv2)
    [(port, data)] = sw.process(3, bytes([3, 0, 0, 0, 0, 0]))
    want, passes, kind, itype, seen_port = struct.unpack(">BBBBH", data)
    # three recirculations (count preserved), the first port preserved (the output port is 3 + 1);
    # each recirculated pass enters ingress on port 0 with instance_type 4
    assert (port, passes, kind, itype, seen_port) == (4, 3, 2, 4, 0)
    assert sw.stats["internal_errors"] == 0


TERNARY = dict(
    decls="header ip_t { bit<8> tos; bit<32> dst; bool flag; bit<7> pad; }",
    hdr_fields="ip_t ip;",
    parser="state start { pkt.extract(hdr.eth); transition select(hdr.eth.etype) { 0x800: ip; default: accept; } } "
           "state ip { pkt.extract(hdr.ip); transition accept; }",
    deparser="pkt.emit(hdr.eth); pkt.emit(hdr.ip);",
    ingress="action hit(bit<8> v) { meta.a = v; hdr.eth.src = (bit<48>)v; } "
            "table acl { key = { hdr.ip.tos[7:2]: ternary @name(\"dscp\"); hdr.ip.dst: optional; "
            "hdr.ip.flag: ternary; hdr.ip.isValid(): ternary; } actions = { hit; NoAction; } size = 16; } "
            "apply { sm.egress_spec = 1; acl.apply(); }")


def test_ternary_table(tmp_path):
    """A slice key (field + mask, P4Info width of the slice), an optional key (ternary in the
    JSON, OPTIONAL in the P4Info), a bool key and an isValid() key: the P4Runtime server can
    translate entries for each, and entries match as written."""
    res = compile_text(tmp_path, program(**TERNARY))
    assert check_bmv2(res.bmv2) == [] and check_p4info(res.bmv2, res.p4info) == []
    acl = by_name(res.bmv2["pipelines"][0]["tables"], "Ing.acl")
    assert [(k["match_type"], k["target"], k["mask"]) for k in acl["key"]] == [
        ("ternary", ["ip", "tos"], "0xfc"), ("ternary", ["ip", "dst"], None),
        ("ternary", ["ip", "flag"], None), ("ternary", ["ip", "$valid$"], None)]
    fields = [(m.name, m.bitwidth) for m in res.p4info.tables[0].match_fields]
    assert fields == [("dscp", 6), ("hdr.ip.dst", 32), ("hdr.ip.flag", 1), ("hdr.ip.$valid$", 1)]
    sw = Switch(res.bmv2)
    # the engine (as BMv2) takes a sliced key's value in the field's position: dscp 0x2e is 0xb8/0xfc
    sw.table_add("Ing.acl", {"dscp": "0xb8&&&0xfc", "hdr.ip.dst": "10.0.0.1"}, "Ing.hit", {"v": 7}, priority=10)
    sw.table_add("Ing.acl", {"hdr.ip.flag": (1, 1)}, "Ing.hit", {"v": 9}, priority=5)
    eth = bytes(12) + b"\x08\x00"

    def ip(tos, dst, flag):
        return eth + struct.pack(">BIB", tos, dst, flag << 7)
    out = [sw.process(0, p)[0][1][6:12] for p in (ip(0x2e << 2 | 3, 0x0A000001, 0), ip(0xb8, 0x0A000002, 1),
                                                 ip(0xb8, 0x0A000002, 0))]
    assert [int.from_bytes(x, "big") for x in out] == [7, 9, 0]


def test_i2e_clone_program(tmp_path):
    """An I2E clone reaches egress with instance_type 1 and the clone session's port and rid; the
    original (unicast) has instance_type 0."""
    text = program(
        decls="header seen_t { bit<8> itype; bit<16> port; bit<16> rid; }", hdr_fields="seen_t seen;",
        deparser="pkt.emit(hdr.eth); pkt.emit(hdr.seen);",
        ingress="apply { hdr.eth.src = 48w1; sm.egress_spec = 2; clone(CloneType.I2E, 32w7); }")
    text = text.replace("control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }",
                        "control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { "
                        "hdr.seen.setValid(); hdr.seen.itype = (bit<8>)sm.instance_type; "
                        "hdr.seen.port = (bit<16>)sm.egress_port; hdr.seen.rid = sm.egress_rid; } }")
    res = compile_text(tmp_path, text)
    assert check_bmv2(res.bmv2) == []
    sw = Switch(res.bmv2)
    sw.clone_session_set(7, [(3, 44)])
    out = dict(sw.process(1, bytes(12) + b"\x12\x34"))
    original, clone = out[2], out[3]
    assert struct.unpack(">BHH", original[14:]) == (0, 2, 0) and original[6:12] == (1).to_bytes(6, "big")
    # the clone is the packet as received (ingress changes lost), seen in egress as an I2E clone
    assert struct.unpack(">BHH", clone[14:]) == (1, 3, 44) and clone[6:12] == bytes(6)
