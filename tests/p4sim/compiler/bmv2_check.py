"""What real BMv2 (simple_switch_grpc 1.15) and its P4Runtime server check when they load a program,
written as checks over the BMv2 JSON and the P4Info, so that a JSON BMv2 would reject, abort on or
misread is caught without BMv2: primitives with the arity and parameter kinds simple_switch
registers, expressions nested as its loader expects them (one level in conditionals and verify,
two in primitives and parser sets), field lists that exist, match types it knows, entries it
accepts, and a P4Info whose tables, keys and actions line up with the JSON (the P4Runtime server
translates entries by name and width).

The rules are p4c's conventions; `check_bmv2` passing on real p4c's outputs (the reference set) is
part of the test, so the rules stay honest.
"""
# simple_switch's primitives: name -> parameter kinds ("data" accepts fields, constants,
# runtime data and expressions; "field" needs an l-value)
PRIMITIVES = {
    "assign": ("field", "data"), "assign_VL": ("field", "field"), "assign_header": ("header", "header"),
    "assign_union": ("union", "union"), "assign_header_stack": ("header_stack", "header_stack"),
    "assign_union_stack": ("union_stack", "union_stack"), "push": ("header_stack", "data"),
    "pop": ("header_stack", "data"), "_jump": ("data",), "_jump_if_zero": ("data", "data"),
    "modify_field": ("field", "data"), "modify_field_rng_uniform": ("field", "data", "data"),
    "add_to_field": ("field", "data"), "subtract_from_field": ("field", "data"),
    "add": ("field", "data", "data"), "subtract": ("field", "data", "data"),
    "bit_xor": ("field", "data", "data"), "bit_or": ("field", "data", "data"),
    "bit_and": ("field", "data", "data"), "shift_left": ("field", "data", "data"),
    "shift_right": ("field", "data", "data"), "drop": (), "mark_to_drop": ("header",), "exit": (),
    "generate_digest": ("data", "data"), "add_header": ("header",), "add_header_fast": ("header",),
    "remove_header": ("header",), "copy_header": ("header", "header"),
    "clone_ingress_pkt_to_egress": ("data", "field_list"), "clone_egress_pkt_to_egress": ("data", "field_list"),
    "resubmit": ("field_list",), "recirculate": ("field_list",),
    "modify_field_with_hash_based_offset": ("field", "data", "calculation", "data"), "no_op": (),
    "execute_meter": ("meter_array", "data", "field"), "count": ("counter_array", "data"),
    "register_read": ("field", "register_array", "data"), "register_write": ("register_array", "data", "data"),
    "truncate": ("data",), "log_msg": ("string", "parameters_vector"), "assert": ("data",), "assume": ("data",),
}
EXPRESSION_OPS = {"+", "-", "*", "<<", ">>", "==", "!=", ">", ">=", "<", "<=", "and", "or", "not", "&", "|",
                  "^", "~", "valid", "valid_union", "?", "two_comp_mod", "usat_cast", "sat_cast", "b2d",
                  "d2b", "dereference_header_stack", "last_stack_index", "size_stack", "access_field",
                  "dereference_union_stack", "access_union_header"}
ALGORITHMS = {"crc16", "crc32", "crc16_custom", "crc32_custom", "csum16", "identity", "xor16", "cksum16",
              "random", "round_robin"}
MATCH_TYPES = {"exact", "lpm", "ternary", "range", "valid"}


class Problems(list):
    def add(self, where, what):
        self.append(f"{where}: {what}")


def _hx(v):
    return int(v, 16)


