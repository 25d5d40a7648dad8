"""A small test program, written for these tests as BMv2 JSON + P4Info (the pair p4c would emit
for it), so the runtime tests do not depend on the compiler:

    @controller_header("packet_out") header packet_out_t { bit<9> egress_port; bit<7> _pad; }
    @controller_header("packet_in")  header packet_in_t  { bit<9> ingress_port; bit<7> _pad; }
    parser: ingress_port == 64 ? extract(packet_out) : ; extract(ethernet)
    ingress: if (packet_out.isValid()) { egress_spec = packet_out.egress_port; packet_out.setInvalid(); }
             else { acl.apply(); punt.apply(); }
      acl  (ternary dst, range etype, optional ingress_port; priorities) -> set_port | to_cpu | drop
      punt (const: etype 0x88cc -> to_cpu)
    deparser: packet_in, ethernet
"""
import json

from engine.bmv2 import ERRORS, STANDARD_METADATA  # v1model's layout, as p4c emits it
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

CPU_PORT = 64


SM = "standard_metadata"


def _field(header, name):
    return {"type": "field", "value": [header, name]}


def _action(name, action_id, params, primitives):
    return {"name": name, "id": action_id,
            "runtime_data": [{"name": p, "bitwidth": w} for p, w in params],
            "primitives": [{"op": op, "parameters": args} for op, args in primitives]}


def _table(name, table_id, keys, match_type, actions, default, entries=None, const_default=False):
    table = {
        "name": name, "id": table_id,
        "key": [{"match_type": kind, "name": key_name, "target": target, "mask": None}
                for kind, key_name, target in keys],
        "match_type": match_type, "type": "simple", "max_size": 64, "with_counters": False,
        "support_timeout": False, "direct_meters": None,
        "action_ids": [a[1] for a in actions], "actions": [a[0] for a in actions],
        "base_default_next": None, "next_tables": {a[0]: None for a in actions},
        "default_entry": {"action_id": default, "action_const": const_default, "action_data": [],
                          "action_entry_const": const_default}}
    if entries is not None:
        table["entries"] = entries
    return table


def bmv2_json() -> dict:
    actions = [
        _action("NoAction", 0, [], []),
        _action("MyIngress.set_port", 1, [("port", 9)],
                [("assign", [_field(SM, "egress_spec"), {"type": "runtime_data", "value": 0}])]),
        _action("MyIngress.to_cpu", 2, [],
                [("assign", [_field(SM, "egress_spec"), {"type": "hexstr", "value": "0x0040"}]),
                 ("add_header", [{"type": "header", "value": "packet_in"}]),
                 ("assign", [_field("packet_in", "ingress_port"), _field(SM, "ingress_port")])]),
        _action("MyIngress.drop", 3, [], [("mark_to_drop", [{"type": "header", "value": SM}])]),
        _action("from_cpu", 4, [],
                [("assign", [_field(SM, "egress_spec"), _field("packet_out", "egress_port")]),
                 ("remove_header", [{"type": "header", "value": "packet_out"}])]),
        _action("MyIngress.to_cpu", 5, [],
                [("assign", [_field(SM, "egress_spec"), {"type": "hexstr", "value": "0x0040"}]),
                 ("add_header", [{"type": "header", "value": "packet_in"}]),
                 ("assign", [_field("packet_in", "ingress_port"), _field(SM, "ingress_port")])]),
    ]
    acl_actions = [("MyIngress.set_port", 1), ("MyIngress.to_cpu", 2), ("MyIngress.drop", 3)]
    tables = [
        _table("tbl_from_cpu", 0, [], "exact", [("from_cpu", 4)], 4, const_default=True),
        _table("MyIngress.acl", 1,
               [("ternary", "hdr.ethernet.dst", ["ethernet", "dst"]),
                ("range", "hdr.ethernet.etype", ["ethernet", "etype"]),
                ("optional", "standard_metadata.ingress_port", [SM, "ingress_port"])],
               "range", acl_actions, 3),
        _table("MyIngress.punt", 2, [("exact", "hdr.ethernet.etype", ["ethernet", "etype"])],
               "exact", [("MyIngress.to_cpu", 5), ("NoAction", 0)], 0,
               entries=[{"match_key": [{"match_type": "exact", "key": "0x88cc"}],
                         "action_entry": {"action_id": 5, "action_data": []}, "priority": 1}]),
    ]
    tables[1]["next_tables"] = {name: "MyIngress.punt" for name, _ in acl_actions}
    return {
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": []},
            {"name": "standard_metadata", "id": 1, "fields": STANDARD_METADATA},
            {"name": "packet_out_t", "id": 2, "fields": [["egress_port", 9, False], ["_pad", 7, False]]},
            {"name": "packet_in_t", "id": 3, "fields": [["ingress_port", 9, False], ["_pad", 7, False]]},
            {"name": "ethernet_t", "id": 4, "fields": [["dst", 48, False], ["src", 48, False], ["etype", 16, False]]},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True, "pi_omit": True},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": True, "pi_omit": True},
            {"name": "packet_out", "id": 2, "header_type": "packet_out_t", "metadata": False, "pi_omit": True},
            {"name": "packet_in", "id": 3, "header_type": "packet_in_t", "metadata": False, "pi_omit": True},
            {"name": "ethernet", "id": 4, "header_type": "ethernet_t", "metadata": False, "pi_omit": True},
        ],
        "header_stacks": [], "header_union_types": [], "header_unions": [], "header_union_stacks": [],
        "field_lists": [],
        "errors": ERRORS,
        "enums": [],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0, "parser_ops": [],
             "transition_key": [_field(SM, "ingress_port")],
             "transitions": [
                 {"type": "hexstr", "value": "0x0040", "mask": None, "next_state": "parse_packet_out"},
                 {"type": "default", "value": None, "mask": None, "next_state": "parse_ethernet"}]},
            {"name": "parse_packet_out", "id": 1,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "packet_out"}]}],
             "transition_key": [],
             "transitions": [{"type": "default", "value": None, "mask": None, "next_state": "parse_ethernet"}]},
            {"name": "parse_ethernet", "id": 2,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
             "transition_key": [],
             "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]},
        ]}],
        "parse_vsets": [],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["packet_in", "ethernet"], "primitives": []}],
        "meter_arrays": [], "counter_arrays": [], "register_arrays": [], "calculations": [],
        "learn_lists": [], "actions": actions,
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "node_2", "tables": tables, "action_profiles": [],
             "conditionals": [{
                 "name": "node_2", "id": 0,
                 "expression": {"type": "expression", "value": {
                     "op": "d2b", "left": None, "right": _field("packet_out", "$valid$")}},
                 "true_next": "tbl_from_cpu", "false_next": "MyIngress.acl"}]},
            {"name": "egress", "id": 1, "init_table": None, "tables": [], "action_profiles": [],
             "conditionals": []},
        ],
        "checksums": [], "force_arith": [], "extern_instances": [], "field_aliases": [],
        "program": "acl_cpu.p4", "__meta__": {"version": [2, 23], "compiler": "hand-written"},
    }


