"""A control pipeline's node graph (tables, conditionals, action calls and the edges between
them), built and checked once for both code generators: codegen_pipeline.py emits it as Python,
native/cpipeline.py as C.

The rules about a pipeline's tables live here too, used by both generators and by tables.Table:
where a table goes next (`next_node`), which tables run as their action body (`inline_table`),
how a table finds entries (`match_kind`) and where each key field sits in its lookup key
(`key_shifts`).
"""
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ProgramError
from .program import Program, TableInfo

Error = Callable[[str], Exception]


@dataclass(frozen=True)
class Node:
    name: str
    kind: str     # "table", "cond" or "call"
    json: dict


@dataclass(frozen=True)
class Pipeline:
    name: str
    nodes: dict[str, Node]   # tables, then conditionals, then action calls, in JSON order
    init: str | None         # the first node (None: the pipeline does nothing)


def pipeline(prog: Program, pipe_name: str, error: Error = ProgramError) -> Pipeline | None:
    """The graph of pipeline `pipe_name` (None if the program has no such pipeline); every next
    node it names exists, every action call names an action of the program.  `error` builds the
    exception for a graph neither engine can run (the native generator passes NativeUnsupported)."""
    pipe = {p["name"]: p for p in prog.json.get("pipelines", [])}.get(pipe_name)
    if pipe is None:
        return None
    nodes: dict[str, Node] = {}
    for t in pipe.get("tables", []):
        nodes[t["name"]] = Node(t["name"], "table", t)
    for c in pipe.get("conditionals", []):
        nodes[c["name"]] = Node(c["name"], "cond", c)
    for ac in pipe.get("action_calls", []) or []:
        nodes[ac["name"]] = Node(ac["name"], "call", ac)

    def check(name):
        if name is not None and name not in nodes:
            raise error(f"pipeline {pipe_name}: next node {name!r} does not exist")

    for node in nodes.values():
        j = node.json
        if node.kind == "cond":
            check(j.get("true_next"))
            check(j.get("false_next"))
        elif node.kind == "call":
            if j.get("action_id") not in prog.actions:
                raise error(f"action call {node.name}: unknown action id {j.get('action_id')!r}")
            check(j.get("next_node"))
        else:
            info = prog.tables[node.name]
            for nxt in [*info.next_tables.values(), info.base_default_next]:
                check(nxt)
    init = pipe.get("init_table")
    check(init)
    return Pipeline(pipe_name, nodes, init)


def next_node(info: TableInfo, action_name: str | None, hit: bool) -> str | None:
    """The node after table `info` when it ran action `action_name` (None: no action), on a hit
    or a miss: by hit/miss when the table branches on it, else by action."""
    nt = info.next_tables
    if "__HIT__" in nt or "__MISS__" in nt:
        return nt.get("__HIT__" if hit else "__MISS__")
    return nt.get(action_name, info.base_default_next)


def inline_table(prog: Program, info: TableInfo) -> bool:
    """A keyless table whose default entry the control plane cannot change: p4c's wrapper around
    a direct action call, run (and traced) as the action body itself."""
    de = info.default_entry
    return (not info.keys and de is not None and not info.direct_counter and
            bool(de.action_entry_const or (de.action_const and not prog.actions[de.action_id].params)))


MATCH_KINDS = ("none", "exact", "lpm", "ternary")   # in the order of the C runtime's RT_TBL_*


def match_kind(info: TableInfo) -> str:
    """How the table finds an entry: "none" (no key: always the default entry), "exact" (one
    dict lookup), "lpm" (exact fields and one lpm field: longest prefix first) or "ternary"
    (value & mask tests in priority order)."""
    kinds = [k.match_type for k in info.keys]
    if not kinds:
        return "none"
    if all(m in ("exact", "valid") for m in kinds):
        return "exact"
    if kinds.count("lpm") == 1 and all(m in ("exact", "valid", "lpm") for m in kinds):
        return "lpm"
    return "ternary"


def key_shifts(info: TableInfo) -> list[int]:
    """The lookup key is the key fields concatenated, first field most significant: the bit
    position of each field's least significant bit in it."""
    shift, shifts = sum(k.width for k in info.keys), []
    for k in info.keys:
        shift -= k.width
        shifts.append(shift)
    return shifts