class Checker:
    def __init__(self, doc):
        self.doc = doc
        self.p = Problems()
        self.types = {t["name"]: {f[0]: f[1] for f in t["fields"]} for t in doc.get("header_types", [])}
        self.headers = {h["name"]: h for h in doc.get("headers", [])}
        self.stacks = {s["name"]: s for s in doc.get("header_stacks", [])}
        self.field_lists = {f["id"]: f for f in doc.get("field_lists", [])}
        self.calcs = {c["name"]: c for c in doc.get("calculations", [])}
        self.registers = {r["name"] for r in doc.get("register_arrays", [])}
        self.counters = {c["name"] for c in doc.get("counter_arrays", [])}
        self.meters = {m["name"] for m in doc.get("meter_arrays", [])}
        self.actions = {a["id"]: a for a in doc.get("actions", [])}
        self.learn_lists = {ll["id"] for ll in doc.get("learn_lists", [])}

    def width(self, where, target):
        h, f = target
        if h not in self.headers:
            self.p.add(where, f"unknown header {h!r}")
            return None
        if f == "$valid$":
            return 1
        fields = self.types[self.headers[h]["header_type"]]
        if f not in fields:
            self.p.add(where, f"header {h!r} has no field {f!r}")
            return None
        return fields[f]

    # ---- expressions
    def expr(self, where, j, wrapped):
        """A type-value object; `wrapped`: an operator tree must sit two levels deep."""
        if not isinstance(j, dict) or "type" not in j:
            self.p.add(where, f"not a type-value object: {j!r}")
            return
        t = j["type"]
        if t == "field":
            self.width(where, j["value"])
        elif t == "expression":
            v = j["value"]
            if wrapped:
                if not (isinstance(v, dict) and v.get("type") == "expression"):
                    self.p.add(where, "expression parameter must be wrapped twice ({'type': 'expression', "
                                      "'value': {'type': 'expression', 'value': {op...}}})")
                    return
                v = v["value"]
            self.tree(where, v)
        elif t == "hexstr":
            _hx(j["value"])
        elif t == "header":
            if j["value"] not in self.headers:
                self.p.add(where, f"unknown header {j['value']!r}")
        elif t == "header_stack":
            if j["value"] not in self.stacks:
                self.p.add(where, f"unknown header stack {j['value']!r}")
        elif t not in ("bool", "runtime_data", "local", "string", "stack_field", "lookahead"):
            self.p.add(where, f"unexpected parameter type {t!r}")

    def tree(self, where, e):
        if not isinstance(e, dict) or "op" not in e:
            self.p.add(where, f"expression without an operator (nested one level too deep?): {e!r}"[:200])
            return
        if e["op"] not in EXPRESSION_OPS:
            self.p.add(where, f"unknown expression operator {e['op']!r}")
        for k in ("left", "right", "cond"):
            x = e.get(k)
            if x is None:
                continue
            if x.get("type") == "expression":
                self.tree(where, x["value"])
            else:
                self.expr(where, x, False)

    # ---- parts
    def check(self):
        for p in self.doc.get("parsers", []):
            self.parser(p)
        for a in self.doc.get("actions", []):
            self.action(a)
        for pipe in self.doc.get("pipelines", []):
            self.pipeline(pipe)
        for c in self.doc.get("calculations", []):
            where = f"calculation {c['name']}"
            if c["algo"] not in ALGORITHMS:
                self.p.add(where, f"unknown algorithm {c['algo']!r}")
            for i in c["input"]:
                if i["type"] == "field":
                    self.width(where, i["value"])
                elif i["type"] == "hexstr" and "bitwidth" not in i:
                    self.p.add(where, "a constant input needs a bitwidth")
                elif i["type"] not in ("field", "hexstr", "header", "payload"):
                    self.p.add(where, f"unexpected input type {i['type']!r}")
        for c in self.doc.get("checksums", []):
            where = f"checksum {c['name']}"
            if c["calculation"] not in self.calcs:
                self.p.add(where, f"unknown calculation {c['calculation']!r}")
            self.width(where, c["target"])
            if c.get("if_cond") is not None:
                self.expr(where, c["if_cond"], False)
        for f in self.doc.get("field_lists", []):
            for e in f["elements"]:
                if e["type"] != "field":
                    self.p.add(f"field list {f['name']}", f"element of type {e['type']!r}")
                else:
                    self.width(f"field list {f['name']}", e["value"])
        for d in self.doc.get("deparsers", []):
            for h in d["order"]:
                if h not in self.headers or self.headers[h]["metadata"]:
                    self.p.add("deparser", f"{h!r} is not a packet header")
        return self.p

    def parser(self, parser):
        states = {s["name"] for s in parser["parse_states"]}
        if parser["init_state"] not in states:
            self.p.add("parser", f"init state {parser['init_state']!r} does not exist")
        for s in parser["parse_states"]:
            where = f"parse state {s['name']}"
            for op in s["parser_ops"]:
                ps = op["parameters"]
                if op["op"] == "extract":
                    kind, name = ps[0]["type"], ps[0]["value"]
                    if kind == "regular" and (name not in self.headers or self.headers[name]["metadata"]):
                        self.p.add(where, f"extract into {name!r}, which is not a packet header")
                    elif kind == "stack" and name not in self.stacks:
                        self.p.add(where, f"extract into unknown stack {name!r}")
                elif op["op"] == "set":
                    self.expr(where, ps[0], False)
                    if ps[1]["type"] != "lookahead":
                        self.expr(where, ps[1], True)
                elif op["op"] == "verify":
                    if len(ps) != 2:
                        self.p.add(where, "verify takes a condition and an error")
                    elif ps[0]["type"] == "expression":
                        self.expr(where, ps[0], False)
                    elif ps[0]["type"] != "bool":
                        self.p.add(where, "verify condition must be a boolean expression")
                elif op["op"] == "primitive":
                    self.primitive(where, ps[0])
                elif op["op"] not in ("advance", "shift", "extract_VL"):
                    self.p.add(where, f"unknown parser op {op['op']!r}")
            for k in s["transition_key"]:
                if k["type"] == "field":
                    self.width(where, k["value"])
                elif k["type"] == "stack_field":
                    if k["value"][0] not in self.stacks:
                        self.p.add(where, f"unknown stack {k['value'][0]!r}")
                elif k["type"] != "lookahead":
                    self.p.add(where, f"transition key of type {k['type']!r}")
            for t in s["transitions"]:
                if t["next_state"] is not None and t["next_state"] not in states:
                    self.p.add(where, f"transition to unknown state {t['next_state']!r}")
                if t["type"] not in ("hexstr", "default", "parse_vset"):
                    self.p.add(where, f"transition of type {t['type']!r}")

    def primitive(self, where, p):
        op, ps = p["op"], p["parameters"]
        sig = PRIMITIVES.get(op)
        if sig is None:
            self.p.add(where, f"simple_switch has no primitive {op!r}")
            return
        if op == "log_msg" and len(ps) == 1:
            sig = sig[:1]
        if len(ps) != len(sig):
            self.p.add(where, f"{op} takes {len(sig)} parameters, {len(ps)} given")
            return
        for kind, x in zip(sig, ps):
            w = f"{where}, {op}"
            if kind == "field":
                if x["type"] != "field":
                    self.p.add(w, f"needs a field, got {x['type']!r}")
                else:
                    self.width(w, x["value"])
            elif kind == "field_list":
                if x["type"] != "hexstr" or _hx(x["value"]) not in self.field_lists:
                    self.p.add(w, f"field list {x.get('value')!r} does not exist (BMv2 aborts on it)")
            elif kind == "calculation":
                if x["type"] != "calculation" or x["value"] not in self.calcs:
                    self.p.add(w, f"unknown calculation {x.get('value')!r}")
            elif kind in ("register_array", "counter_array", "meter_array"):
                known = {"register_array": self.registers, "counter_array": self.counters,
                         "meter_array": self.meters}[kind]
                if x["type"] != kind or x["value"] not in known:
                    self.p.add(w, f"unknown {kind} {x.get('value')!r}")
            elif kind in ("header", "header_stack"):
                if x["type"] != kind:
                    self.p.add(w, f"needs a {kind}, got {x['type']!r}")
                self.expr(w, x, False)
            elif kind == "parameters_vector":
                for y in x["value"]:
                    self.expr(w, y, True)
            elif kind == "data":
                self.expr(w, x, True)
        if op == "generate_digest" and _hx(ps[1]["value"]) not in self.learn_lists:
            self.p.add(where, f"learn list {ps[1]['value']} does not exist")

    def action(self, a):
        for p in a["primitives"]:
            self.primitive(f"action {a['name']}", p)

    def pipeline(self, pipe):
        nodes = {t["name"] for t in pipe["tables"]} | {c["name"] for c in pipe["conditionals"]}
        names = {a["name"] for a in self.actions.values()}

        def node(where, n):
            if n is not None and n not in nodes:
                self.p.add(where, f"next node {n!r} does not exist")
        node(f"pipeline {pipe['name']}", pipe["init_table"])
        for c in pipe["conditionals"]:
            where = f"conditional {c['name']}"
            e = c["expression"]
            if e.get("type") == "expression":
                self.tree(where, e["value"])
            else:
                self.expr(where, e, False)
            node(where, c["true_next"])
            node(where, c["false_next"])
        for t in pipe["tables"]:
            where = f"table {t['name']}"
            kinds = [k["match_type"] for k in t["key"]]
            for k in t["key"]:
                if k["match_type"] not in MATCH_TYPES:
                    self.p.add(where, f"BMv2 has no match type {k['match_type']!r}")
                if k["match_type"] != "valid":
                    self.width(where, k["target"])
            if kinds.count("lpm") > 1:
                self.p.add(where, "more than one lpm key")
            want = ("range" if "range" in kinds else "ternary" if "ternary" in kinds else
                    "lpm" if "lpm" in kinds else "exact")
            if t["match_type"] != want:
                self.p.add(where, f"match_type {t['match_type']!r} but its keys make it {want!r}")
            for aid, name in zip(t["action_ids"], t["actions"]):
                if aid not in self.actions or self.actions[aid]["name"] != name:
                    self.p.add(where, f"action id {aid} is not action {name!r}")
            for label, n in t["next_tables"].items():
                if label not in ("__HIT__", "__MISS__") and label not in names:
                    self.p.add(where, f"next_tables label {label!r} is no action")
                node(where, n)
            de = t.get("default_entry")
            if de is not None:
                if de["action_id"] not in t["action_ids"]:
                    self.p.add(where, "the default action is not one of the table's actions")
                elif len(de["action_data"]) != len(self.actions[de["action_id"]]["runtime_data"]):
                    self.p.add(where, "default action data does not match the action's parameters")
            for i, e in enumerate(t.get("entries", []) or []):
                self.entry(f"{where}, entry {i}", t, e)

    def entry(self, where, t, e):
        if len(e["match_key"]) != len(t["key"]):
            self.p.add(where, f"{len(e['match_key'])} key values for {len(t['key'])} keys")
            return
        for k, m in zip(t["key"], e["match_key"]):
            w = 1 if k["match_type"] == "valid" else self.width(where, k["target"])
            if w is None:
                return
            full = (1 << w) - 1
            mt = m["match_type"]
            if mt != ("exact" if k["match_type"] == "valid" else k["match_type"]):
                self.p.add(where, f"entry match type {mt!r} for a {k['match_type']!r} key")
            if mt == "exact" and _hx(m["key"]) > full:
                self.p.add(where, "exact value wider than the field")
            elif mt == "lpm" and not 0 <= m["prefix_length"] <= w:
                self.p.add(where, "prefix length out of range")
            elif mt == "ternary" and _hx(m["key"]) & ~_hx(m["mask"]):
                self.p.add(where, "ternary value has bits outside its mask")
            elif mt == "range" and _hx(m["start"]) > _hx(m["end"]):
                self.p.add(where, "range start above its end")
        if t["match_type"] in ("ternary", "range") and "priority" not in e:
            self.p.add(where, "entries of a ternary/range table need a priority")
        aid = e["action_entry"]["action_id"]
        if aid not in t["action_ids"]:
            self.p.add(where, f"action id {aid} is not one of the table's actions")
        elif len(e["action_entry"]["action_data"]) != len(self.actions[aid]["runtime_data"]):
            self.p.add(where, "action data does not match the action's parameters")


