"""The shape of a BMv2 JSON document: everything BMv2 depends on when it loads and runs a program,
with the names a compiler invents (temporaries, synthesized tables and actions, calculation and
conditional names, ids) taken out. Two JSONs with equal shapes load and run alike on BMv2.

Used to compare p4sim-compile's JSON with real p4c's (tests/p4sim/compiler/test_p4c_structure.py).
Each `*_shape` function returns plain data; a difference names the part that differs.
"""
import re

# names compilers make up: temporaries and synthesized objects
_TEMP = re.compile(r"^(tmp(_\d+)?|.*_\d+|key_\d+)$")


def _hx(v):
    return int(v, 16) if isinstance(v, str) else v


class Doc:
    """Lookups over one BMv2 JSON document."""

    def __init__(self, doc):
        self.doc = doc
        self.htype = {h["name"]: h["header_type"] for h in doc["headers"]}
        self.widths = {t["name"]: {f[0]: (f[1], bool(f[2]) if len(f) > 2 else False) for f in t["fields"]}
                       for t in doc["header_types"]}
        self.actions = {a["id"]: a for a in doc["actions"]}
        self.user_tables = {t["name"]: t for p in doc["pipelines"] for t in p["tables"]
                            if not t["name"].startswith("tbl_")}
        self.field_lists = {f["id"]: f for f in doc["field_lists"]}
        self.calcs = {c["name"]: c for c in doc["calculations"]}

    def width(self, header, field):
        if field == "$valid$":
            return (1, False)
        return self.widths[self.htype[header]][field]

    def is_temp(self, loc):
        """A scalars field that is no user metadata field (p4c: tmp*, ours: tmp*/local copies)."""
        return loc[0] == "scalars" and "." not in loc[1]

    # ---- values
    def value(self, v):
        """The shape of a type-value object: fields by width (their names when they are user
        storage), expressions by operator tree, constants by value."""
        t = v.get("type")
        if t == "field":
            h, f = v["value"]
            if self.is_temp((h, f)):
                return ("temp", self.width(h, f))
            return ("field", h, f)
        if t == "hexstr":
            return ("const", _hx(v["value"]))
        if t == "expression":
            e = v["value"]
            if isinstance(e, dict) and e.get("type") == "expression":
                return ("wrapped", self.value(e))
            return ("expr", e["op"], self.value(e["left"]) if e.get("left") else None,
                    self.value(e["right"]) if e.get("right") else None,
                    self.value(e["cond"]) if e.get("cond") else None)
        if t in ("bool", "string", "header", "header_stack", "stack", "regular", "runtime_data",
                 "register_array", "counter_array", "meter_array", "lookahead"):
            val = v["value"]
            return (t, tuple(val) if isinstance(val, list) else val)
        if t == "calculation":
            return ("calculation", self.calc_shape(self.calcs[v["value"]]))
        if t == "parameters_vector":
            return ("parameters_vector", len(v["value"]))
        return (t,)

    def kind(self, v):
        """Only the kind of a parameter (what BMv2 binds it to), not its content."""
        t = v.get("type")
        if t == "expression":
            e = v["value"]
            return "wrapped" if isinstance(e, dict) and e.get("type") == "expression" else "expression"
        return t

    def calc_shape(self, c):
        inputs = []
        for i in c["input"]:
            if i["type"] == "field":
                inputs.append(("field", self.width(*i["value"])[0]))
            elif i["type"] == "hexstr":
                inputs.append(("const", _hx(i["value"]), i.get("bitwidth")))
            else:
                inputs.append((i["type"], i.get("value")))
        return (c["algo"], tuple(inputs))


