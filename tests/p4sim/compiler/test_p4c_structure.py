"""p4sim-compile's JSON against real p4c's, for every program of ../shared/p4-reference, part by part
(bmv2_shape.py): layout, parser, the actions of user tables, extern primitives and their parameter
kinds, tables and their entries, externs, calculations, checksums, field lists and the pipeline
graph, up to the names a compiler invents. A divergence BMv2 would trip on (a match type it
rejects, a field list that does not exist, a parameter nested one level too deep) shows here
without BMv2."""
import json

import pytest
from bmv2_shape import SHAPES

from p4sim.compiler import compile_file

NAMES = ["agg_mini", "fwd_basic", "hash_csum", "loopback", "match_kinds", "parse_mix", "rep_clone",
         "stacks_errors"]


@pytest.fixture(scope="module")
def docs(reference_dir):
    cache = {}

    def get(name):
        if name not in cache:
            mine = compile_file(str(reference_dir / "programs" / f"{name}.p4")).bmv2
            theirs = json.loads((reference_dir / "p4c-out" / f"{name}.json").read_text())
            cache[name] = (mine, theirs)
        return cache[name]
    return get


@pytest.mark.parametrize("part", sorted(SHAPES))
@pytest.mark.parametrize("name", NAMES)
def test_shape_matches_p4c(docs, name, part):
    mine, theirs = docs(name)
    a, b = SHAPES[part](mine), SHAPES[part](theirs)
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), f"{name} {part}: different members"
        for k in a:
            assert a[k] == b[k], f"{name} {part}: {k}"
    assert a == b
