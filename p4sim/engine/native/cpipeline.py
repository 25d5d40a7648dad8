"""Actions and control pipelines as C: one function per action, one per pipeline with a label
per node (tables, conditionals, action calls) and gotos between them.

A table node builds its lookup key (the key fields concatenated, first field most significant,
as p4sim.engine.tables does), asks the runtime for the entry (or the default entry on a miss),
counts the direct counter of a hit, calls the entry's action and goes to the next node its
action (or hit/miss) selects.  Trace lines match the Python engine's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import ir_pipeline
from ..ir_pipeline import MATCH_KINDS, inline_table, key_shifts, match_kind, next_node
from ..program import ActionInfo, Json, TableInfo
from .cexpr import ExprC, c_string
from .cstmt import Prims
from .errors import NativeUnsupported

if TYPE_CHECKING:
    from .cgen import ProgramC


@dataclass
class ParamSlot:
    offset: int   # in uint64 words
    width: int
    limbs: int    # 0: one word holds it; else this many words, least significant first


@dataclass
class KeySlot:
    name: str
    match_type: str
    width: int
    shift: int        # bit position in the concatenated key (from the least significant bit)
    range_index: int  # >= 0: checked on the side (ternary tables' range keys)


@dataclass
class TableSpec:
    """What the Python side needs to mirror entries into the C table."""
    index: int
    kind: int          # RT_TBL_NONE / EXACT / LPM / TERNARY
    kw: int
    keys: list[KeySlot]
    nranges: int
    argw: int


def action_params(action: ActionInfo) -> tuple[list[ParamSlot], int]:
    """Where each parameter sits in the action-data words, and how many words they take."""
    slots, off = [], 0
    for p in action.params:
        limbs = (p.width + 63) // 64 if p.width > 64 else 0
        slots.append(ParamSlot(off, p.width, limbs))
        off += max(1, limbs)
    return slots, off


def table_kind(info: TableInfo) -> int:
    """RT_TBL_NONE / EXACT / LPM / TERNARY: the C runtime's number for the table's match kind."""
    return MATCH_KINDS.index(match_kind(info))


class PipelineGen:
    def __init__(self, cg: ProgramC) -> None:
        self.cg = cg
        self.prog = cg.prog
        self.layout = cg.layout
        self.lines: list[str] = []
        self.specs: dict[str, TableSpec] = {}
        self.params = {aid: action_params(a) for aid, a in self.prog.actions.items()}
        self._action_json = {a["id"]: a for a in self.prog.json.get("actions", [])}

    def w(self, line: str) -> None:
        self.lines.append(line)

    # ---- actions ---------------------------------------------------------------------------
    def actions(self) -> None:
        for aid, a in self.prog.actions.items():
            slots, _ = self.params[aid]

            def param(i, slots=slots, name=a.name):
                if not 0 <= i < len(slots):
                    raise NativeUnsupported(f"action {name}: parameter {i} does not exist")
                s = slots[i]
                return (f"(p + {s.offset})" if s.limbs else f"p[{s.offset}]"), s.width, s.limbs

            prims = Prims(self.cg, f"action {a.name}", params=param)
            body = prims.body(self._action_json[aid].get("primitives", []))
            self.w(f"/* action {c_string(a.name)} */")
            self.w(f"static int A{aid}(rt_switch *sw, pstate *st, const uint64_t *p) {{")
            self.w("    (void)sw; (void)st; (void)p;")
            self.lines += body
            self.w("    return R_OK;")
            self.w("}")
        self._trace_entry()

    def _trace_entry(self):
        """trace_entry(): "Action entry is NAME - 0x1, 0x2" for an entry's action and data."""
        self.w("static void trace_entry(rt_switch *sw, int action, const uint64_t *p) {")
        self.w("    char b_[1024]; size_t o_ = 0; (void)p; b_[0] = 0;")
        self.w("    switch (action) {")
        for aid, a in self.prog.actions.items():
            slots, _ = self.params[aid]
            self.w(f"    case {aid}:")
            for i, s in enumerate(slots):
                sep = ", " if i else ""
                if s.limbs:
                    self.w(f"        o_ += rt_hex_words(b_ + o_, sizeof b_ - o_, {c_string(sep)}, p + {s.offset}, "
                           f"{s.limbs});")
                else:
                    self.w(f"        o_ += (size_t)snprintf(b_ + o_, sizeof b_ - o_, \"%s0x%llx\", {c_string(sep)}, "
                           f"(unsigned long long)p[{s.offset}]);")
                self.w("        if (o_ >= sizeof b_) o_ = sizeof b_ - 1;")
            self.w(f"        rt_trace(sw, \"Action entry is %s - %s\", {c_string(a.name)}, b_);")
            self.w("        return;")
        self.w("    default:")
        self.w("        rt_trace(sw, \"Action entry is (none) - \");")
        self.w("    }")
        self.w("}")

    # ---- tables ----------------------------------------------------------------------------
    def table_spec(self, info: TableInfo, index: int) -> TableSpec:
        ternary = match_kind(info) == "ternary"
        keys, nranges = [], 0
        for k, shift in zip(info.keys, key_shifts(info)):
            r = -1
            if ternary and k.match_type == "range":
                if k.width > 64:
                    raise NativeUnsupported(f"table {info.name}: range key {k.name} wider than 64 bits")
                r, nranges = nranges, nranges + 1
            keys.append(KeySlot(k.name, k.match_type, k.width, shift, r))
        argw = max([self.params[aid][1] for aid in info.action_ids] + [0])
        if info.default_entry is not None:
            argw = max(argw, self.params[info.default_entry.action_id][1])
        total = sum(k.width for k in info.keys)
        spec = TableSpec(index, table_kind(info), max(1, (total + 63) // 64), keys, nranges, argw)
        self.specs[info.name] = spec
        return spec

    def key_code(self, info: TableInfo, spec: TableSpec, x: ExprC) -> list[str]:
        """C lines filling k_[] (and rv_[] for range keys)."""
        out = [f"uint64_t k_[{spec.kw}] = {{0}};"]
        if spec.nranges:
            out.append(f"uint64_t rv_[{spec.nranges}];")
        for k, slot in zip(info.keys, spec.keys):
            if k.match_type == "valid" or (isinstance(k.target, tuple) and k.target[1] == "$valid$"):
                header = k.target if k.match_type == "valid" else k.target[0]
                hcode, _ = x.header({"type": "header", "value": header})
                value, wide = f"(uint64_t){hcode}.valid", False
            else:
                lv = x.lvalue({"type": "field", "value": list(k.target)})
                value, wide = x.pattern(lv), lv.ref.width > 64
            if k.mask is not None:
                if wide:
                    value = f"w_and({value}, {x.wconst(k.mask)})"
                else:
                    value = f"({value} & {k.mask & ((1 << 64) - 1):#x}ULL)"
            if slot.range_index >= 0:
                out.append(f"rv_[{slot.range_index}] = {value};")
                continue
            if not wide:
                out += self._place(value, slot.shift, slot.width)
            else:
                out.append(f"{{ wide_t kv_ = {value};")
                for j in range((slot.width + 63) // 64):
                    cw = min(64, slot.width - 64 * j)
                    out += ["  " + line for line in self._place(f"kv_.l[{j}]", slot.shift + 64 * j, cw)]
                out.append("}")
        return out

    @staticmethod
    def _place(value, shift, width):
        word, b = divmod(shift, 64)
        out = [f"k_[{word}] |= {value}{f' << {b}' if b else ''};"]
        if b and b + width > 64:
            out.append(f"k_[{word + 1}] |= {value} >> {64 - b};")
        return out

    # ---- pipelines -------------------------------------------------------------------------
    def pipeline(self, pipe_name: str) -> None:
        prog = self.prog
        graph = ir_pipeline.pipeline(prog, pipe_name, NativeUnsupported)
        self.w(f"static int run_{pipe_name}(rt_switch *sw, pstate *st) {{")
        self.w("    int r_ = R_OK; (void)r_;")
        self.w(f"    RT_TRACE(sw, \"Pipeline '%s': start\", {c_string(pipe_name)});")
        if graph is None:
            self.w("    goto P_end;")
        else:
            labels = {n: f"N{i}" for i, n in enumerate(graph.nodes)}

            def go(name):
                return "goto P_end;" if name is None else f"goto {labels[name]};"

            self.w(f"    {go(graph.init)}")
            for name, node in graph.nodes.items():
                j = node.json
                self.w(f"{labels[name]}: /* {node.kind} {name} */")
                if node.kind == "cond":
                    self.conditional(name, j, go)
                elif node.kind == "call":
                    self.w(f"    r_ = A{j['action_id']}(sw, st, NULL); if (r_) goto P_ret; {go(j.get('next_node'))}")
                else:
                    self.table(prog.tables[name], go)
        self.w("P_ret:")
        self.w(f"    RT_TRACE(sw, \"Pipeline '%s': end\", {c_string(pipe_name)});")
        self.w("    return r_ == R_EXIT ? R_OK : r_;")
        self.w("P_end:")
        self.w(f"    RT_TRACE(sw, \"Pipeline '%s': end\", {c_string(pipe_name)});")
        self.w("    return R_OK;")
        self.w("}")

    def conditional(self, name: str, j: Json, go: Callable[[str | None], str]) -> None:
        x = ExprC(self.cg, f"condition {name}")
        cond = x.cond(j["expression"])
        frag = (j.get("source_info") or {}).get("source_fragment")
        label = f"Condition '{name}'" + (f" ({frag})" if frag else "")
        self.w(f"    {{ int c_ = {cond};")
        if x.uses_index:
            self.w("      if (UNLIKELY(sw->abort)) return R_DROP;")
        self.w(f"      RT_TRACE(sw, \"%s is %s\", {c_string(label)}, c_ ? \"true\" : \"false\");")
        self.w(f"      if (c_) {go(j.get('true_next'))} {go(j.get('false_next'))} }}")

    def table(self, info: TableInfo, go: Callable[[str | None], str]) -> None:
        spec = self.specs[info.name]
        x = ExprC(self.cg, f"table {info.name}")
        tv = f"&sw->tables[{spec.index}]"
        self.w("    {")
        if info.keys:
            for line in self.key_code(info, spec, x):
                self.w("    " + line)
            if x.uses_index:
                self.w("    if (UNLIKELY(sw->abort)) return R_DROP;")
            self.w(f"    const rt_table *t_ = {tv};")
            self.w(f"    const rt_entry *e_ = rt_lookup(t_, k_, {'rv_' if spec.nranges else 'NULL'});")
        else:
            self.w(f"    const rt_table *t_ = {tv};")
            self.w("    const rt_entry *e_ = t_->def;")
        tname = c_string(info.name)
        self.w("    if (UNLIKELY(sw->trace_on)) {")
        self.w(f"        rt_trace(sw, \"Applying table '%s'\", {tname});")
        if not inline_table(self.prog, info):
            self.w("        if (e_ == t_->def)")
            self.w(f"            rt_trace(sw, \"Table '%s': miss\", {tname});")
            self.w("        else")
            self.w(f"            rt_trace(sw, \"Table '%s': hit with handle %d\", {tname}, e_->handle);")
        self.w("        trace_entry(sw, e_->action, e_->args);")
        self.w("    }")
        if info.direct_counter:
            plen = x.as_u64(x.read(x.lvalue({"type": "field", "value": ["standard_metadata", "packet_length"]})))
            self.w(f"    if (e_ != t_->def) {{ ((rt_entry *)e_)->packets++; ((rt_entry *)e_)->bytes += {plen}; }}")
        hitmiss = "__HIT__" in info.next_tables or "__MISS__" in info.next_tables
        self.w("    switch (e_->action) {")
        action_ids = list(info.action_ids) + ([info.default_entry.action_id] if info.default_entry else [])
        for aid in dict.fromkeys(action_ids):
            a = self.prog.actions[aid]
            self.w(f"    case {aid}:")
            self.w(f"        r_ = A{aid}(sw, st, e_->args); if (r_) goto P_ret;")
            if hitmiss:
                self.w(f"        if (e_ != t_->def) {go(next_node(info, a.name, True))}")
                self.w(f"        {go(next_node(info, a.name, False))}")
            else:
                self.w(f"        {go(next_node(info, a.name, True))}")
        self.w("    default:")
        if hitmiss:
            self.w(f"        if (e_ != t_->def) {go(next_node(info, None, True))}")
        self.w(f"        {go(next_node(info, None, False))}")
        self.w("    }")
        self.w("    }")
