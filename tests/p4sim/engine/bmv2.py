"""Build small BMv2 JSON programs (docs/JSON_format.md) for engine tests, the way p4c lays them out.

Until p4sim-compile can compile test programs, the per-feature tests describe their programs with
this builder: keyless tables with a const default action stand for straight-line code (as p4c
emits them), conditionals and tables form the next-node graph.
"""
import copy

STANDARD_METADATA = [
    ["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
    ["instance_type", 32, False], ["packet_length", 32, False], ["enq_timestamp", 32, False],
    ["enq_qdepth", 19, False], ["deq_timedelta", 32, False], ["deq_qdepth", 19, False],
    ["ingress_global_timestamp", 48, False], ["egress_global_timestamp", 48, False],
    ["mcast_grp", 16, False], ["egress_rid", 16, False], ["checksum_error", 1, False],
    ["parser_error", 32, False], ["priority", 3, False], ["_padding", 3, False],
]
ERRORS = [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2], ["StackOutOfBounds", 3],
          ["HeaderTooShort", 4], ["ParserTimeout", 5], ["ParserInvalidArgument", 6]]


# ---- type-value objects ------------------------------------------------------------------------
def F(header, field):
    return {"type": "field", "value": [header, field]}


def SM(field):
    return F("standard_metadata", field)


def M(field):
    """A field of the `scalars` metadata header."""
    return F("scalars", field)


def C(value):
    return {"type": "hexstr", "value": hex(value) if value >= 0 else "-" + hex(-value)}


def B(value):
    return {"type": "bool", "value": bool(value)}


def R(index):
    return {"type": "runtime_data", "value": index}


def H(name):
    return {"type": "header", "value": name}


def STK(name):
    return {"type": "header_stack", "value": name}


def E(op, left, right=None, cond=None):
    if right is None:
        left, right = None, left
    value = {"op": op, "left": left, "right": right}
    if cond is not None:
        value["cond"] = cond
    return {"type": "expression", "value": {"type": "expression", "value": value}}


def IF(cond, a, b):
    return E("?", a, b, cond)


def P(op, *params):
    return {"op": op, "parameters": list(params)}


def wrap(expr, width):
    """p4c's unsigned wraparound: (expr) & (2^width - 1)."""
    return E("&", expr, C((1 << width) - 1))