# ---- the parts BMv2 loads -------------------------------------------------------------------------
def layout_shape(doc):
    d = Doc(doc)
    types = sorted((t["name"], tuple(tuple(f) for f in t["fields"])) for t in doc["header_types"]
                   if t["name"] != "scalars_0")
    headers = sorted((h["name"], h["header_type"], h["metadata"]) for h in doc["headers"] if h["name"] != "scalars")
    stacks = sorted((s["name"], s["header_type"], s["size"],
                     tuple(next(h["name"] for h in doc["headers"] if h["id"] == i) for i in s["header_ids"]))
                    for s in doc["header_stacks"])
    user_scalars = sorted(tuple(f) for f in next(t for t in doc["header_types"] if t["name"] == "scalars_0")["fields"]
                          if not d.is_temp(("scalars", f[0])) and not f[0].startswith("_padding"))
    return {"header_types": types, "headers": headers, "header_stacks": stacks, "user_scalars": user_scalars,
            "errors": [tuple(e) for e in doc["errors"]], "deparser": doc["deparsers"][0]["order"],
            "field_aliases": doc["field_aliases"], "enums": doc["enums"]}


def parser_shape(doc):
    d = Doc(doc)
    states = {}
    for s in doc["parsers"][0]["parse_states"]:
        ops = []
        for op in s["parser_ops"]:
            ps = op["parameters"]
            if op["op"] == "extract":
                ops.append(("extract", d.value(ps[0])))
            elif op["op"] == "set":
                ops.append(("set", d.value(ps[0]), d.kind(ps[1])))
            elif op["op"] == "verify":
                ops.append(("verify", d.kind(ps[0]), d.value(ps[1])))
            elif op["op"] == "primitive":
                ops.append(("primitive", ps[0]["op"], tuple(d.kind(x) for x in ps[0]["parameters"])))
            else:
                ops.append((op["op"], tuple(d.kind(x) for x in ps)))
        key = tuple((k["type"], d.width(*k["value"])[0]) if k["type"] == "field" else
                    (k["type"], tuple(k["value"])) for k in s["transition_key"])
        trans = tuple((t["type"], _hx(t["value"]) if t["type"] == "hexstr" else t["value"],
                       _hx(t["mask"]) if t["mask"] else None, t["next_state"]) for t in s["transitions"])
        states[s["name"]] = {"ops": ops, "key": key, "transitions": trans}
    return {"init": doc["parsers"][0]["init_state"], "states": states}


def primitives_shape(d, prims):
    out = []
    for p in prims:
        params = []
        for x in p["parameters"]:
            if p["op"] in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress", "resubmit",
                           "recirculate") and x is p["parameters"][-1] and x["type"] == "hexstr":
                fl = d.field_lists.get(_hx(x["value"]))
                params.append(("field_list", None if fl is None else
                               tuple(tuple(e["value"]) for e in fl["elements"])))
            elif p["op"] == "generate_digest" and x is p["parameters"][-1]:
                params.append(("learn_list",))
            else:
                params.append(d.kind(x))
        out.append((p["op"], tuple(params)))
    return out


def actions_shape(doc):
    """Actions the control plane can name (those of user tables), primitive by primitive."""
    d = Doc(doc)
    names = {n for t in d.user_tables.values() for n in t["actions"]}
    out = {}
    for a in doc["actions"]:
        if a["name"] in names:
            out[a["name"]] = {"runtime_data": [(r["name"], r["bitwidth"]) for r in a["runtime_data"]],
                              "primitives": primitives_shape(d, a["primitives"])}
    return out


def extern_primitives_shape(doc):
    """Every primitive other than assignments and jumps, over all actions, with its parameter
    kinds (BMv2 binds each to a field, an expression, a register array...): a multiset."""
    d = Doc(doc)
    out = []
    for a in doc["actions"]:
        for op, params in primitives_shape(d, a["primitives"]):
            if op not in ("assign", "_jump", "_jump_if_zero"):
                out.append((op, params))
    return sorted(out, key=repr)