P4INFO = """
pkg_info { arch: "v1model" }
tables {
  preamble { id: 37375156 name: "MyIngress.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ethernet.dst" bitwidth: 48 match_type: TERNARY }
  match_fields { id: 2 name: "hdr.ethernet.etype" bitwidth: 16 match_type: RANGE }
  match_fields { id: 3 name: "standard_metadata.ingress_port" bitwidth: 9 match_type: OPTIONAL }
  action_refs { id: 23466264 }
  action_refs { id: 29491018 }
  action_refs { id: 25652968 }
  initial_default_action { action_id: 25652968 }
  size: 64
}
tables {
  preamble { id: 41936002 name: "MyIngress.punt" alias: "punt" }
  match_fields { id: 1 name: "hdr.ethernet.etype" bitwidth: 16 match_type: EXACT }
  action_refs { id: 29491018 }
  action_refs { id: 21257015 }
  initial_default_action { action_id: 21257015 }
  size: 64
  is_const_table: true
  has_initial_entries: true
}
actions { preamble { id: 21257015 name: "NoAction" alias: "NoAction" } }
actions {
  preamble { id: 23466264 name: "MyIngress.set_port" alias: "set_port" }
  params { id: 1 name: "port" bitwidth: 9 }
}
actions { preamble { id: 29491018 name: "MyIngress.to_cpu" alias: "to_cpu" } }
actions { preamble { id: 25652968 name: "MyIngress.drop" alias: "drop" } }
controller_packet_metadata {
  preamble { id: 81826293 name: "packet_in" alias: "packet_in" annotations: "@controller_header(\\"packet_in\\")" }
  metadata { id: 1 name: "ingress_port" bitwidth: 9 }
  metadata { id: 2 name: "_pad" bitwidth: 7 }
}
controller_packet_metadata {
  preamble { id: 76689799 name: "packet_out" alias: "packet_out" annotations: "@controller_header(\\"packet_out\\")" }
  metadata { id: 1 name: "egress_port" bitwidth: 9 }
  metadata { id: 2 name: "_pad" bitwidth: 7 }
}
"""


def p4info() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    text_format.Merge(P4INFO, info)
    return info


def write_files(directory):
    """Write acl_cpu.json and acl_cpu.p4info.txtpb (for p4runtime-shell and the CLI)."""
    json_path = directory / "acl_cpu.json"
    p4info_path = directory / "acl_cpu.p4info.txtpb"
    json_path.write_text(json.dumps(bmv2_json(), indent=1))
    p4info_path.write_text(text_format.MessageToString(p4info()))
    return json_path, p4info_path