# ---- program builder ---------------------------------------------------------------------------
class Program:
    def __init__(self):
        self.j = {
            "__meta__": {"version": [2, 23], "compiler": "tests/p4sim/engine/bmv2.py"},
            "header_types": [{"name": "scalars_0", "id": 0, "fields": []},
                             {"name": "standard_metadata", "id": 1, "fields": copy.deepcopy(STANDARD_METADATA)}],
            "headers": [{"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
                        {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata",
                         "metadata": True}],
            "header_stacks": [], "header_union_types": [], "header_unions": [], "header_union_stacks": [],
            "field_lists": [], "errors": copy.deepcopy(ERRORS), "enums": [],
            "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": []}],
            "parse_vsets": [], "deparsers": [{"name": "deparser", "id": 0, "order": [], "primitives": []}],
            "meter_arrays": [], "counter_arrays": [], "register_arrays": [], "calculations": [],
            "learn_lists": [], "actions": [],
            "pipelines": [
                {"name": "ingress", "id": 0, "init_table": None, "tables": [], "action_profiles": [],
                 "conditionals": []},
                {"name": "egress", "id": 1, "init_table": None, "tables": [], "action_profiles": [],
                 "conditionals": []}],
            "checksums": [], "force_arith": [], "extern_instances": [], "field_aliases": [],
        }
        self._ids = {}

    def _id(self, kind):
        self._ids[kind] = self._ids.get(kind, -1) + 1
        return self._ids[kind]

    def meta(self, *fields):
        """Add fields (name, width[, signed]) to the scalars metadata header."""
        for f in fields:
            self.j["header_types"][0]["fields"].append([f[0], f[1], f[2] if len(f) > 2 else False])
        return self

    def header(self, name, fields, type_name=None, metadata=False):
        type_name = type_name or name + "_t"
        if not any(t["name"] == type_name for t in self.j["header_types"]):
            self.j["header_types"].append({"name": type_name, "id": len(self.j["header_types"]),
                                           "fields": [[f[0], f[1], f[2] if len(f) > 2 else False]
                                                      for f in fields]})
        self.j["headers"].append({"name": name, "id": len(self.j["headers"]), "header_type": type_name,
                                  "metadata": metadata})
        return name

    def stack(self, name, fields, size):
        ids = []
        for i in range(size):
            self.header(f"{name}[{i}]", fields, type_name=name + "_t")
            ids.append(self.j["headers"][-1]["id"])
        self.j["header_stacks"].append({"name": name, "id": len(self.j["header_stacks"]),
                                        "header_type": name + "_t", "size": size, "header_ids": ids})
        return name

    def state(self, name, ops=(), key=(), transitions=None, default=None):
        """transitions: list of (value, mask or None, next_state); default: next state or None."""
        trans = []
        for value, mask, nxt in transitions or []:
            trans.append({"type": "hexstr", "value": value, "mask": mask, "next_state": nxt})
        trans.append({"type": "default", "value": None, "mask": None, "next_state": default})
        self.j["parsers"][0]["parse_states"].append({
            "name": name, "id": len(self.j["parsers"][0]["parse_states"]), "parser_ops": list(ops),
            "transition_key": list(key), "transitions": trans})
        return self

    def state_no_default(self, name, ops, key, transitions):
        self.state(name, ops, key, transitions)
        self.j["parsers"][0]["parse_states"][-1]["transitions"].pop()
        return self

    def deparse(self, *order):
        self.j["deparsers"][0]["order"] = list(order)
        return self

    def action(self, name, prims, params=()):
        aid = len(self.j["actions"])
        self.j["actions"].append({"name": name, "id": aid,
                                  "runtime_data": [{"name": p, "bitwidth": w} for p, w in params],
                                  "primitives": list(prims)})
        return aid

    def _pipe(self, pipeline):
        return next(p for p in self.j["pipelines"] if p["name"] == pipeline)

    def table(self, pipeline, name, keys, actions, default=None, default_args=(), const_default=False,
              next_tables=None, base_next=None, counters=False, entries=None, max_size=1024,
              match_type=None):
        """keys: list of (name, match_type, (header, field)); actions: action names."""
        ids = [self.action_id(a) for a in actions]
        kinds = [k[1] for k in keys]
        if match_type is None:
            match_type = ("range" if "range" in kinds else "ternary" if ("ternary" in kinds or "optional" in kinds)
                          else "lpm" if "lpm" in kinds else "exact")
        t = {"name": name, "id": self._id("table"), "key": [
                {"match_type": mt, "name": kn, "target": list(tg), "mask": None} for kn, mt, tg in keys],
             "match_type": match_type, "type": "simple", "max_size": max_size,
             "with_counters": counters, "support_timeout": False, "direct_meters": None,
             "action_ids": ids, "actions": list(actions), "base_default_next": base_next,
             "next_tables": next_tables if next_tables is not None else {a: base_next for a in actions}}
        if default is not None:
            t["default_entry"] = {"action_id": self.action_id(default), "action_const": const_default,
                                  "action_data": [hex(a) for a in default_args],
                                  "action_entry_const": const_default}
        if entries is not None:
            t["entries"] = entries
        if counters:
            self.j["counter_arrays"].append({"name": name + "_counter", "id": len(self.j["counter_arrays"]),
                                             "is_direct": True, "binding": name})
        self._pipe(pipeline)["tables"].append(t)
        if self._pipe(pipeline)["init_table"] is None:
            self._pipe(pipeline)["init_table"] = name
        return name

    def run(self, pipeline, name, prims, next_node=None):
        """Straight-line code as p4c emits it: a keyless table whose const default runs the action."""
        self.action(name, prims)
        return self.table(pipeline, "tbl_" + name, [], [name], default=name, const_default=True,
                          base_next=next_node)

    def cond(self, pipeline, name, expr, true_next, false_next):
        self._pipe(pipeline)["conditionals"].append({
            "name": name, "id": self._id("cond"), "expression": expr["value"] if expr["type"] == "expression"
            else expr, "true_next": true_next, "false_next": false_next})
        return name

    def init(self, pipeline, node):
        self._pipe(pipeline)["init_table"] = node
        return self

    def action_id(self, name):
        for a in self.j["actions"]:
            if a["name"] == name:
                return a["id"]
        raise KeyError(name)

    def register(self, name, size, width):
        self.j["register_arrays"].append({"name": name, "id": len(self.j["register_arrays"]),
                                          "size": size, "bitwidth": width})
        return name

    def counter(self, name, size):
        self.j["counter_arrays"].append({"name": name, "id": len(self.j["counter_arrays"]),
                                         "size": size, "is_direct": False})
        return name

    def field_list(self, fl_id, *fields):
        self.j["field_lists"].append({"id": fl_id, "name": f"fl{fl_id}",
                                      "elements": [{"type": "field", "value": list(f)} for f in fields]})
        return fl_id

    def calculation(self, name, algo, inputs):
        self.j["calculations"].append({"name": name, "id": len(self.j["calculations"]), "algo": algo,
                                       "input": list(inputs)})
        return name

    def checksum(self, name, target, calc, verify, update, cond=None):
        self.j["checksums"].append({"name": name, "id": len(self.j["checksums"]), "target": list(target),
                                    "type": "generic", "calculation": calc, "verify": verify,
                                    "update": update, "if_cond": cond["value"] if cond else None})
        return self

    def build(self):
        return copy.deepcopy(self.j)


def extract(header):
    return {"op": "extract", "parameters": [{"type": "regular", "value": header}]}


def extract_next(stack):
    return {"op": "extract", "parameters": [{"type": "stack", "value": stack}]}


def pset(dst, src):
    return {"op": "set", "parameters": [dst, src]}


def simple(fields, ingress_prims, egress_prims=None, name="h"):
    """Program: parse header `name` (fields) then accept; ingress runs `ingress_prims` (out of port 1
    unless they say otherwise); egress runs `egress_prims`; deparse `name`."""
    p = Program()
    p.header(name, fields)
    p.state("start", [extract(name)])
    p.deparse(name)
    p.run("ingress", "ing", [P("assign", SM("egress_spec"), C(1))] + list(ingress_prims))
    if egress_prims:
        p.run("egress", "egr", list(egress_prims))
    return p
