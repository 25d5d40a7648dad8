"""Golden tests per subset group: the BMv2 JSON structure and P4Info content the compiler emits."""
import pathlib

from compiler_helpers import action_by_name, by_name, compile_text, ops, pipeline, program
from p4.config.v1 import p4info_pb2

from p4sim.compiler import compile_file

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "p4"


def hx(v):
    return {"type": "hexstr", "value": v}


def field(h, f):
    return {"type": "field", "value": [h, f]}


def expr(op, left, right, **kw):
    v = {"op": op, "left": left, "right": right}
    v.update(kw)
    return {"type": "expression", "value": v}


def assigns(doc):
    """(destination, source) of every assign primitive, in action order."""
    return [(tuple(p["parameters"][0]["value"]), p["parameters"][1])
            for a in doc["actions"] for p in a["primitives"] if p["op"] == "assign"]


def src_of(doc, hdr, fld):
    for d, s in assigns(doc):
        if d == (hdr, fld):
            return s["value"] if s["type"] == "expression" else s
    raise KeyError((hdr, fld))


# ---------------------------------------------------------------- declarations
def test_declarations_types_consts_enums_errors(tmp_path):
    text = program(
        decls="typedef bit<8> byte_t; const byte_t K = 3 + 4; const bit<8> W = 8w250 + 8w10; "
              "enum bit<8> Kind { A = 1, B = 0x20 } error { MyErr } "
              "header s_t { int<16> v; bool flag; bit<7> pad; } header l_t { bit<8> x; }",
        hdr_fields="s_t s; l_t[3] ls;", meta_fields="bool ok; Kind k;",
        ingress="apply { meta.a = K; meta.b = W; meta.k = Kind.B; meta.ok = meta.k == Kind.A; "
                "if (sm.parser_error == error.MyErr) { meta.c = 1; } }")
    doc = compile_text(tmp_path, text).bmv2
    assert by_name(doc["header_types"], "s_t")["fields"] == [["v", 16, True], ["flag", 1, False], ["pad", 7, False]]
    assert doc["header_stacks"] == [{"name": "ls", "id": 0, "header_type": "l_t", "size": 3,
                                     "header_ids": [by_name(doc["headers"], f"ls[{i}]")["id"] for i in range(3)]}]
    assert doc["errors"][-1] == ["MyErr", 7]
    scalars = {f[0]: f[1] for f in by_name(doc["header_types"], "scalars_0")["fields"]}
    assert scalars["meta_t.ok"] == 1 and scalars["meta_t.k"] == 8
    assert sum(scalars.values()) % 8 == 0
    assert src_of(doc, "scalars", "meta_t.a") == hx("0x07")          # 3 + 4 folded
    assert src_of(doc, "scalars", "meta_t.b") == hx("0x04")          # 250 + 10 wraps at 8 bits
    assert src_of(doc, "scalars", "meta_t.k") == hx("0x20")
    cond = pipeline(doc)["conditionals"][0]["expression"]
    assert cond == expr("==", field("standard_metadata", "parser_error"), hx("0x7"))


# ---------------------------------------------------------------- expressions
def test_expression_lowering(tmp_path):
    text = program(
        decls="header n_t { bit<8> a; bit<8> b; int<8> s; int<8> t; bit<16> c; }", hdr_fields="n_t n;",
        ingress="action f() { hdr.n.a = hdr.n.a + hdr.n.b; hdr.n.s = hdr.n.s + hdr.n.t; "
                "hdr.n.b = hdr.n.a |+| hdr.n.b; hdr.n.t = hdr.n.s |-| hdr.n.t; hdr.n.c = hdr.n.a ++ hdr.n.b; "
                "hdr.n.a = hdr.n.c[11:4]; hdr.n.b = (bit<8>)hdr.n.c; hdr.n.a = hdr.n.a - hdr.n.b; "
                "hdr.n.b = ~hdr.n.b; hdr.n.c[15:8] = hdr.n.a; } apply { f(); }")
    doc = compile_text(tmp_path, text).bmv2
    prims = action_by_name(doc, "Ing.f")[0]["primitives"]
    srcs = [p["parameters"][1]["value"] for p in prims]
    a, b, s, t, c = (field("n", x) for x in "abstc")
    assert srcs[0] == expr("&", expr("+", a, b), hx("0xff"))
    assert srcs[1] == expr("two_comp_mod", expr("+", s, t), hx("0x8"))
    assert srcs[2] == expr("usat_cast", expr("+", a, b), hx("0x8"))
    assert srcs[3] == expr("sat_cast", expr("-", s, t), hx("0x8"))
    assert srcs[4] == expr("&", expr("|", expr("<<", a, hx("0x8")), b), hx("0xffff"))
    assert srcs[5] == expr("&", expr(">>", c, hx("0x4")), hx("0xff"))
    assert srcs[6] == expr("&", c, hx("0xff"))
    assert srcs[7] == expr("&", expr("+", a, expr("-", hx("0x100"), b)), hx("0xff"))
    assert srcs[8] == expr("^", b, hx("0xff"))
    assert srcs[9] == expr("|", expr("&", c, hx("0x00ff")), expr("&", expr("<<", a, hx("0x8")), hx("0xff00")))


