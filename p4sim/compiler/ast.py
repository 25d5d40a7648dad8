"""The P4 abstract syntax tree built by the parser and annotated by the checker.

Every node has ``pos`` (a diagnostics.Pos). Expressions get ``type`` (a types.Type) and names get
``ref`` (the declaration they resolve to) from the checker.

The node classes declare their fields' types so that the checker and the backend can name them in
signatures; every node takes its fields positionally or by keyword (Node.__init__).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .diagnostics import Pos
    from .symbols import Sym
    from .types import Type


class Node:
    _fields: ClassVar[tuple[str, ...]] = ()
    pos: Pos | None
    type: Any   # a types.Type once checked (None before); Any: the backends read its subclasses' fields
    ref: Any    # what a name resolves to: a declaration node, a types.Type or a checker object

    def __init__(self, *args: Any, pos: Pos | None = None, **kw: Any) -> None:
        fields = self._fields
        for f, a in zip(fields, args):
            setattr(self, f, a)
        for f in fields[len(args):]:
            setattr(self, f, kw.pop(f, None))
        if kw:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(kw)}")
        self.pos = pos
        self.type = None
        self.ref = None

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


class Expr(Node):
    pass


class Stmt(Node):
    pass


class TypeRef(Node):
    """A type as written (the checker resolves it to a types.Type)."""


# ---- type references (syntax; the checker turns them into types.Type)

class BitTypeRef(TypeRef):  # width: an Expr (a literal or a constant)
    _fields = ("width", "signed")
    width: Expr
    signed: bool


class BoolTypeRef(TypeRef):
    _fields = ()


class ErrorTypeRef(TypeRef):
    _fields = ()


class StringTypeRef(TypeRef):
    _fields = ()


class VoidTypeRef(TypeRef):
    _fields = ()


class InfIntTypeRef(TypeRef):
    _fields = ()


class VarbitTypeRef(TypeRef):
    _fields = ("width",)
    width: IntLit


class NamedTypeRef(TypeRef):  # args: type arguments, None when not specialized
    _fields = ("name", "args")
    name: str
    args: list[TypeRef] | None


class StackTypeRef(TypeRef):
    _fields = ("elem", "size")
    elem: NamedTypeRef
    size: Expr


class TupleTypeRef(TypeRef):
    _fields = ("args",)
    args: list[TypeRef]

# ---- expressions


class IntLit(Expr):  # width None: arbitrary precision
    _fields = ("value", "width", "signed")
    value: int
    width: int | None
    signed: bool


class BoolLit(Expr):
    _fields = ("value",)
    value: bool


class StrLit(Expr):
    _fields = ("value",)
    value: str


class Name(Expr):
    _fields = ("name",)
    name: str


class TypeMember(Expr):  # Enum.X, error.X
    _fields = ("tname", "member")
    tname: str
    member: str


class Member(Expr):
    _fields = ("expr", "member")
    expr: Expr
    member: str


class Index(Expr):
    _fields = ("expr", "index")
    expr: Expr
    index: Any      # an Expr as parsed, an IntLit once checked


class Slice(Expr):
    _fields = ("expr", "hi", "lo")
    expr: Expr
    hi: Any         # hi, lo: Exprs as parsed, the bit numbers (int) once checked
    lo: Any


class Unary(Expr):  # '!', '~', '-'
    _fields = ("op", "expr")
    op: str
    expr: Expr


class Binary(Expr):
    _fields = ("op", "left", "right")
    op: str
    left: Expr
    right: Expr


class Cond(Expr):
    _fields = ("cond", "then", "els")
    cond: Expr
    then: Expr
    els: Expr


class Cast(Expr):
    _fields = ("tref", "expr")
    tref: TypeRef
    expr: Expr


class Call(Expr):
    _fields = ("func", "type_args", "args")
    func: Expr
    type_args: list[TypeRef] | None
    args: list[Arg]
    kind: tuple[Any, ...]   # set by the checker: what is called, e.g. ("action", decl), ("method", extern, name)


class CtorCall(Expr):
    _fields = ("tname", "args")
    tname: str
    args: list[Arg]


class ListExpr(Expr):
    _fields = ("items",)
    items: list[Expr]
    struct_type: Type       # set by the checker for a struct-typed field list (digest, hash data)


class Mask(Expr):
    _fields = ("value", "mask")
    value: Expr
    mask: Expr


class Range(Expr):
    _fields = ("lo", "hi")
    lo: Expr
    hi: Expr


class Default(Expr):
    _fields = ()


class DontCare(Expr):
    _fields = ()


class Arg(Node):
    _fields = ("name", "expr")
    name: str | None
    expr: Expr

# ---- statements


class Assign(Stmt):
    _fields = ("lhs", "rhs")
    lhs: Expr
    rhs: Expr


class CallStmt(Stmt):
    _fields = ("call",)
    call: Call


class If(Stmt):
    _fields = ("cond", "then", "els")
    cond: Expr
    then: Stmt
    els: Stmt | None


class Block(Stmt):
    _fields = ("stmts",)
    stmts: list[Stmt]


class VarDecl(Stmt):
    _fields = ("tref", "name", "init")
    tref: TypeRef
    name: str
    init: Expr | None
    vtype: Type             # set by the checker


class ConstDecl(Stmt):
    _fields = ("tref", "name", "value", "annos")
    tref: TypeRef
    name: str
    value: Expr
    annos: list[Annotation]


class Exit(Stmt):
    _fields = ()


class Return(Stmt):
    _fields = ("expr",)
    expr: Expr | None


class Empty(Stmt):
    _fields = ()


class Switch(Stmt):
    _fields = ("expr", "cases")
    expr: Expr
    cases: list[SwitchCase]


class SwitchCase(Node):  # label: a name, None for default; body None: fall through
    _fields = ("label", "body")
    label: str | None
    body: Block | None

# ---- declarations


class Annotation(Node):
    _fields = ("name", "args")
    name: str
    args: list[Expr]


class Field(Node):
    _fields = ("tref", "name", "annos")
    tref: TypeRef
    name: str
    annos: list[Annotation]


class HeaderDecl(Node):
    _fields = ("name", "fields", "annos")
    name: str
    fields: list[Field]
    annos: list[Annotation]


class StructDecl(Node):
    _fields = ("name", "fields", "annos")
    name: str
    fields: list[Field]
    annos: list[Annotation]


class UnionDecl(Node):
    _fields = ("name", "fields", "annos")
    name: str
    fields: list[Field]
    annos: list[Annotation]


class TypedefDecl(Node):
    _fields = ("tref", "name", "annos")
    tref: TypeRef
    name: str
    annos: list[Annotation]


class EnumDecl(Node):
    _fields = ("name", "underlying", "members", "annos")
    name: str
    underlying: TypeRef | None
    members: list[tuple[str, Expr | None, Pos | None]]
    annos: list[Annotation]


class ErrorDecl(Node):
    _fields = ("members",)
    members: list[str]


class MatchKindDecl(Node):
    _fields = ("members",)
    members: list[str]


class Param(Node):
    _fields = ("direction", "tref", "name", "default", "annos")
    direction: str | None
    tref: TypeRef
    name: str
    default: Expr | None
    annos: list[Annotation]
    ptype: Type             # set by the checker


class ExternMethod(Node):  # ret None: a constructor
    _fields = ("ret", "name", "params", "annos")
    ret: TypeRef | None
    name: str
    params: list[Param]
    annos: list[Annotation]


class ExternObj(Node):
    _fields = ("name", "methods", "annos")
    name: str
    methods: list[ExternMethod]
    annos: list[Annotation]


class ExternFunc(Node):
    _fields = ("ret", "name", "params", "annos")
    ret: TypeRef
    name: str
    params: list[Param]
    annos: list[Annotation]


class TypeDecl(Node):  # parser/control/package type
    _fields = ("kind", "name", "params")
    kind: str
    name: str
    params: list[Param]


class Instance(Node):
    _fields = ("tref", "args", "name", "annos")
    tref: TypeRef
    args: list[Arg]
    name: str
    annos: list[Annotation]
    # set by the checker
    etype: Type
    sym: Sym
    size: int                       # register/counter/meter size
    unit: str                       # counter/meter unit (a CounterType/MeterType member)
    bound_table: TableDecl | None   # the table a direct counter/meter is attached to
    applied_at: Pos | None          # a sub-control instance: where it is applied


class ActionDecl(Node):
    _fields = ("name", "params", "body", "annos")
    name: str
    params: list[Param]
    body: Block
    annos: list[Annotation]
    # set by the checker
    locals: list[VarDecl]
    control: ControlDecl | None


class FunctionDecl(Node):
    _fields = ("ret", "name", "params", "body", "annos")
    ret: TypeRef
    name: str
    params: list[Param]
    body: Block
    annos: list[Annotation]
    # set by the checker
    rtype: Type
    result: Expr


class ParserState(Node):
    _fields = ("name", "stmts", "transition", "annos")
    name: str
    stmts: list[Stmt]
    transition: TransitionDirect | TransitionSelect
    annos: list[Annotation]


class TransitionDirect(Node):
    _fields = ("state",)
    state: str


class TransitionSelect(Node):
    _fields = ("keys", "cases")
    keys: list[Expr]
    cases: list[SelectCase]


class SelectCase(Node):
    _fields = ("keyset", "state")
    keyset: list[Expr]
    state: str


class ParserDecl(Node):
    _fields = ("name", "params", "locals", "states", "annos")
    name: str
    params: list[Param]
    locals: list[Node]
    states: list[ParserState]
    annos: list[Annotation]
    # set by the checker: what the block declares
    vars: list[VarDecl]
    instances: list[Instance]
    actions: list[ActionDecl]
    tables: list[TableDecl]
    subcontrols: list[ControlDecl]


class KeyElem(Node):
    _fields = ("expr", "match_kind", "annos")
    expr: Expr
    match_kind: str
    annos: list[Annotation]


class ActionRef(Node):
    _fields = ("name", "args", "annos")
    name: str
    args: list[Arg]
    annos: list[Annotation]
    decl: ActionDecl        # set by the checker


class Entry(Node):
    _fields = ("keyset", "action", "priority", "annos")
    keyset: list[Expr]
    action: ActionRef
    priority: Any   # an Expr (or None) as parsed, an int once checked
    annos: list[Annotation]
    call: Call      # set by the checker: the action call


class TableProp(Node):  # value: key elems, action refs, entries or an Expr
    _fields = ("name", "value", "const", "annos")
    name: str
    value: Any
    const: bool
    annos: list[Annotation]


class TableDecl(Node):
    _fields = ("name", "props", "annos")
    name: str
    props: list[TableProp]
    annos: list[Annotation]
    # set by the checker from the properties
    keys: list[KeyElem]
    action_list: list[ActionRef]
    default: Call | None
    default_const: bool
    size: int | None
    counters: Instance | None
    entries: list[Entry] | None
    control: ControlDecl
    applied_at: Pos | None


class ControlDecl(Node):
    _fields = ("name", "params", "locals", "body", "annos")
    name: str
    params: list[Param]
    locals: list[Node]
    body: Block
    annos: list[Annotation]
    # set by the checker: what the block declares
    vars: list[VarDecl]
    instances: list[Instance]
    actions: list[ActionDecl]
    tables: list[TableDecl]
    subcontrols: list[ControlDecl]
    path: str               # a sub-control's copy: its instance's full name
    instance: Instance      # ... and that instance
    role: str               # the V1Switch argument it is bound to (ingress, egress, ...)


class Program(Node):
    _fields = ("decls",)
    decls: list[Node]



def walk(e: Node) -> Iterator[Node]:
    """Every node under ``e`` (``e`` included): the checker and backend look for table applies in expressions."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        for f in getattr(n, "_fields", ()):
            v = getattr(n, f, None)
            if isinstance(v, Node):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, Node))
