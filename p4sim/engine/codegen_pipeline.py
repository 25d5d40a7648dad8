"""Emitting the ingress and egress pipelines: tables, conditionals and the next-node graph."""
from .actions import PrimitiveGen
from .codegen_emitter import Emitter
from .exprs import ExprGen
from .ir_pipeline import inline_table, key_shifts, next_node, pipeline
from .program import TableInfo


class PipelineEmitter(Emitter):
    """`run_ingress(f)` / `run_egress(f)`: nodes inlined into their only predecessor where possible."""

    # ---- control pipelines -------------------------------------------------------------------
    # nodes inlined along one path of one function: bounds both the nesting of ifs (Python allows
    # ~100 levels) and the generator's recursion
    MAX_INLINE_DEPTH = 40

    def emit_pipeline(self, pipe_name: str) -> None:
        """One function per control-flow node that needs one; every other node is inlined into its
        only predecessor, so straight-line code and if/else chains run without dispatch."""
        prog = self.prog
        self.w("NODES = globals().setdefault('NODES', {})")
        graph = pipeline(prog, pipe_name)
        if graph is None:
            self.w(f"def run_{pipe_name}(f):\n    pass")
            return
        nodes = graph.nodes
        names = {n: self.ident("N_", n) for n in nodes}
        # fixed successors (known at compile time) and dynamic ones (chosen by a table entry)
        fixed: dict[str, list[str | None]] = {}
        dynamic: set[str] = set()
        for name, node in nodes.items():
            j = node.json
            if node.kind == "cond":
                fixed[name] = [j.get("true_next"), j.get("false_next")]
            elif node.kind == "call":
                fixed[name] = [j.get("next_node")]
            else:
                info = self.tables[name].info
                if inline_table(prog, info):
                    assert info.default_entry is not None   # inline_table: the default entry runs
                    fixed[name] = [next_node(info, info.default_entry.action, hit=False)]
                else:
                    fixed[name] = []
                    dynamic.update(n for n in [*info.next_tables.values(), info.base_default_next]
                                   if n is not None)
        indegree: dict[str, int] = {}
        for succs in fixed.values():
            for sname in succs:
                if sname is not None:
                    indegree[sname] = indegree.get(sname, 0) + 1
        init = graph.init
        need = {n for n in nodes if indegree.get(n, 0) != 1} | dynamic
        if init is not None:
            need.add(init)
        queue = sorted(need)
        done = set()
        while queue:
            name = queue.pop()
            if name in done:
                continue
            done.add(name)
            self.w(f"def {names[name]}(f):")
            lines: list[str] = []
            forced: list[str] = []
            self._node_body(name, nodes, names, need, 4, 0, lines, forced)
            for line in lines:
                self.w(line)
            self.w(f"NODES[{name!r}] = {names[name]}")
            for fname in forced:
                need.add(fname)
                queue.append(fname)
        self.w(f"def run_{pipe_name}(f):")
        if self.traced:
            self.w(f"    TR(\"Pipeline '{pipe_name}': start\")")
        self.w(f"    node = {names[init] if init else 'None'}")
        self.w("    while node is not None:")
        self.w("        node = node(f)")
        if self.traced:
            self.w(f"    TR(\"Pipeline '{pipe_name}': end\")")

    def _goto(self, target, nodes, names, need, ind, depth, out, forced):
        pad = " " * ind
        if target is None:
            out.append(f"{pad}return None")
        elif target in need or depth >= self.MAX_INLINE_DEPTH:
            if target not in need:
                forced.append(target)
                need.add(target)
            out.append(f"{pad}return {names[target]}")
        else:
            self._node_body(target, nodes, names, need, ind, depth, out, forced)

    def _node_body(self, name, nodes, names, need, ind, depth, out, forced):
        prog = self.prog
        tr = self.traced
        pad = " " * ind
        kind, j = nodes[name].kind, nodes[name].json
        if kind == "cond":
            cond = ExprGen(prog, where=f"condition {name}").cond(j["expression"])
            if tr:
                frag = (j.get("source_info") or {}).get("source_fragment")
                label = f"Condition '{name}'" + (f" ({frag})" if frag else "")
                out.append(f"{pad}r = {cond}")
                out.append(f"{pad}TR({label!r} + (' is true' if r else ' is false'))")
                cond = "r"
            out.append(f"{pad}if {cond}:")
            self._goto(j.get("true_next"), nodes, names, need, ind + 4, depth + 1, out, forced)
            self._goto(j.get("false_next"), nodes, names, need, ind, depth + 1, out, forced)
            return
        if kind == "call":
            out.append(f"{pad}if A_{j['action_id']}(f, ()): return None")
            self._goto(j.get("next_node"), nodes, names, need, ind, depth + 1, out, forced)
            return
        table = self.tables[name]
        info = table.info
        if inline_table(prog, info):
            de = info.default_entry
            assert de is not None                   # inline_table: the default entry runs
            if tr:
                out.append(f"{pad}TR(\"Applying table '{info.name}'\")")
                args = ", ".join(hex(a) for a in de.args)
                out.append(f"{pad}TR({f'Action entry is {de.action} - {args}'!r})")
            def data(i: int, a: tuple[int, ...] = de.args) -> str:     # this default entry's action data
                return str(a[i])
            gen = PrimitiveGen(prog, data, f"action {de.action}", "return None", tr)
            out.extend(gen.body(self.prog_action_json(de.action_id).get("primitives", []), ind))
            self._goto(next_node(info, de.action, hit=False), nodes, names, need, ind, depth + 1, out, forced)
            return
        tv = f"T_{info.id}"
        out.append(f"{pad}e = {tv}.lookup({self.key_expr(info)})" if info.keys else f"{pad}e = {tv}.default")
        if tr:
            out.append(f"{pad}TR(\"Applying table '{info.name}'\")")
            out.append(f"{pad}TR({tv}.describe_hit(e))")
        if info.direct_counter:
            plen = prog.fields[("standard_metadata", "packet_length")].slot
            out.append(f"{pad}c = e.counter")
            out.append(f"{pad}if c is not None: c[0] += 1; c[1] += f[{plen}]")
        out.append(f"{pad}if e.fn(f, e.data): return None")
        out.append(f"{pad}return e.next")

    def key_expr(self, info: TableInfo) -> str:
        x = ExprGen(self.prog, where=f"table {info.name}")
        terms = []
        for k, shift in zip(info.keys, key_shifts(info)):
            if k.match_type == "valid":
                code = f"f[{self.prog.headers[k.target].vslot}]"
            else:
                code = x.pattern(x.field_info(*k.target))
            if k.mask is not None:
                code = f"({code} & {k.mask})"
            terms.append(f"({code} << {shift})" if shift else code)
        return " | ".join(terms)