def test_ternary_and_bool_lowering(tmp_path):
    text = program(meta_fields="bool f;",
                   ingress="apply { meta.a = meta.b > 3 ? meta.b : 8w3; meta.f = !(meta.a == 0) && hdr.eth.isValid(); }")
    doc = compile_text(tmp_path, text).bmv2
    act = next(a for a in doc["actions"] if a["name"].startswith("prog"))
    assert ops(act) == ["_jump_if_zero", "assign", "_jump", "assign", "assign", "assign"]
    jz = act["primitives"][0]["parameters"]
    assert jz[0]["value"] == expr("b2d", None, expr(">", field("scalars", "meta_t.b"), hx("0x03")))
    assert jz[1] == hx("0x3") and act["primitives"][2]["parameters"][0] == hx("0x4")
    last = act["primitives"][5]["parameters"]
    assert last[0] == field("scalars", "meta_t.f")
    assert last[1]["value"] == expr("b2d", None, expr(
        "and", expr("not", None, expr("==", field("scalars", "meta_t.a"), hx("0x00"))),
        expr("d2b", None, field("eth", "$valid$"))))


# ---------------------------------------------------------------- parser
def test_parser_group_json():
    doc = compile_file(str(EXAMPLES / "group_parser.p4")).bmv2
    states = {s["name"]: s for s in doc["parsers"][0]["parse_states"]}
    start = states["start"]
    assert start["transitions"][0] == {"type": "hexstr", "value": "0x9000", "mask": "0xff00", "next_state": "tagged"}
    assert start["transitions"][1] == {"type": "hexstr", "value": "0x8800", "mask": "0xff00", "next_state": "opts"}
    assert start["transitions"][2]["next_state"] == "bad"
    assert start["transitions"][-1]["type"] == "default"
    # verify as p4c emits it: the condition into a bool temp, then verify(d2b(temp), error)
    set_op, verify_op = states["bad"]["parser_ops"]
    tmp = set_op["parameters"][0]
    assert set_op == {"op": "set", "parameters": [tmp, hx("0x00")]}
    assert verify_op == {"op": "verify", "parameters": [expr("d2b", None, tmp), hx("0x2")]}
    tagged = states["tagged"]
    assert [o["op"] for o in tagged["parser_ops"]] == ["extract", "set", "set", "verify"]
    assert tagged["transitions"][0] == {"type": "hexstr", "value": "0x0100", "mask": "0xff00", "next_state": "opts"}
    assert tagged["transitions"][1] == {"type": "hexstr", "value": "0x0200", "mask": "0xfff0", "next_state": "peek"}
    assert tagged["transitions"][2] == {"type": "hexstr", "value": "0x00f0", "mask": "0x00f0", "next_state": None}
    opts = states["opts"]
    assert opts["parser_ops"][0] == {"parameters": [{"type": "stack", "value": "opts"}], "op": "extract"}
    assert opts["transition_key"] == [{"type": "stack_field", "value": ["opts", "last"]}]
    peek = states["peek"]["parser_ops"][0]
    assert peek == {"parameters": [field("scalars", "metadata_t.peek"), {"type": "lookahead", "value": [0, 8]}],
                    "op": "set"}
    assert doc["deparsers"][0]["order"] == ["eth", "tag", "opts[0]", "opts[1]", "opts[2]", "opts[3]", "trailer"]


