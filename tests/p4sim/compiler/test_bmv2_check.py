"""Every program p4sim-compile builds here (examples, engine test programs, the reference set, the
p4reduce program) passes the checks BMv2 and its P4Runtime server make when loading it
(bmv2_check.py); real p4c's outputs pass them too, which keeps the checks honest."""
import json
import pathlib

import pytest
from bmv2_check import check_bmv2, check_p4info
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4sim.compiler import compile_file

REPO = pathlib.Path(__file__).resolve().parents[3]
OURS = sorted(str(p.relative_to(REPO)) for p in list((REPO / "examples" / "p4").glob("*.p4")) +
              list((REPO / "tests" / "p4sim" / "engine" / "programs").glob("*.p4")) + [REPO / "p4reduce" / "p4src" / "p4reduce.p4"])
REFERENCE = ["agg_mini", "fwd_basic", "hash_csum", "loopback", "match_kinds", "parse_mix", "rep_clone",
             "stacks_errors"]


@pytest.mark.parametrize("path", OURS)
def test_our_programs_load_on_bmv2(path):
    res = compile_file(str(REPO / path))
    assert check_bmv2(res.bmv2) == []
    assert check_p4info(res.bmv2, res.p4info) == []


@pytest.mark.parametrize("name", REFERENCE)
def test_reference_programs_load_on_bmv2_both_compilers(reference_dir, name):
    res = compile_file(str(reference_dir / "programs" / f"{name}.p4"))
    assert check_bmv2(res.bmv2) == []
    assert check_p4info(res.bmv2, res.p4info) == []
    theirs = json.loads((reference_dir / "p4c-out" / f"{name}.json").read_text())
    info = text_format.Parse((reference_dir / "p4c-out" / f"{name}.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    assert check_bmv2(theirs) == []
    assert check_p4info(theirs, info) == []


def test_the_checks_catch_what_bmv2_trips_on(reference_dir):
    """The divergences of issue #16, put back into real p4c's JSON, are each caught."""
    doc = json.loads((reference_dir / "p4c-out" / "rep_clone.json").read_text())
    clone = next(p for a in doc["actions"] for p in a["primitives"] if p["op"] == "clone_ingress_pkt_to_egress")
    clone["parameters"][1] = {"type": "hexstr", "value": "0x0"}
    assert any("field list '0x0' does not exist" in p for p in check_bmv2(doc))
    doc = json.loads((reference_dir / "p4c-out" / "match_kinds.json").read_text())
    acl = next(t for p in doc["pipelines"] for t in p["tables"] if t["name"] == "Ing.acl")
    acl["key"][2]["match_type"] = "optional"
    assert "table Ing.acl: BMv2 has no match type 'optional'" in check_bmv2(doc)
    doc = json.loads((reference_dir / "p4c-out" / "stacks_errors.json").read_text())
    verify = next(op for s in doc["parsers"][0]["parse_states"] for op in s["parser_ops"] if op["op"] == "verify")
    verify["parameters"][0] = {"type": "expression", "value": verify["parameters"][0]}
    assert any("expression without an operator" in p for p in check_bmv2(doc))
