"""Where P4 values live in BMv2: header instances, header stacks and the 'scalars' metadata header.

v1model passes the same headers/metadata/standard_metadata to every block, so parameters of the
parser and the controls map to the same storage by position. Locals get fresh scalar fields (or a
fresh metadata-free header instance for header-typed locals).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from . import ast as A
from .diagnostics import CompileError, Pos, Unsupported
from .naming import UniqueNames
from .types import BitsT, BoolT, EnumT, ErrorT, HeaderT, StackT, StructT, Type, width_of

if TYPE_CHECKING:
    from .checker import Program

Json: TypeAlias = dict[str, Any]    # one object of the BMv2 JSON document


class HdrLoc:
    def __init__(self, name: str, htype: HeaderT) -> None:
        self.name, self.htype = name, htype


class StackLoc:
    def __init__(self, name: str, stype: StackT, elems: list[HdrLoc]) -> None:
        self.name, self.stype, self.elems = name, stype, elems


class StructLoc:
    def __init__(self, members: dict[str, Loc]) -> None:
        self.members = members          # field name -> Loc


class FieldLoc:
    def __init__(self, header: str, field: str, type_: Type | None) -> None:
        self.header, self.field, self.type = header, field, type_

    def json(self) -> Json:
        return {"type": "field", "value": [self.header, self.field]}


Loc: TypeAlias = "HdrLoc | StackLoc | StructLoc | FieldLoc"    # where a declaration's value lives
StackOp: TypeAlias = "tuple[str, StackLoc]"     # ("stack_next" | "stack_last", the stack): parser only

STANDARD_METADATA = "standard_metadata"


class Storage:
    """Allocates header instances and scalar fields and remembers where each declaration lives."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.header_types: list[tuple[str, list[list[Any]]]] = []   # [(name, [[field, width, signed]])]
        self._htype_names: dict[str, str] = {}
        self.headers: list[tuple[str, str, bool]] = []  # [(instance name, header type name, metadata)]
        self.stacks: list[tuple[str, str, list[str]]] = []  # [(name, header type name, [instance names])]
        self.scalars: list[tuple[str, int, bool]] = []  # [(field name, width, signed)]
        self._names = UniqueNames()
        self.locs: dict[int, Loc] = {}                  # id(decl) -> Loc
        self.field_lists: dict[int, list[FieldLoc]] = {}    # index -> [FieldLoc]

    # ---- naming
    def unique(self, base: str) -> str:
        return self._names.take(base)

    def header_type(self, t: HeaderT | StructT) -> str:
        if t.name not in self._htype_names:
            self._htype_names[t.name] = t.name
            fields = []
            for n, ft, _ in t.fields:
                fields.append([n, width_of(ft), bool(getattr(ft, "signed", False))])
            self.header_types.append((t.name, fields))
        return t.name

    def add_scalar(self, base: str, t: Type, pos: Pos | None = None) -> FieldLoc:
        w = width_of(t)
        if w is None:
            raise Unsupported(f"a value of type {t} here (it needs a temporary, which holds only bit<N>, "
                              f"int<N>, bool and enums)", pos)
        name = self.unique(base)
        self.scalars.append((name, w, bool(getattr(t, "signed", False))))
        return FieldLoc("scalars", name, t)

    @staticmethod
    def _check_bytes(t: HeaderT) -> None:
        if t.width() % 8:
            raise CompileError(f"header '{t.name}' is {t.width()} bits long; BMv2 needs headers to be a "
                               f"whole number of bytes", getattr(t, "pos", None))

    def add_header(self, base: str, t: HeaderT, metadata: bool = False) -> HdrLoc:
        if not metadata:
            self._check_bytes(t)
        name = self.unique(base)
        self.headers.append((name, self.header_type(t), metadata))
        return HdrLoc(name, t)

    def add_stack(self, base: str, t: StackT) -> StackLoc:
        self._check_bytes(t.elem)
        name = self.unique(base)
        elems = []
        for i in range(t.size):
            en = f"{name}[{i}]"
            self._names.add(en)
            self.headers.append((en, self.header_type(t.elem), False))
            elems.append(HdrLoc(en, t.elem))
        self.stacks.append((name, self.header_type(t.elem), [e.name for e in elems]))
        return StackLoc(name, t, elems)

    # ---- allocation
    def alloc(self, t: Type, base: str, scalar_prefix: str, header_base: str | None = None,
              field_lists: Iterable[int] = ()) -> Loc:
        """Storage for a value of type t: headers by their field name, scalars by a dotted path.
        `field_lists`: the @field_list indices of an enclosing struct field, which apply to every
        scalar inside it (as p4c flattens them)."""
        if isinstance(t, HeaderT):
            return self.add_header(header_base or base, t)
        if isinstance(t, StackT):
            return self.add_stack(header_base or base, t)
        if isinstance(t, StructT):
            members: dict[str, Loc] = {}
            for n, ft, annos in t.fields:
                hb = n if header_base is None else f"{header_base}_{n}"
                lists = list(field_lists)
                for a in annos:
                    if a.name == "field_list":
                        if isinstance(ft, (HeaderT, StackT)):
                            raise Unsupported("@field_list on a header (preserve metadata fields)", a.pos)
                        lists += [arg.value for arg in a.args if isinstance(arg, A.IntLit)]
                member = members[n] = self.alloc(ft, n, f"{scalar_prefix}.{n}", hb, lists)
                if isinstance(member, FieldLoc):
                    for index in dict.fromkeys(lists):
                        self.field_lists.setdefault(index, []).append(member)
            return StructLoc(members)
        if isinstance(t, (BitsT, BoolT, ErrorT)) or (isinstance(t, EnumT) and t.underlying is not None):
            return self.add_scalar(scalar_prefix, t)
        if isinstance(t, EnumT):
            return self._enum_scalar(scalar_prefix, t)
        raise Unsupported(f"storage for a value of type {t}")

    def _enum_scalar(self, name: str, t: EnumT) -> FieldLoc:
        loc = self.add_scalar(name, BitsT(32))
        loc.type = t
        return loc

    def standard_metadata(self, t: StructT) -> StructLoc:
        fields: list[list[Any]] = [[n, width_of(ft), False] for n, ft, _ in t.fields]
        total = sum(f[1] for f in fields)
        if total % 8:
            fields.append(["_padding", 8 - total % 8, False])
        self.header_types.append((STANDARD_METADATA, fields))
        self._htype_names[t.name] = STANDARD_METADATA
        self.headers.append((STANDARD_METADATA, STANDARD_METADATA, True))
        self._names.add(STANDARD_METADATA)
        members: dict[str, Loc] = {n: FieldLoc(STANDARD_METADATA, n, ft) for n, ft, _ in t.fields}
        return StructLoc(members)

    def bind_program(self) -> None:
        """Allocate the v1model block parameters and bind every block's parameters to them."""
        prog = self.prog
        p = prog.parser
        hdr_t, meta_t, sm_t = p.params[1].ptype, p.params[2].ptype, p.params[3].ptype
        self._names.add("scalars")
        assert isinstance(sm_t, StructT)        # the checker's v1model signature check
        sm = self.standard_metadata(sm_t)
        hdr = self.alloc(hdr_t, "hdr", getattr(hdr_t, "name", "hdr"))
        meta = self.alloc(meta_t, "meta", getattr(meta_t, "name", "meta"))
        by_role: dict[str, list[Loc | None]] = {
            "parser": [None, hdr, meta, sm], "verify": [hdr, meta], "ingress": [hdr, meta, sm],
            "egress": [hdr, meta, sm], "compute": [hdr, meta], "deparser": [None, hdr]}
        for role, block in (("parser", p), ("verify", prog.verify), ("ingress", prog.ingress),
                            ("egress", prog.egress), ("compute", prog.compute), ("deparser", prog.deparser)):
            for prm, loc in zip(block.params, by_role[role]):
                if loc is not None:
                    self.locs[id(prm)] = loc
        for block in prog.blocks():
            for v in getattr(block, "vars", []):
                self.alloc_local(v)
            for act in getattr(block, "actions", []):
                for v in getattr(act, "locals", []):
                    self.alloc_local(v)

    def alloc_local(self, v: A.VarDecl) -> None:
        if id(v) not in self.locs:
            try:
                self.locs[id(v)] = self.alloc(v.vtype, v.name, v.name, v.name)
            except CompileError as e:
                e.pos = e.pos or v.pos          # located at the declaration that needs the storage
                raise

    def scalars_json(self) -> list[list[Any]]:
        fields = [[n, w, s] for n, w, s in self.scalars]
        total = sum(w for _, w, _ in self.scalars)
        if total % 8:
            fields.append([self.unique("_padding"), 8 - total % 8, False])
        return fields