def test_select_range_expands_to_masks(tmp_path):
    text = program(parser="state start { pkt.extract(hdr.eth); transition select(hdr.eth.etype) "
                          "{ 1000 .. 1999: accept; default: reject; } }")
    doc = compile_text(tmp_path, text).bmv2
    ts = doc["parsers"][0]["parse_states"][0]["transitions"]
    covered = set()
    for t in ts[:-1]:
        v, m = int(t["value"], 16), int(t["mask"], 16)
        covered |= {x for x in range(1 << 16) if x & m == v} if False else {x for x in range(900, 2100) if x & m == v}
    assert covered == set(range(1000, 2000))


# ---------------------------------------------------------------- control
def test_control_group_tables_and_graph():
    res = compile_file(str(EXAMPLES / "group_control.p4"))
    doc, info = res.bmv2, res.p4info
    ing = pipeline(doc)
    assert ing["init_table"] == "tbl_group_control69" or ing["init_table"].startswith("node_")
    classify = by_name(ing["tables"], "CIngress.classify")
    assert classify["match_type"] == "range"
    # BMv2 has no 'optional': p4c emits optional keys as ternary (the P4Info says OPTIONAL)
    assert [k["match_type"] for k in classify["key"]] == ["ternary", "exact", "range", "ternary"]
    assert classify["default_entry"] == {"action_id": classify["action_ids"][0], "action_const": True,
                                         "action_data": ["0x00"], "action_entry_const": True}
    prios = [e["priority"] for e in classify["entries"]]
    assert prios == [71, 1, 91]                       # P4 priorities 30, 100, 10: largest wins
    assert classify["entries"][0]["match_key"][0] == {"match_type": "ternary", "key": "0x0a000000",
                                                      "mask": "0xff000000"}
    assert classify["entries"][1]["match_key"][2] == {"match_type": "range", "start": "0x0035", "end": "0x0035"}
    routes = by_name(ing["tables"], "CIngress.routes")
    assert routes["max_size"] == 4096
    assert routes["next_tables"]["CIngress.drop"] is None                     # return
    fwd_next = routes["next_tables"]["CIngress.forward"]
    assert fwd_next.startswith("tbl_bump")
    acl = by_name(ing["tables"], "CIngress.acl")
    assert set(acl["next_tables"]) == {"__HIT__", "__MISS__"} and acl["with_counters"] is True
    assert by_name(ing["tables"], fwd_next)["base_default_next"] == "CIngress.acl"
    exit_tbl = [t for t in ing["tables"] if t["name"].startswith("tbl_group_control")]
    assert any(ops(by_name(doc["actions"], t["actions"][0])) == ["exit"] for t in exit_tbl)
    assert by_name(doc["counter_arrays"], "CIngress.acl_stats") == {
        "name": "CIngress.acl_stats", "id": 0, "is_direct": True, "binding": "CIngress.acl",
        "source_info": by_name(doc["counter_arrays"], "CIngress.acl_stats")["source_info"]}
    t = {x.preamble.name: x for x in info.tables}
    assert t["CIngress.classify"].is_const_table
    assert t["CIngress.classify"].const_default_action_id == t["CIngress.classify"].action_refs[0].id
    assert [m.match_type for m in t["CIngress.classify"].match_fields] == [
        p4info_pb2.MatchField.TERNARY, p4info_pb2.MatchField.EXACT, p4info_pb2.MatchField.RANGE,
        p4info_pb2.MatchField.OPTIONAL]
    assert t["CIngress.acl"].action_refs[1].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert t["CIngress.routes"].size == 4096
    dc = {x.preamble.name: x for x in info.direct_counters}["CIngress.acl_stats"]
    assert dc.direct_table_id == t["CIngress.acl"].preamble.id
    assert list(t["CIngress.acl"].direct_resource_ids) == [dc.preamble.id]
    # actions with directional parameters (bump) are inlined, not control-plane visible
    assert "CIngress.bump" in {a.preamble.name for a in info.actions}
    assert not {a.preamble.name: a for a in info.actions}["CIngress.bump"].params