def check_bmv2(doc):
    """Problems BMv2 would have loading or running `doc` (an empty list when there are none)."""
    return Checker(doc).check()


def check_p4info(doc, info):
    """Problems the P4Runtime server would have translating requests named by `info` for `doc`."""
    from p4.config.v1 import p4info_pb2
    c = Checker(doc)
    p = Problems()
    tables = {t["name"]: t for pipe in doc["pipelines"] for t in pipe["tables"]}
    actions = {a["name"]: a for a in doc["actions"]}
    compat = {p4info_pb2.MatchField.EXACT: {"exact", "valid"}, p4info_pb2.MatchField.LPM: {"lpm"},
              p4info_pb2.MatchField.TERNARY: {"ternary"}, p4info_pb2.MatchField.RANGE: {"range"},
              p4info_pb2.MatchField.OPTIONAL: {"ternary"}}
    action_names = {a.preamble.id: a.preamble.name for a in info.actions}
    for a in info.actions:
        ja = actions.get(a.preamble.name)
        if ja is None:
            p.add(f"action {a.preamble.name}", "not in the JSON")
            continue
        if [(x.name, x.bitwidth) for x in a.params] != [(r["name"], r["bitwidth"]) for r in ja["runtime_data"]]:
            p.add(f"action {a.preamble.name}", "parameters differ from the JSON's runtime data")
    for t in info.tables:
        jt = tables.get(t.preamble.name)
        where = f"table {t.preamble.name}"
        if jt is None:
            p.add(where, "not in the JSON")
            continue
        if len(t.match_fields) != len(jt["key"]):
            p.add(where, f"{len(t.match_fields)} match fields, {len(jt['key'])} JSON keys")
            continue
        for mf, k in zip(t.match_fields, jt["key"]):
            if k["match_type"] not in compat[mf.match_type]:
                p.add(where, f"{mf.name}: P4Info {p4info_pb2.MatchField.MatchType.Name(mf.match_type)} "
                             f"but JSON {k['match_type']!r}")
            w = 1 if k["match_type"] == "valid" else c.width(where, k["target"])
            if k.get("mask"):
                w = bin(_hx(k["mask"])).count("1")
            if w != mf.bitwidth:
                p.add(where, f"{mf.name}: P4Info bitwidth {mf.bitwidth}, JSON {w}")
        for ref in t.action_refs:
            if action_names.get(ref.id) not in jt["actions"]:
                p.add(where, f"action {action_names.get(ref.id)!r} is not in the JSON table")
    registers = {r["name"]: r for r in doc["register_arrays"]}
    for r in info.registers:
        jr = registers.get(r.preamble.name)
        if jr is None or jr["size"] != r.size:
            p.add(f"register {r.preamble.name}", "missing or of another size in the JSON")
    counters = {x["name"]: x for x in doc["counter_arrays"]}
    for x in list(info.counters) + list(info.direct_counters):
        if x.preamble.name not in counters:
            p.add(f"counter {x.preamble.name}", "not in the JSON")
    return p + c.p
