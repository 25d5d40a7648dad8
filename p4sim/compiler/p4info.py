"""P4Info backend: the p4.config.v1.P4Info p4c writes for a v1model program.

Tables, actions (those the control plane can see: in a table, or called directly from an apply
block), counters, direct counters, registers, digests and @controller_header packet metadata,
named and numbered as p4c does (see naming.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from . import ast as A
from .annotations import anno, anno_str
from .bmv2_pipeline import expr_text
from .naming import IdAllocator, aliases, full_name
from .types import BoolT, EnumT, ErrorT

if TYPE_CHECKING:
    from .bmv2 import Backend
    from .checker import Program

_MATCH = {"exact": p4info_pb2.MatchField.EXACT, "lpm": p4info_pb2.MatchField.LPM,
          "ternary": p4info_pb2.MatchField.TERNARY, "range": p4info_pb2.MatchField.RANGE,
          "optional": p4info_pb2.MatchField.OPTIONAL}
_UNIT = {"packets": p4info_pb2.CounterSpec.PACKETS, "bytes": p4info_pb2.CounterSpec.BYTES,
         "packets_and_bytes": p4info_pb2.CounterSpec.BOTH}
_HIDDEN_ANNOS = {"name", "id", "defaultonly", "tableonly", "hidden", "field_list", "noWarn_"}


def _width(t):
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    return getattr(t, "width", 0)


def _anno_strings(annos):
    out = []
    for a in annos or ():
        if a.name in _HIDDEN_ANNOS:
            continue
        args = []
        for x in a.args:
            if isinstance(x, A.StrLit):
                args.append('"' + x.value.replace('"', '\\"') + '"')
            elif isinstance(x, A.IntLit):
                args.append(str(x.value))
            else:
                args.append("?")
        out.append(f"@{a.name}" + (f"({', '.join(args)})" if a.args else ""))
    return out


def _ser_enum(info, t):
    """Describe a serializable enum in type_info (p4c does for enums in action data and keys)."""
    if t.name in info.type_info.serializable_enums:
        return
    e = info.type_info.serializable_enums[t.name]
    w = t.underlying.width
    e.underlying_type.bitwidth = w
    for m in t.members:
        mm = e.members.add()
        mm.name = m
        mm.value = (t.values[m] & ((1 << w) - 1)).to_bytes((w + 7) // 8, "big")


def build(prog: Program, backend: Backend) -> p4info_pb2.P4Info:
    """Build the P4Info message from the checked program and the BMv2 backend's results."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    ids = IdAllocator()
    blocks = list(prog.blocks())

    # which actions the control plane sees
    actions = []
    seen = set()

    def want_action(decl):
        if id(decl) not in seen:
            seen.add(id(decl))
            actions.append(decl)
    table_info = sorted(backend.table_info, key=lambda x: (x[0].pos.line, x[0].pos.col) if x[0].pos else (0, 0))
    in_tables = set()
    for t, _ctl, _name in table_info:
        for r in t.action_list:
            want_action(r.decl)
            in_tables.add(id(r.decl))
    for block in blocks:
        for a in getattr(block, "actions", []):
            if id(a) in backend.direct_called:
                want_action(a)

    main_file = prog.main.pos.file if prog.main is not None and prog.main.pos is not None else None
    actions.sort(key=lambda a: (a.pos.file != main_file, a.pos.line, a.pos.col)
                 if a.pos is not None else (True, 0, 0))
    actions.sort(key=lambda a: a.pos is None or a.pos.file == main_file)
    # names first (aliases are computed over all of them)
    named: list[tuple[str, str, Any]] = []     # (kind, name, its declaration: a node, a HeaderT or None)
    for t, _ctl, name in table_info:
        named.append(("table", name, t))
    for a in actions:
        named.append(("action", full_name(a, getattr(a, "control", None)), a))
    instances = []
    for block in blocks:
        for inst in getattr(block, "instances", []):
            kind = {"register": "register", "counter": "counter", "direct_counter": "direct_counter"}[inst.etype.name]
            named.append((kind, full_name(inst, block), inst))
            instances.append((kind, full_name(inst, block), inst))
    ctrl_headers = [t for t in prog.header_types if anno(t.annos, "controller_header")]
    for h in ctrl_headers:
        named.append(("controller_header", anno_str(h.annos, "controller_header") or h.name, h))
    for dname, _lid, _fields, _data in backend.digests:
        named.append(("digest", dname, None))
    alias = aliases([n for _, n, _ in named])
    # @id annotations are reserved before hashed ids are handed out
    for kind, name, decl in named:
        if decl is not None and anno(getattr(decl, "annos", None), "id"):
            ids.assign(kind, name, decl)
    for kind, name, decl in named:
        ids.assign(kind, name, decl)

    def preamble(msg, kind, name, decl):
        msg.preamble.id = ids.assign(kind, name, decl)
        msg.preamble.name = name
        msg.preamble.alias = alias.get(name, name)
        for s in _anno_strings(getattr(decl, "annos", None)):
            msg.preamble.annotations.append(s)

    aid = {}
    for a in actions:
        aid[id(a)] = ids.assign("action", full_name(a, getattr(a, "control", None)), a)
    for t, ctl, name in table_info:
        pt = info.tables.add()
        preamble(pt, "table", name, t)
        for i, k in enumerate(t.keys, 1):
            mf = pt.match_fields.add()
            mf.id = i
            mf.name = anno_str(k.annos, "name") or expr_text(k.expr)
            mf.bitwidth = 1 if isinstance(k.expr, A.Call) else _width(k.expr.type)
            if isinstance(k.expr.type, ErrorT):
                mf.bitwidth = 32
            mf.match_type = _MATCH[k.match_kind]
            if isinstance(k.expr.type, EnumT) and k.expr.type.underlying is not None:
                mf.type_name.name = k.expr.type.name
                _ser_enum(info, k.expr.type)
        for r in t.action_list:
            ar = pt.action_refs.add()
            ar.id = aid[id(r.decl)]
            if anno(r.annos, "defaultonly"):
                ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
            elif anno(r.annos, "tableonly"):
                ar.scope = p4info_pb2.ActionRef.TABLE_ONLY
            for s in _anno_strings(r.annos):
                ar.annotations.append(s)
        d = t.default
        assert d is not None        # the checker makes NoAction the default when none is given
        if t.default_const:
            pt.const_default_action_id = aid[id(d.kind[1])]
        pt.initial_default_action.action_id = aid[id(d.kind[1])]
        for i, x in enumerate(d.args, 1):
            arg = pt.initial_default_action.arguments.add()
            arg.param_id = i
            if isinstance(x.expr, A.TypeMember):
                v = x.expr.ref
            else:
                assert isinstance(x.expr, (A.IntLit, A.BoolLit))    # action data is constant (checked)
                v = int(x.expr.value)
            w = _width(x.expr.type)
            arg.value = (v & ((1 << w) - 1)).to_bytes(max(1, (w + 7) // 8), "big")
        if t.counters is not None:
            pt.direct_resource_ids.append(ids.assign("direct_counter", full_name(t.counters, ctl), t.counters))
        pt.size = t.size or 1024
        if t.entries is not None:
            pt.is_const_table = True
            pt.has_initial_entries = True
    for a in actions:
        pa = info.actions.add()
        preamble(pa, "action", full_name(a, getattr(a, "control", None)), a)
        # an action only called directly from apply blocks has its arguments bound (as in p4c)
        for i, p in enumerate(a.params if id(a) in in_tables else (), 1):
            pp = pa.params.add()
            pp.id = i
            pp.name = p.name
            pp.bitwidth = _width(p.ptype)
            if isinstance(p.ptype, EnumT) and p.ptype.underlying is not None:
                pp.type_name.name = p.ptype.name
                _ser_enum(info, p.ptype)
            for s in _anno_strings(p.annos):
                pp.annotations.append(s)
    for kind, name, inst in instances:
        if kind == "counter":
            c = info.counters.add()
            preamble(c, kind, name, inst)
            c.spec.unit = _UNIT[inst.unit]
            c.size = inst.size
        elif kind == "direct_counter":
            c = info.direct_counters.add()
            preamble(c, kind, name, inst)
            c.spec.unit = _UNIT[inst.unit]
            if inst.bound_table is not None:
                tname = full_name(inst.bound_table, inst.bound_table.control)
                c.direct_table_id = ids.assign("table", tname, inst.bound_table)
        else:
            r = info.registers.add()
            preamble(r, kind, name, inst)
            vt = inst.etype.args[0]
            if vt.signed:
                r.type_spec.bitstring.int.bitwidth = vt.width
            else:
                r.type_spec.bitstring.bit.bitwidth = vt.width
            r.size = inst.size
    for h in ctrl_headers:
        m = info.controller_packet_metadata.add()
        name = anno_str(h.annos, "controller_header") or h.name
        m.preamble.id = ids.assign("controller_header", name, h)
        m.preamble.name = name
        m.preamble.alias = alias.get(name, name)
        for s in _anno_strings(h.annos):
            if not s.startswith("@controller_header"):
                m.preamble.annotations.append(s)
        for i, (fname, ft, fannos) in enumerate(h.fields, 1):
            md = m.metadata.add()
            md.id = i
            md.name = fname
            md.bitwidth = _width(ft)
            for s in _anno_strings(fannos):
                md.annotations.append(s)
    for dname, _lid, fields, data in backend.digests:
        dg = info.digests.add()
        dg.preamble.id = ids.assign("digest", dname)
        dg.preamble.name = dname
        dg.preamble.alias = alias.get(dname, dname)
        if hasattr(getattr(data, "struct_type", None) or data.type, "name"):
            dg.type_spec.struct.name = dname
            st = info.type_info.structs[dname]
            for fname, w in fields:
                m = st.members.add()
                m.name = fname
                m.type_spec.bitstring.bit.bitwidth = w
        else:
            tup = dg.type_spec.tuple
            for _fname, w in fields:
                tup.members.add().bitstring.bit.bitwidth = w
    info.type_info.SetInParent()
    return info


def serialize(info: p4info_pb2.P4Info, path: str) -> bytes | None:
    """Bytes or text for ``path``, with the format chosen by extension as p4c does."""
    if path.endswith(".bin"):
        return info.SerializeToString()
    if path.endswith(".json"):
        return json_format.MessageToJson(info, preserving_proto_field_name=False).encode() + b"\n"
    if path.endswith(".txt") or path.endswith(".txtpb"):
        head = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
        return (head + text_format.MessageToString(info)).encode()
    return None