def test_names_and_ids_honour_annotations(tmp_path):
    text = program(ingress='@name("renamed") action a(bit<8> v) { meta.a = v; } '
                           '@id(0x01000abc) action b() { } '
                           '@name(".Global.table") table t { key = { hdr.eth.etype: exact @name("type"); } '
                           'actions = { a; b; } } apply { t.apply(); }')
    info = compile_text(tmp_path, text).p4info
    names = {a.preamble.name: a.preamble.id for a in info.actions}
    assert names["Ing.renamed"] == (0x01 << 24) | (_joaat("Ing.renamed") & 0xFFFFFF)
    assert names["Ing.b"] == 0x01000ABC
    tbl = info.tables[0]
    assert tbl.preamble.name == "Global.table" and tbl.preamble.alias == "table"
    assert tbl.match_fields[0].name == "type"
    again = compile_text(tmp_path, text).p4info
    assert again == info                                              # stable across runs


def _joaat(s):
    h = 0
    for c in s.encode():
        h = (h + c) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


# ---------------------------------------------------------------- externs
def test_externs_group_json_and_p4info():
    res = compile_file(str(EXAMPLES / "group_externs.p4"))
    doc, info = res.bmv2, res.p4info
    # one calculation per hash call and per checksum, as p4c emits them
    assert [c["algo"] for c in doc["calculations"]] == ["crc32", "crc16", "identity", "csum16", "csum16", "csum16"]
    prims = [p for a in doc["actions"] for p in a["primitives"]]
    by_op = {}
    for p in prims:
        by_op.setdefault(p["op"], []).append(p["parameters"])
    h = by_op["modify_field_with_hash_based_offset"][0]
    assert h == [field("stats", "h_crc32"), hx("0x00000000"), {"type": "calculation", "value": "calc"},
                 hx("0xffffffff")]
    assert by_op["modify_field_rng_uniform"][0] == [field("stats", "rnd"), hx("0x00"), hx("0x00")]
    assert by_op["register_read"][0][1] == {"type": "register_array", "value": "XIngress.seen"}
    assert by_op["register_write"][0][0] == {"type": "register_array", "value": "XIngress.seen"}
    assert {"type": "counter_array", "value": "XIngress.per_port"} in [p[0] for p in by_op["count"]]
    # a plain clone gets an empty field list of its own (BMv2 aborts on a field list id that does
    # not exist, such as 0)
    assert [p[1] for p in by_op["clone_ingress_pkt_to_egress"]] == [hx("0x2"), hx("0x1")]
    assert by_op["resubmit"] == [[hx("0x1")]] and by_op["recirculate"] == [[hx("0x1")]]
    assert doc["field_lists"] == [{"id": 1, "name": "field_list1",
                                   "elements": [field("scalars", "metadata_t.round")]},
                                  {"id": 2, "name": "fl", "elements": []}]
    assert by_op["truncate"] == [[hx("0x0000000e")]]
    assert by_op["log_msg"][0][0] == {"type": "string", "value": "slot {} seen {} times"}
    assert by_op["log_msg"][0][1]["type"] == "parameters_vector"
    assert "assert" in by_op and "assume" in by_op
    assert by_op["mark_to_drop"] if "mark_to_drop" in by_op else True
    cks = doc["checksums"]
    assert [(c["verify"], c["update"]) for c in cks] == [(False, True), (True, False)]
    assert by_name(doc["register_arrays"], "XIngress.seen")["bitwidth"] == 8
    regs = {r.preamble.name: r for r in info.registers}
    assert regs["XIngress.seen"].size == 256 and regs["XIngress.seen"].type_spec.bitstring.bit.bitwidth == 8
    cnt = {c.preamble.name: c for c in info.counters}
    assert cnt["XIngress.per_port"].spec.unit == p4info_pb2.CounterSpec.PACKETS
    assert cnt["XIngress.total_bytes"].spec.unit == p4info_pb2.CounterSpec.BYTES
    cph = {m.preamble.name: m for m in info.controller_packet_metadata}
    assert [(m.name, m.bitwidth) for m in cph["packet_in"].metadata] == [("ingress_port", 9), ("pad", 7)]
    assert cph["packet_out"].preamble.id >> 24 == 0x04


