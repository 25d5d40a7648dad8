"""The three reference programs against real p4c-bm2-ss output and real simple_switch_grpc runs."""
import json

import pytest
from compiler_helpers import by_name, strip_source_info
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4sim.compiler import compile_file

NAMES = ["agg_mini", "fwd_basic", "hash_csum", "loopback", "match_kinds", "parse_mix", "rep_clone",
         "stacks_errors"]
ENTITIES = ["tables", "actions", "counters", "direct_counters", "registers", "controller_packet_metadata",
            "digests"]


@pytest.fixture(scope="module")
def compiled(reference_dir):
    out = {}
    for n in NAMES:
        res = compile_file(str(reference_dir / "programs" / f"{n}.p4"))
        p4c_json = json.loads((reference_dir / "p4c-out" / f"{n}.json").read_text())
        p4c_info = p4info_pb2.P4Info()
        text_format.Parse((reference_dir / "p4c-out" / f"{n}.p4info.txtpb").read_text(), p4c_info)
        out[n] = (res, p4c_json, p4c_info)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_p4info_matches_p4c(compiled, name):
    res, _, p4c_info = compiled[name]
    mine = res.p4info
    assert mine.pkg_info.arch == "v1model"
    for field in ENTITIES:
        a = {x.preamble.name: x for x in getattr(mine, field)}
        b = {x.preamble.name: x for x in getattr(p4c_info, field)}
        assert sorted(a) == sorted(b), field
        for n in a:
            assert a[n] == b[n], f"{field} {n}:\n{a[n]}\n!=\n{b[n]}"


@pytest.mark.parametrize("name", NAMES)
def test_header_layout_matches_p4c(compiled, name):
    res, p4c, _ = compiled[name]
    doc = res.bmv2
    types = {t["name"]: t["fields"] for t in doc["header_types"] if t["name"] != "scalars_0"}
    ptypes = {t["name"]: t["fields"] for t in p4c["header_types"] if t["name"] != "scalars_0"}
    assert types == ptypes
    hdrs = {(h["name"], h["header_type"], h["metadata"]) for h in doc["headers"]}
    phdrs = {(h["name"], h["header_type"], h["metadata"]) for h in p4c["headers"]}
    assert hdrs == phdrs
    assert [(s["name"], s["size"]) for s in doc["header_stacks"]] == \
        [(s["name"], s["size"]) for s in p4c["header_stacks"]]
    assert doc["errors"] == p4c["errors"]
    assert doc["deparsers"][0]["order"] == p4c["deparsers"][0]["order"]
    assert doc["field_aliases"] == p4c["field_aliases"]


@pytest.mark.parametrize("name", NAMES)
def test_parser_matches_p4c(compiled, name):
    res, p4c, _ = compiled[name]
    mine = {s["name"]: s for s in res.bmv2["parsers"][0]["parse_states"]}
    theirs = {s["name"]: s for s in p4c["parsers"][0]["parse_states"]}
    assert sorted(mine) == sorted(theirs)
    for n, s in theirs.items():
        m = mine[n]
        assert m["transitions"] == s["transitions"], n
        assert [o["op"] for o in m["parser_ops"]] == [o["op"] for o in s["parser_ops"]], n
        extracts = [o for o in s["parser_ops"] if o["op"] == "extract"]
        assert [o for o in m["parser_ops"] if o["op"] == "extract"] == extracts
        if all(k["value"][0] != "scalars" for k in s["transition_key"]):
            assert m["transition_key"] == s["transition_key"], n


@pytest.mark.parametrize("name", NAMES)
def test_externs_and_tables_match_p4c(compiled, name):
    res, p4c, _ = compiled[name]
    doc = strip_source_info(res.bmv2)
    p4c = strip_source_info(p4c)
    assert doc["register_arrays"] == [dict(r, id=i) for i, r in enumerate(p4c["register_arrays"])]
    assert doc["counter_arrays"] == p4c["counter_arrays"]
    for pipe in ("ingress", "egress"):
        theirs = [t for t in by_name(p4c["pipelines"], pipe)["tables"] if not t["name"].startswith("tbl_")]
        mine = by_name(doc["pipelines"], pipe)["tables"]
        for t in theirs:
            m = by_name(mine, t["name"])
            for k in ("key", "match_type", "actions", "max_size", "with_counters"):
                assert m[k] == t[k], (t["name"], k)
            assert set(m["next_tables"]) == set(t["next_tables"])
    # checksum inputs name the packet's fields in both (hash inputs go through temporaries in
    # p4c's JSON: test_p4c_structure.py compares those by width)
    def checksum_inputs(d):
        calcs = {c["name"]: c for c in d["calculations"]}
        return sorted(json.dumps(calcs[c["calculation"]]["input"]) for c in d["checksums"])
    assert checksum_inputs(doc) == checksum_inputs(p4c)
    assert [(c["target"], c["verify"], c["update"], c["if_cond"]) for c in doc["checksums"]] == \
        [(c["target"], c["verify"], c["update"], c["if_cond"]) for c in p4c["checksums"]]
