"""A small test program written as BMv2 JSON + P4Info (what p4c emits for it; p4sim-compile does
not take meters or value sets yet):

    parser: extract(eth); select(eth.etype) { tagged_types (value_set<bit<16>>(4)): extract(tag) }
    ingress: port_meter.execute_meter((bit<32>)ingress_port, hdr.tag.color); egress_spec = 1
             (meter(8, MeterType.packets) port_meter)
    deparser: eth, tag
"""
import json

from engine.bmv2 import ERRORS, STANDARD_METADATA
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

METER_ID = 343597291
VALUE_SET_ID = 56029218


def bmv2_json() -> dict:
    return {
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": []},
            {"name": "standard_metadata", "id": 1, "fields": STANDARD_METADATA},
            {"name": "ethernet_t", "id": 2, "fields": [["dst", 48, False], ["src", 48, False], ["etype", 16, False]]},
            {"name": "tag_t", "id": 3, "fields": [["color", 8, False], ["seen", 8, False]]},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True, "pi_omit": True},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": True, "pi_omit": True},
            {"name": "eth", "id": 2, "header_type": "ethernet_t", "metadata": False, "pi_omit": True},
            {"name": "tag", "id": 3, "header_type": "tag_t", "metadata": False, "pi_omit": True},
        ],
        "header_stacks": [], "header_union_types": [], "header_unions": [], "header_union_stacks": [],
        "field_lists": [],
        "errors": ERRORS,
        "enums": [],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "eth"}]}],
             "transition_key": [{"type": "field", "value": ["eth", "etype"]}],
             "transitions": [
                 {"type": "parse_vset", "value": "P.tagged_types", "mask": None, "next_state": "tagged"},
                 {"type": "default", "value": None, "mask": None, "next_state": None}]},
            {"name": "tagged", "id": 1,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "tag"}]}],
             "transition_key": [],
             "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]},
        ]}],
        "parse_vsets": [{"name": "P.tagged_types", "id": 0, "compressed_bitwidth": 16}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["eth", "tag"], "primitives": []}],
        "meter_arrays": [{"name": "Ing.port_meter", "id": 0, "is_direct": False, "size": 8,
                          "rate_count": 2, "type": "packets"}],
        "counter_arrays": [], "register_arrays": [], "calculations": [], "learn_lists": [],
        "actions": [{"name": "mark", "id": 0, "runtime_data": [], "primitives": [
            {"op": "execute_meter", "parameters": [
                {"type": "meter_array", "value": "Ing.port_meter"},
                {"type": "field", "value": ["standard_metadata", "ingress_port"]},
                {"type": "field", "value": ["tag", "color"]}]},
            {"op": "assign", "parameters": [
                {"type": "field", "value": ["standard_metadata", "egress_spec"]},
                {"type": "hexstr", "value": "0x0001"}]}]}],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "tbl_mark", "action_profiles": [], "conditionals": [],
             "tables": [{"name": "tbl_mark", "id": 0, "key": [], "match_type": "exact", "type": "simple",
                         "max_size": 1024, "with_counters": False, "support_timeout": False,
                         "direct_meters": None, "action_ids": [0], "actions": ["mark"],
                         "base_default_next": None, "next_tables": {"mark": None},
                         "default_entry": {"action_id": 0, "action_const": True, "action_data": [],
                                           "action_entry_const": True}}]},
            {"name": "egress", "id": 1, "init_table": None, "tables": [], "action_profiles": [],
             "conditionals": []},
        ],
        "checksums": [], "force_arith": [], "extern_instances": [], "field_aliases": [],
        "program": "meter_vset.p4", "__meta__": {"version": [2, 23], "compiler": "hand-written"},
    }


P4INFO = f"""
pkg_info {{ arch: "v1model" }}
meters {{
  preamble {{ id: {METER_ID} name: "Ing.port_meter" alias: "port_meter" }}
  spec {{ unit: PACKETS }}
  size: 8
}}
value_sets {{
  preamble {{ id: {VALUE_SET_ID} name: "P.tagged_types" alias: "tagged_types" }}
  match {{ id: 1 bitwidth: 16 match_type: EXACT }}
  size: 4
}}
"""


def p4info() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    text_format.Merge(P4INFO, info)
    return info


def device_config() -> bytes:
    return json.dumps(bmv2_json()).encode()