def test_digest_learn_list(tmp_path):
    text = program(decls="struct learn_t { bit<48> mac; bit<9> port; }",
                   ingress="apply { digest<learn_t>(1, { hdr.eth.src, sm.ingress_port }); }")
    res = compile_text(tmp_path, text)
    ll = res.bmv2["learn_lists"]
    assert len(ll) == 1 and ll[0]["elements"] == [field("eth", "src"), field("standard_metadata", "ingress_port")]
    prim = next(p for a in res.bmv2["actions"] for p in a["primitives"] if p["op"] == "generate_digest")
    assert prim["parameters"] == [hx("0x00000001"), hx("0x1")]
    assert len(res.p4info.digests) == 1
    assert res.p4info.digests[0].preamble.name == "learn_t"
    st = res.p4info.type_info.structs["learn_t"]
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in st.members] == [("mac", 48), ("port", 9)]


def test_serializable_enums_in_p4info():
    info = compile_file(str(EXAMPLES / "group_declarations.p4")).p4info
    kind = info.type_info.serializable_enums["Kind"]
    assert kind.underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in kind.members] == [("DATA", b"\x01"), ("CONTROL", b"\x02"), ("OTHER", b"\xff")]
    tbl = info.tables[0]
    assert tbl.match_fields[0].type_name.name == "Kind"
    assert tbl.match_fields[1].bitwidth == 1                      # bool key
    act = next(a for a in info.actions if a.preamble.name == "DeclIngress.classify")
    assert act.params[0].type_name.name == "Kind"
    assert tbl.initial_default_action.arguments[0].value == b"\xff"


def test_direct_call_of_table_action_gets_its_own_json_action(tmp_path):
    text = program(ingress="action set(bit<8> v) { meta.a = v; } "
                           "table t { key = { meta.a: exact; } actions = { set; } } "
                           "apply { if (meta.b == 0) { set(7); } else { t.apply(); } }")
    res = compile_text(tmp_path, text)
    names = [a["name"] for a in res.bmv2["actions"]]
    assert names.count("Ing.set") == 1                               # the table's, with action data
    assert action_by_name(res.bmv2, "Ing.set")[0]["runtime_data"] == [{"name": "v", "bitwidth": 8}]
    copy = action_by_name(res.bmv2, "Ing.set_0")[0]
    assert copy["runtime_data"] == [] and copy["primitives"][0]["parameters"][1] == hx("0x07")
    t = by_name(pipeline(res.bmv2)["tables"], "Ing.t")
    assert t["default_entry"]["action_id"] == by_name(res.bmv2["actions"], "NoAction")["id"]
    assert [a.preamble.name for a in res.p4info.actions] == ["NoAction", "Ing.set"]


def test_shift_and_generic_brackets(tmp_path):
    text = program(ingress="register<bit<32>>(4) r; apply { bit<32> x; r.read(x, 0); "
                           "meta.c = x >> 2; meta.a = (bit<8>)(x >>1); meta.b = meta.a > 8w1 ? 8w1 : 8w0; "
                           "if (meta.a < meta.b && meta.b > meta.a) { meta.c = meta.c << 1; } }")
    doc = compile_text(tmp_path, text).bmv2
    assert by_name(doc["register_arrays"], "Ing.r")["bitwidth"] == 32
    srcs = [p["parameters"][1] for a in doc["actions"] for p in a["primitives"] if p["op"] == "assign"]
    assert {"type": "expression", "value": expr(">>", field("scalars", "x"), hx("0x2"))} in srcs


def test_isvalid_and_slice_keys(tmp_path):
    text = program(ingress="table t { key = { hdr.eth.isValid(): exact; hdr.eth.dst[47:40]: ternary; } "
                           "actions = { NoAction; } } apply { t.apply(); }")
    res = compile_text(tmp_path, text)
    keys = by_name(pipeline(res.bmv2)["tables"], "Ing.t")["key"]
    assert keys == [{"match_type": "exact", "name": "hdr.eth.$valid$", "target": ["eth", "$valid$"], "mask": None},
                    {"match_type": "ternary", "name": "hdr.eth.dst[47:40]", "target": ["eth", "dst"],
                     "mask": "0xff0000000000"}]
    mf = res.p4info.tables[0].match_fields
    assert [(m.name, m.bitwidth) for m in mf] == [("hdr.eth.$valid$", 1), ("hdr.eth.dst[47:40]", 8)]