def tables_shape(doc):
    d = Doc(doc)
    out = {}
    for name, t in d.user_tables.items():
        names = {a["id"]: a["name"] for a in doc["actions"]}
        de = t.get("default_entry")
        entries = []
        for e in t.get("entries", []) or []:
            mk = []
            for k in e["match_key"]:
                mk.append(tuple((f, v if f == "match_type" else _hx(v)) for f, v in sorted(k.items())))
            entries.append((tuple(mk), names[e["action_entry"]["action_id"]],
                            tuple(_hx(x) for x in e["action_entry"]["action_data"]), e.get("priority")))
        out[name] = {
            "key": [(k["match_type"], tuple(k["target"]) if isinstance(k["target"], list) else k["target"],
                     _hx(k["mask"]) if k.get("mask") else None, k.get("name")) for k in t["key"]],
            "match_type": t["match_type"], "type": t["type"], "max_size": t["max_size"],
            "with_counters": t["with_counters"], "support_timeout": t["support_timeout"],
            "direct_meters": t["direct_meters"], "actions": sorted(t["actions"]),
            "next_keys": sorted(t["next_tables"]),
            "default": None if de is None else (names[de["action_id"]], de["action_const"],
                                                tuple(_hx(x) for x in de["action_data"]),
                                                de["action_entry_const"]),
            "entries": entries,
        }
    return out


def externs_shape(doc):
    d = Doc(doc)
    return {
        "registers": sorted((r["name"], r["size"], r["bitwidth"]) for r in doc["register_arrays"]),
        "counters": sorted((c["name"], c.get("size"), c["is_direct"], c.get("binding")) for c in doc["counter_arrays"]),
        "meters": sorted((m["name"], m.get("size"), m.get("is_direct")) for m in doc["meter_arrays"]),
        "calculations": sorted(d.calc_shape(c) for c in doc["calculations"]),
        "checksums": sorted((tuple(c["target"]), c["type"], c["verify"], c["update"], c["if_cond"] is not None,
                             d.calc_shape(d.calcs[c["calculation"]])) for c in doc["checksums"]),
        "learn_lists": sorted((ll["name"], len(ll["elements"])) for ll in doc["learn_lists"]),
        "user_field_lists": sorted(tuple(tuple(e["value"]) for e in f["elements"])
                                   for f in doc["field_lists"] if f["elements"]),
    }


def _exits(doc):
    """Nodes whose actions all end the pipeline (an 'exit' primitive): what follows them never runs."""
    out = set()
    for p in doc["pipelines"]:
        acts = {a["id"]: a for a in doc["actions"]}
        for t in p["tables"]:
            ids = t["action_ids"]
            if ids and all(any(x["op"] == "exit" for x in acts[i]["primitives"]) for i in ids):
                out.add(t["name"])
    return out


def pipelines_shape(doc):
    """Per pipeline: for the start and after each user table (per action or hit/miss), the user
    tables that can follow, through conditionals and synthesized tables (edges out of nodes that
    always exit are never taken, so they are left out)."""
    d = Doc(doc)
    exits = _exits(doc)
    out = {}
    for p in doc["pipelines"]:
        nodes = {t["name"]: ("table", t) for t in p["tables"]}
        nodes.update({c["name"]: ("cond", c) for c in p["conditionals"]})

        def succ(name, nodes=nodes):
            kind, j = nodes[name]
            if name in exits:
                return []
            if kind == "cond":
                return [j["true_next"], j["false_next"]]
            return list(j["next_tables"].values()) + [j.get("base_default_next")]

        def reach(starts):
            seen, found, stack = set(), set(), list(starts)
            while stack:
                n = stack.pop()
                if n is None or n in seen:
                    continue
                seen.add(n)
                if n in d.user_tables:
                    found.add(n)
                    continue
                stack.extend(succ(n))
            return sorted(found)
        graph = {"<start>": reach([p["init_table"]])}
        for name, t in d.user_tables.items():
            if name in nodes:
                graph[name] = {k: reach([v]) for k, v in t["next_tables"].items()}
        out[p["name"]] = graph
    return out


SHAPES = {"layout": layout_shape, "parser": parser_shape, "actions": actions_shape,
          "extern primitives": extern_primitives_shape, "tables": tables_shape, "externs": externs_shape,
          "pipelines": pipelines_shape}
