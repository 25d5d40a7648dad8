"""BMv2 JSON backend: assembles header types, parser, pipelines, deparser, externs and checksums
into the document described by behavioral-model's docs/JSON_format.md."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import ast as A
from .bmv2_actions import PrimitiveLowering
from .bmv2_expr import ExprLowering
from .bmv2_parser import ParserBuilder, deparser_order
from .bmv2_pipeline import PipelineBuilder
from .bmv2_storage import Json, Storage
from .diagnostics import CompileError, Pos, Unsupported
from .naming import UniqueNames, full_name
from .types import EnumT, Type

if TYPE_CHECKING:
    from .checker import Program

FIELD_ALIASES = [
    ["queueing_metadata.enq_timestamp", ["standard_metadata", "enq_timestamp"]],
    ["queueing_metadata.enq_qdepth", ["standard_metadata", "enq_qdepth"]],
    ["queueing_metadata.deq_timedelta", ["standard_metadata", "deq_timedelta"]],
    ["queueing_metadata.deq_qdepth", ["standard_metadata", "deq_qdepth"]],
    ["intrinsic_metadata.ingress_global_timestamp", ["standard_metadata", "ingress_global_timestamp"]],
    ["intrinsic_metadata.egress_global_timestamp", ["standard_metadata", "egress_global_timestamp"]],
    ["intrinsic_metadata.mcast_grp", ["standard_metadata", "mcast_grp"]],
    ["intrinsic_metadata.egress_rid", ["standard_metadata", "egress_rid"]],
    ["intrinsic_metadata.priority", ["standard_metadata", "priority"]],
]


class Backend:
    def __init__(self, prog: Program, source_path: str) -> None:
        self.prog = prog
        self.source_path = source_path
        self.prog_base = os.path.splitext(os.path.basename(source_path))[0].replace("-", "_").replace(".", "_")
        self.storage = Storage(prog)
        self.objects: dict[int, str] = {}     # id(extern instance) -> its BMv2 name
        self.actions: list[Json] = []
        self._action_names = UniqueNames()
        self._table_names = UniqueNames()
        self._table_actions: dict[int, int] = {}  # id(ActionDecl) -> action id
        self._ids: dict[str, int] = {}
        self.calculations: list[Json] = []
        self._calc_names = UniqueNames()
        # @field_list index (or ("empty", id) for a clone's empty list) -> the field list
        self.field_lists: dict[int | tuple[str, int], Json] = {}
        self.learn_lists: list[Json] = []
        # (TableDecl, control, full name) for P4Info
        self.table_info: list[tuple[A.TableDecl, A.ControlDecl, str]] = []
        self.direct_called: set[int] = set()     # ids of actions called directly from apply blocks
        # (name, learn list id, [(field name, width)], the digest's data) for P4Info
        self.digests: list[tuple[str, int, list[tuple[str, int]], A.Expr]] = []
        self.table_action_ids: set[int] = set()
        for b in prog.blocks("ingress", "egress"):
            for t in b.tables:
                for r in t.action_list:
                    self.table_action_ids.add(id(r.decl))
                    self._action_names.add(self.action_full_name(r.decl))

    # ---- small registries
    def next_id(self, kind: str) -> int:
        v = self._ids.get(kind, 0)
        self._ids[kind] = v + 1
        return v

    def src(self, pos: Pos | None, fragment: str | None) -> Json | None:
        if pos is None:
            return None
        info = {"filename": pos.file, "line": pos.line, "column": pos.col}
        if fragment:
            info["source_fragment"] = fragment
        return info

    def unique_action_name(self, base: str) -> str:
        return self._action_names.take(base)

    def unique_table_name(self, base: str) -> str:
        return self._table_names.take(base)

    def full_name(self, decl: A.Node, block: A.Node | None) -> str:
        return full_name(decl, block)

    def action_full_name(self, decl: A.ActionDecl) -> str:
        return full_name(decl, getattr(decl, "control", None))

    def object_name(self, inst_expr: A.Expr) -> str:
        if not isinstance(inst_expr, A.Name):
            raise Unsupported("an extern instance that is not named directly", inst_expr.pos)
        s = inst_expr.ref
        return full_name(s.decl, s.owner)

    def add_action(self, name: str, runtime_data: list[Json], prims: list[Json], pos: Pos | None) -> int:
        aid = len(self.actions)
        self._action_names.add(name)
        a = {"name": name, "id": aid, "runtime_data": runtime_data, "primitives": prims}
        if pos is not None:
            a["source_info"] = self.src(pos, name.split(".")[-1])
        self.actions.append(a)
        return aid

    def table_action(self, decl: A.ActionDecl) -> int:
        """The JSON action for an action used by tables (runtime data = directionless params)."""
        key = id(decl)
        if key in self._table_actions:
            return self._table_actions[key]
        xl = ExprLowering(self.storage, self.objects)
        rd = []
        for i, p in enumerate(decl.params):
            w = 1 if p.ptype.__class__.__name__ == "BoolT" else getattr(p.ptype, "width", None)
            if w is None and isinstance(p.ptype, EnumT) and p.ptype.underlying is not None:
                w = p.ptype.underlying.width
            rd.append({"name": p.name, "bitwidth": w})
            xl.subst[id(p)] = ("rt", i)
        prims = PrimitiveLowering(self, xl).lower([decl.body])
        aid = self.add_action(self.action_full_name(decl), rd, prims, decl.pos)
        self._table_actions[key] = aid
        return aid

    def calculation(self, algo: str, inputs: list[Json]) -> str:
        """A new calculation (one per hash call and per checksum, as p4c emits them)."""
        n = self._calc_names.take("calc")
        self.calculations.append({"name": n, "id": len(self.calculations), "algo": algo, "input": inputs})
        return n

    def field_list_id(self, index: int, pos: Pos | None) -> int:
        """The id of the field list of the metadata fields annotated @field_list(index)."""
        if index not in self.field_lists:
            locs = self.storage.field_lists.get(index, [])
            self.field_lists[index] = {"id": self._next_field_list_id(), "name": f"field_list{index}",
                                       "elements": [l.json() for l in locs]}
        return self.field_lists[index]["id"]

    def empty_field_list_id(self) -> int:
        """A new empty field list, for a clone that preserves nothing: BMv2 looks the id up for
        every clone (id 0 does not exist and aborts it), so p4c gives each call site one."""
        n = sum(1 for k in self.field_lists if isinstance(k, tuple))
        name = "fl" if n == 0 else f"fl_{n - 1}"
        fid = self._next_field_list_id()
        self.field_lists[("empty", fid)] = {"id": fid, "name": name, "elements": []}
        return fid

    def _next_field_list_id(self) -> int:
        return len(self.field_lists) + 1

    def learn_list(self, data: A.Expr, elems: list[tuple[str | None, Json, Type | None]]) -> int:
        lid = len(self.learn_lists) + 1
        st = getattr(data, "struct_type", None) or data.type
        tname = st.name if hasattr(st, "name") else f"digest_{lid}"
        if hasattr(st, "fields") and isinstance(data, A.ListExpr):
            elems = [(n, j, t) for (n, _, _), (_, j, t) in zip(st.fields, elems)]
        for ll in self.learn_lists:
            if ll["name"] == tname:
                return ll["id"]
        self.learn_lists.append({"id": lid, "name": tname, "source_info": self.src(data.pos, tname),
                                 "elements": [e[1] for e in elems]})
        fields = []
        for i, (n, _j, t) in enumerate(elems):
            fields.append((n or f"f{i}", getattr(t, "width", 1)))
        self.digests.append((tname, lid, fields, data))
        return lid

    # ---- checksums
    def checksums(self, control: A.ControlDecl, verify: bool) -> list[Json]:
        out = []
        xl = ExprLowering(self.storage, self.objects)
        pl = PrimitiveLowering(self, xl)
        want = "verify_checksum" if verify else "update_checksum"
        allowed = {("extern", want), ("extern", want + "_with_payload")}

        def walk(stmts):
            for s in stmts:
                if isinstance(s, A.Block):
                    walk(s.stmts)
                    continue
                if isinstance(s, (A.Empty, A.ConstDecl)):
                    continue
                if not (isinstance(s, A.CallStmt) and s.call.kind in allowed):
                    raise Unsupported(f"statements other than {want}() and {want}_with_payload() in the "
                                      f"{'verifyChecksum' if verify else 'computeChecksum'} control", s.pos)
                a = [x.expr for x in s.call.args]
                tmp: list[dict] = []
                inputs = pl.field_list(a[1], tmp)
                if tmp:
                    raise Unsupported("expressions in a checksum field list (use fields and constants)",
                                      a[1].pos)
                if s.call.kind[1].endswith("_with_payload"):
                    inputs.append({"type": "payload", "value": None})   # the bytes after the headers
                calc = self.calculation("csum16", inputs)
                target = xl.scalar_loc(a[2])
                cond = None if (isinstance(a[0], A.BoolLit) and a[0].value) else xl.bool(a[0])
                out.append({"target": [target.header, target.field], "type": "generic",
                            "calculation": calc, "verify": verify, "update": not verify, "if_cond": cond,
                            "source_info": self.src(s.pos, s.call.kind[1])})
        walk(control.body.stmts)
        return out

    # ---- assembly
    def build(self) -> dict:
        prog = self.prog
        self.storage.bind_program()
        for block in prog.blocks():
            for inst in block.instances:
                self.objects[id(inst)] = full_name(inst, block)
        parser = ParserBuilder(self, prog.parser).build()
        ingress = PipelineBuilder(self, prog.ingress, "ingress").build()
        egress = PipelineBuilder(self, prog.egress, "egress").build()
        for ctl, what in ((prog.verify, "verifyChecksum"), (prog.compute, "computeChecksum"),
                          (prog.deparser, "deparser")):
            if ctl.tables or ctl.instances or ctl.subcontrols:
                raise Unsupported(f"tables, extern instances or sub-controls in the {what} control", ctl.pos)
        checksums = self.checksums(prog.compute, False) + self.checksums(prog.verify, True)
        for i, c in enumerate(checksums):
            name = "cksum" if i == 0 else f"cksum_{i - 1}"
            c.update({"name": name, "id": i})
        checksums = [{k: c[k] for k in ("name", "id", "source_info", "target", "type", "calculation",
                                        "verify", "update", "if_cond")} for c in checksums]
        order = deparser_order(self, prog.deparser)

        st = self.storage
        header_types = [{"name": "scalars_0", "id": 0, "fields": st.scalars_json()}]
        for name, fields in st.header_types:
            header_types.append({"name": name, "id": len(header_types), "fields": fields})
        headers = [{"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True, "pi_omit": True}]
        for name, htype, meta in st.headers:
            headers.append({"name": name, "id": len(headers), "header_type": htype, "metadata": meta,
                            "pi_omit": True})
        hid = {h["name"]: h["id"] for h in headers}
        stacks = [{"name": n, "id": i, "header_type": t, "size": len(e), "header_ids": [hid[x] for x in e]}
                  for i, (n, t, e) in enumerate(st.stacks)]
        counters: list[dict] = []
        registers: list[dict] = []
        for block in prog.blocks("ingress", "egress", "parser", "verify", "compute"):
            for inst in block.instances:
                name = full_name(inst, block)
                si = self.src(inst.pos, inst.name)
                if inst.etype.name == "register":
                    registers.append({"name": name, "id": len(registers), "source_info": si,
                                      "size": inst.size, "bitwidth": inst.etype.args[0].width})
                elif inst.etype.name == "counter":
                    counters.append({"name": name, "id": len(counters), "source_info": si,
                                     "size": inst.size, "is_direct": False})
                elif inst.etype.name == "direct_counter":
                    if inst.bound_table is None:
                        raise CompileError(f"direct_counter '{inst.name}' is not attached to any table "
                                           f"(add 'counters = {inst.name};' to a table)", inst.pos)
                    counters.append({"name": name, "id": len(counters), "source_info": si,
                                     "is_direct": True,
                                     "binding": full_name(inst.bound_table, inst.bound_table.control)})
        errors = [[n, i] for i, n in enumerate(prog.errors)]
        return {
            "header_types": header_types,
            "headers": headers,
            "header_stacks": stacks,
            "header_union_types": [],
            "header_unions": [],
            "header_union_stacks": [],
            "field_lists": sorted(self.field_lists.values(), key=lambda f: f["id"]),
            "errors": errors,
            "enums": [],
            "parsers": [parser],
            "parse_vsets": [],
            "deparsers": [{"name": "deparser", "id": 0, "source_info": self.src(prog.deparser.pos, prog.deparser.name),
                           "order": order, "primitives": []}],
            "meter_arrays": [],
            "counter_arrays": counters,
            "register_arrays": registers,
            "calculations": self.calculations,
            "learn_lists": self.learn_lists,
            "actions": self.actions,
            "pipelines": [ingress, egress],
            "checksums": checksums,
            "force_arith": [],
            "extern_instances": [],
            "field_aliases": FIELD_ALIASES,
            "program": self.source_path,
            "__meta__": {"version": [2, 23], "compiler": "p4sim-compile (p4reduce)"},
        }


def to_json(prog: Program, source_path: str) -> tuple[dict, Backend]:
    b = Backend(prog, source_path)
    doc = b.build()
    return doc, b
