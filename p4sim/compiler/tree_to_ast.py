"""Turning lark's parse tree into AST nodes with original-file positions (one method per grammar rule).

Kept apart from parse.py, which drives lark and turns its exceptions into syntax errors.
"""
from __future__ import annotations

from typing import Any, NoReturn

from lark import Token, Transformer_NonRecursive, v_args
from lark.tree import Meta

from . import ast as A
from .diagnostics import CompileError, Pos
from .limits import MAX_WIDTH
from .preprocess import Source

_BITS_PER_DIGIT = {16: 4, 2: 1, 8: 3, 10: 3.33}


def parse_int(text: str, pos: Pos | None) -> tuple[int, int | None, bool]:
    """Value, width and signedness of a P4 integer literal such as 8w0xFF, 4s3, 0b101, 42.
    Literals are held to MAX_WIDTH bits (checked on the digits, before converting them)."""
    width = signed = None
    t = text.replace("_", "")
    for sep in ("w", "s"):
        if sep in t and not t.lower().startswith("0x"):
            w, t = t.split(sep, 1)
            if len(w) > 5 or int(w) > MAX_WIDTH:
                raise CompileError(f"integer literal {_short(text)}: width {_short(w)} is larger than "
                                   f"{MAX_WIDTH} bits (p4c's limit)", pos)
            width, signed = int(w), sep == "s"
            break
    low = t.lower()
    base, digits = 10, low
    for prefix, b in (("0x", 16), ("0b", 2), ("0o", 8), ("0d", 10)):
        if low.startswith(prefix):
            base, digits = b, low[2:]
            break
    digits = digits.lstrip("0") or "0"
    if len(digits) * _BITS_PER_DIGIT[base] > MAX_WIDTH + 4:
        raise CompileError(f"integer literal {_short(text)} is wider than {MAX_WIDTH} bits", pos)
    v = int(digits, base)
    if v.bit_length() > MAX_WIDTH:
        raise CompileError(f"integer literal {_short(text)} is wider than {MAX_WIDTH} bits", pos)
    if width is not None and width <= 0:
        raise CompileError(f"integer literal {text}: width must be positive", pos)
    return v, width, bool(signed)


class PosStr(str):
    """A name that remembers where it was written (for errors about one member of a list)."""

    pos: Pos | None = None

    def __new__(cls, text: str, pos: Pos | None) -> PosStr:
        s = super().__new__(cls, text)
        s.pos = pos
        return s

    # for copy.deepcopy of sub-control templates; ignore: str's returns one item, our __new__ takes two
    def __getnewargs__(self) -> tuple[str, Pos | None]:  # type: ignore[override]
        return (str(self), self.pos)


def _short(text: str) -> str:
    return text if len(text) <= 24 else text[:10] + "..." + text[-10:]


@v_args(meta=True)
class ToAst(Transformer_NonRecursive):
    """Turn lark's parse tree into ast nodes carrying original-file positions."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.src = source

    def _p(self, meta: Meta) -> Pos | None:
        if getattr(meta, "empty", True) and not hasattr(meta, "line"):
            return None
        return self.src.pos(meta.line, meta.column)

    def _tp(self, tok: Token) -> Pos:
        assert tok.line is not None and tok.column is not None   # tokens from the parser are placed
        return self.src.pos(tok.line, tok.column)

    # ---- names
    def anyname(self, meta: Meta, c: list[Any]) -> str:
        return str(c[0])

    def kwname(self, meta: Meta, c: list[Any]) -> str:
        return self.src.text[meta.start_pos:meta.end_pos]

    def name(self, meta: Meta, c: list[Any]) -> str:
        return PosStr(c[0], self._tp(c[0])) if hasattr(c[0], "line") else str(c[0])

    def tname(self, meta: Meta, c: list[Any]) -> str:
        return str(c[0])

    # ---- top level
    def start(self, meta: Meta, c: list[Any]) -> A.Program:
        return A.Program([d for d in c if d is not None])

    def top_decl(self, meta: Meta, c: list[Any]) -> A.Node:
        annos, decl = c
        if hasattr(decl, "annos"):
            decl.annos = annos
        return decl

    def empty_decl(self, meta: Meta, c: list[Any]) -> None:
        return None

    def annotations(self, meta: Meta, c: list[Any]) -> list[A.Annotation]:
        return list(c)

    def annotation(self, meta: Meta, c: list[Any]) -> A.Annotation:
        return A.Annotation(c[0], c[1] or [], pos=self._p(meta))

    # ---- types
    def bool_type(self, meta: Meta, c: list[Any]) -> A.BoolTypeRef:
        return A.BoolTypeRef(pos=self._p(meta))

    def error_type(self, meta: Meta, c: list[Any]) -> A.ErrorTypeRef:
        return A.ErrorTypeRef(pos=self._p(meta))

    def string_type(self, meta: Meta, c: list[Any]) -> A.StringTypeRef:
        return A.StringTypeRef(pos=self._p(meta))

    def void_type(self, meta: Meta, c: list[Any]) -> A.VoidTypeRef:
        return A.VoidTypeRef(pos=self._p(meta))

    def bit1_type(self, meta: Meta, c: list[Any]) -> A.BitTypeRef:
        return A.BitTypeRef(A.IntLit(1, None, False, pos=self._p(meta)), False, pos=self._p(meta))

    def _int_tok(self, tok: Token) -> A.IntLit:
        v, w, s = parse_int(str(tok), self._tp(tok))
        return A.IntLit(v, w, s, pos=self._tp(tok))

    def bit_type(self, meta: Meta, c: list[Any]) -> A.BitTypeRef:
        return A.BitTypeRef(self._int_tok(c[1]), False, pos=self._p(meta))

    def int_type(self, meta: Meta, c: list[Any]) -> A.BitTypeRef:
        return A.BitTypeRef(self._int_tok(c[1]), True, pos=self._p(meta))

    def bit_expr_type(self, meta: Meta, c: list[Any]) -> A.BitTypeRef:
        return A.BitTypeRef(c[1], False, pos=self._p(meta))

    def int_expr_type(self, meta: Meta, c: list[Any]) -> A.BitTypeRef:
        return A.BitTypeRef(c[1], True, pos=self._p(meta))

    def varbit_type(self, meta: Meta, c: list[Any]) -> A.VarbitTypeRef:
        return A.VarbitTypeRef(self._int_tok(c[1]), pos=self._p(meta))

    def inf_int_type(self, meta: Meta, c: list[Any]) -> A.InfIntTypeRef:
        return A.InfIntTypeRef(pos=self._p(meta))

    def named_type(self, meta: Meta, c: list[Any]) -> A.NamedTypeRef:
        return A.NamedTypeRef(c[0], None, pos=self._p(meta))

    def specialized_type(self, meta: Meta, c: list[Any]) -> A.NamedTypeRef:
        return A.NamedTypeRef(c[0], c[2], pos=self._p(meta))

    def stack_type(self, meta: Meta, c: list[Any]) -> A.StackTypeRef:
        return A.StackTypeRef(A.NamedTypeRef(c[0], None, pos=self._p(meta)), c[1], pos=self._p(meta))

    def tuple_type(self, meta: Meta, c: list[Any]) -> A.TupleTypeRef:
        return A.TupleTypeRef(c[1], pos=self._p(meta))

    def type_args(self, meta: Meta, c: list[Any]) -> list[A.TypeRef]:
        return list(c)

    def type_params(self, meta: Meta, c: list[Any]) -> list[A.TypeRef]:
        return c[1]

    # ---- declarations
    def const_decl(self, meta: Meta, c: list[Any]) -> A.ConstDecl:
        return A.ConstDecl(c[0], c[1], c[2], [], pos=self._p(meta))

    def field(self, meta: Meta, c: list[Any]) -> A.Field:
        return A.Field(c[1], c[2], c[0], pos=self._p(meta))

    def header_decl(self, meta: Meta, c: list[Any]) -> A.HeaderDecl:
        return A.HeaderDecl(c[0], c[1:], [], pos=self._p(meta))

    def struct_decl(self, meta: Meta, c: list[Any]) -> A.StructDecl:
        return A.StructDecl(c[0], c[1:], [], pos=self._p(meta))

    def union_decl(self, meta: Meta, c: list[Any]) -> A.UnionDecl:
        return A.UnionDecl(c[0], c[1:], [], pos=self._p(meta))

    def typedef_decl(self, meta: Meta, c: list[Any]) -> A.TypedefDecl:
        return A.TypedefDecl(c[0], c[1], [], pos=self._p(meta))

    def enum_decl(self, meta: Meta, c: list[Any]) -> A.EnumDecl:
        return A.EnumDecl(c[0], None, [(str(n), None, getattr(n, "pos", None) or self._p(meta)) for n in c[1:]], [],
                          pos=self._p(meta))

    def ser_enum_decl(self, meta: Meta, c: list[Any]) -> A.EnumDecl:
        return A.EnumDecl(c[1], c[0], c[2:], [], pos=self._p(meta))

    def enum_member(self, meta: Meta, c: list[Any]) -> tuple[str, A.Expr, Pos | None]:
        return (c[0], c[1], self._p(meta))

    def error_decl(self, meta: Meta, c: list[Any]) -> A.ErrorDecl:
        return A.ErrorDecl(list(c), pos=self._p(meta))

    def match_kind_decl(self, meta: Meta, c: list[Any]) -> A.MatchKindDecl:
        return A.MatchKindDecl(list(c), pos=self._p(meta))

    def extern_obj(self, meta: Meta, c: list[Any]) -> A.ExternObj:
        return A.ExternObj(c[0], c[2:], [], pos=self._p(meta))

    def extern_method(self, meta: Meta, c: list[Any]) -> A.ExternMethod:
        return A.ExternMethod(c[1], c[2], c[-1], c[0], pos=self._p(meta))

    def extern_ctor(self, meta: Meta, c: list[Any]) -> A.ExternMethod:
        return A.ExternMethod(None, c[1], c[2], c[0], pos=self._p(meta))

    def extern_func(self, meta: Meta, c: list[Any]) -> A.ExternFunc:
        return A.ExternFunc(c[0], c[1], c[3], [], pos=self._p(meta))

    def params(self, meta: Meta, c: list[Any]) -> list[A.Param]:
        return [p for p in c if p is not None]

    def param(self, meta: Meta, c: list[Any]) -> A.Param:
        annos, direction, tref, name, default = c
        return A.Param(str(direction) if direction else None, tref, name, default, annos, pos=self._p(meta))

    def parser_type_decl(self, meta: Meta, c: list[Any]) -> A.TypeDecl:
        return A.TypeDecl("parser", c[0], c[2], pos=self._p(meta))

    def control_type_decl(self, meta: Meta, c: list[Any]) -> A.TypeDecl:
        return A.TypeDecl("control", c[0], c[2], pos=self._p(meta))

    def package_decl(self, meta: Meta, c: list[Any]) -> A.TypeDecl:
        return A.TypeDecl("package", c[0], c[2], pos=self._p(meta))

    def instantiation(self, meta: Meta, c: list[Any]) -> A.Instance:
        return A.Instance(c[0], c[1] or [], c[2], [], pos=self._p(meta))

    def action_decl(self, meta: Meta, c: list[Any]) -> A.ActionDecl:
        return A.ActionDecl(c[0], c[1], c[2], [], pos=self._p(meta))

    def function_decl(self, meta: Meta, c: list[Any]) -> A.FunctionDecl:
        ret, name, tparams, params, body = c
        if tparams:
            raise CompileError("generic functions are not supported by p4sim-compile (outside its "
                               "P4_16 subset; see docs/p4-subset.md)", self._p(meta))
        return A.FunctionDecl(ret, name, params, body, [], pos=self._p(meta))

    def newtype_decl(self, meta: Meta, c: list[Any]) -> NoReturn:
        raise CompileError("'type' declarations are not supported by p4sim-compile (outside its "
                           "P4_16 subset; see docs/p4-subset.md); use typedef", self._p(meta))

    # ---- parser
    def parser_decl(self, meta: Meta, c: list[Any]) -> A.ParserDecl:
        name, params, ctor = c[0], c[1], c[2]
        if ctor:
            raise CompileError("parser constructor parameters are not supported by p4sim-compile "
                               "(outside its P4_16 subset; see docs/p4-subset.md)", self._p(meta))
        locals_ = [x for x in c[3:] if not isinstance(x, A.ParserState)]
        states = [x for x in c[3:] if isinstance(x, A.ParserState)]
        return A.ParserDecl(name, params, locals_, states, [], pos=self._p(meta))

    def parser_local(self, meta: Meta, c: list[Any]) -> A.Node:
        c[1].annos = c[0]
        return c[1]

    def parser_state(self, meta: Meta, c: list[Any]) -> A.ParserState:
        return A.ParserState(c[1], [s for s in c[2:-1]], c[-1], c[0], pos=self._p(meta))

    def transition_direct(self, meta: Meta, c: list[Any]) -> A.TransitionDirect:
        return A.TransitionDirect(c[0], pos=self._p(meta))

    def transition_select(self, meta: Meta, c: list[Any]) -> A.TransitionSelect:
        return A.TransitionSelect(c[0], c[1:], pos=self._p(meta))

    def select_case(self, meta: Meta, c: list[Any]) -> A.SelectCase:
        return A.SelectCase(c[0], c[1], pos=self._p(meta))

    def keyset(self, meta: Meta, c: list[Any]) -> list[A.Expr]:
        return [c[0]]

    def keyset_tuple(self, meta: Meta, c: list[Any]) -> list[A.Expr]:
        return list(c)

    def ks_default(self, meta: Meta, c: list[Any]) -> A.Default:
        return A.Default(pos=self._p(meta))

    def ks_dontcare(self, meta: Meta, c: list[Any]) -> A.DontCare:
        return A.DontCare(pos=self._p(meta))

    def ks_mask(self, meta: Meta, c: list[Any]) -> A.Mask:
        return A.Mask(c[0], c[1], pos=self._p(meta))

    def ks_range(self, meta: Meta, c: list[Any]) -> A.Range:
        return A.Range(c[0], c[1], pos=self._p(meta))

    # ---- control
    def control_decl(self, meta: Meta, c: list[Any]) -> A.ControlDecl:
        name, params, ctor = c[0], c[1], c[2]
        if ctor:
            raise CompileError("control constructor parameters are not supported by p4sim-compile "
                               "(outside its P4_16 subset; see docs/p4-subset.md)", self._p(meta))
        return A.ControlDecl(name, params, list(c[3:-1]), c[-1], [], pos=self._p(meta))

    def control_local(self, meta: Meta, c: list[Any]) -> A.Node:
        c[1].annos = c[0]
        return c[1]

    def table_decl(self, meta: Meta, c: list[Any]) -> A.TableDecl:
        return A.TableDecl(c[0], list(c[1:]), [], pos=self._p(meta))

    def key_prop(self, meta: Meta, c: list[Any]) -> A.TableProp:
        return A.TableProp("key", list(c[1:]), False, c[0], pos=self._p(meta))

    def actions_prop(self, meta: Meta, c: list[Any]) -> A.TableProp:
        return A.TableProp("actions", list(c[1:]), False, c[0], pos=self._p(meta))

    def entries_prop(self, meta: Meta, c: list[Any]) -> A.TableProp:
        return A.TableProp("entries", list(c[2:]), bool(c[1]), c[0], pos=self._p(meta))

    def generic_prop(self, meta: Meta, c: list[Any]) -> A.TableProp:
        return A.TableProp(c[2], c[3], bool(c[1]), c[0], pos=self._p(meta))

    def key_elem(self, meta: Meta, c: list[Any]) -> A.KeyElem:
        return A.KeyElem(c[0], c[1], c[2], pos=self._p(meta))

    def action_ref(self, meta: Meta, c: list[Any]) -> A.ActionRef:
        return A.ActionRef(c[1], c[2], c[0], pos=self._p(meta))

    def entry(self, meta: Meta, c: list[Any]) -> A.Entry:
        prio, keyset, annos, name, args = c
        call = A.ActionRef(name, args or [], annos, pos=self._p(meta))
        return A.Entry(keyset, call, prio, annos, pos=self._p(meta))

    def entry_priority(self, meta: Meta, c: list[Any]) -> A.Expr:
        return c[0]

    # ---- statements
    def block(self, meta: Meta, c: list[Any]) -> A.Block:
        return A.Block(list(c), pos=self._p(meta))

    def exit_stmt(self, meta: Meta, c: list[Any]) -> A.Exit:
        return A.Exit(pos=self._p(meta))

    def return_stmt(self, meta: Meta, c: list[Any]) -> A.Return:
        return A.Return(c[0], pos=self._p(meta))

    def empty_stmt(self, meta: Meta, c: list[Any]) -> A.Empty:
        return A.Empty(pos=self._p(meta))

    def assignment(self, meta: Meta, c: list[Any]) -> A.Assign:
        return A.Assign(c[0], c[1], pos=self._p(meta))

    def call_stmt(self, meta: Meta, c: list[Any]) -> A.CallStmt:
        return A.CallStmt(A.Call(c[0], None, c[1] or [], pos=self._p(meta)), pos=self._p(meta))

    def generic_call_stmt(self, meta: Meta, c: list[Any]) -> A.CallStmt:
        return A.CallStmt(A.Call(c[0], c[2], c[4] or [], pos=self._p(meta)), pos=self._p(meta))

    def lv_name(self, meta: Meta, c: list[Any]) -> A.Name:
        return A.Name(c[0], pos=self._p(meta))

    def lv_member(self, meta: Meta, c: list[Any]) -> A.Member:
        return A.Member(c[0], c[1], pos=self._p(meta))

    def lv_index(self, meta: Meta, c: list[Any]) -> A.Index:
        return A.Index(c[0], c[1], pos=self._p(meta))

    def lv_slice(self, meta: Meta, c: list[Any]) -> A.Slice:
        return A.Slice(c[0], c[1], c[2], pos=self._p(meta))

    def lv_type_member(self, meta: Meta, c: list[Any]) -> A.TypeMember:
        return A.TypeMember(c[0], c[1], pos=self._p(meta))

    def if_stmt(self, meta: Meta, c: list[Any]) -> A.If:
        return A.If(c[0], c[1], c[2], pos=self._p(meta))

    def switch_stmt(self, meta: Meta, c: list[Any]) -> A.Switch:
        return A.Switch(c[0], list(c[1:]), pos=self._p(meta))

    def switch_case(self, meta: Meta, c: list[Any]) -> A.SwitchCase:
        return A.SwitchCase(c[0], c[1], pos=self._p(meta))

    def switch_fallthrough(self, meta: Meta, c: list[Any]) -> A.SwitchCase:
        return A.SwitchCase(c[0], None, pos=self._p(meta))

    def switch_label(self, meta: Meta, c: list[Any]) -> str:
        return c[0]

    def default_label(self, meta: Meta, c: list[Any]) -> None:
        return None

    def var_decl(self, meta: Meta, c: list[Any]) -> A.VarDecl:
        return A.VarDecl(c[0], c[1], c[2], pos=self._p(meta))

    # ---- expressions
    def expr_list(self, meta: Meta, c: list[Any]) -> list[A.Expr]:
        return list(c)

    def arg_list(self, meta: Meta, c: list[Any]) -> list[A.Arg]:
        return list(c)

    def arg(self, meta: Meta, c: list[Any]) -> A.Arg:
        return A.Arg(None, c[0], pos=self._p(meta))

    def named_arg(self, meta: Meta, c: list[Any]) -> A.Arg:
        return A.Arg(c[0], c[1], pos=self._p(meta))

    def dontcare_arg(self, meta: Meta, c: list[Any]) -> A.Arg:
        return A.Arg(None, A.DontCare(pos=self._p(meta)), pos=self._p(meta))

    def cond(self, meta: Meta, c: list[Any]) -> A.Cond:
        return A.Cond(c[0], c[1], c[2], pos=self._p(meta))

    def lor(self, meta: Meta, c: list[Any]) -> A.Binary:
        return A.Binary("||", c[0], c[1], pos=self._p(meta))

    def land(self, meta: Meta, c: list[Any]) -> A.Binary:
        return A.Binary("&&", c[0], c[1], pos=self._p(meta))

    def bor(self, meta: Meta, c: list[Any]) -> A.Binary:
        return A.Binary("|", c[0], c[1], pos=self._p(meta))

    def bxor(self, meta: Meta, c: list[Any]) -> A.Binary:
        return A.Binary("^", c[0], c[1], pos=self._p(meta))

    def band(self, meta: Meta, c: list[Any]) -> A.Binary:
        return A.Binary("&", c[0], c[1], pos=self._p(meta))

    def binop(self, meta: Meta, c: list[Any]) -> A.Binary:
        return A.Binary(str(c[1]), c[0], c[2], pos=self._p(meta))

    def lnot(self, meta: Meta, c: list[Any]) -> A.Unary:
        return A.Unary("!", c[0], pos=self._p(meta))

    def bnot(self, meta: Meta, c: list[Any]) -> A.Unary:
        return A.Unary("~", c[0], pos=self._p(meta))

    def neg(self, meta: Meta, c: list[Any]) -> A.Unary:
        return A.Unary("-", c[1], pos=self._p(meta))

    def upos(self, meta: Meta, c: list[Any]) -> A.Expr:
        return c[1]

    def cast(self, meta: Meta, c: list[Any]) -> A.Cast:
        return A.Cast(c[0], c[1], pos=self._p(meta))

    def member(self, meta: Meta, c: list[Any]) -> A.Member:
        return A.Member(c[0], c[1], pos=self._p(meta))

    def index(self, meta: Meta, c: list[Any]) -> A.Index:
        return A.Index(c[0], c[1], pos=self._p(meta))

    def slice(self, meta: Meta, c: list[Any]) -> A.Slice:
        return A.Slice(c[0], c[1], c[2], pos=self._p(meta))

    def call(self, meta: Meta, c: list[Any]) -> A.Call:
        return A.Call(c[0], None, c[1] or [], pos=self._p(meta))

    def generic_call(self, meta: Meta, c: list[Any]) -> A.Call:
        return A.Call(c[0], c[2], c[4] or [], pos=self._p(meta))

    def int_lit(self, meta: Meta, c: list[Any]) -> A.IntLit:
        return self._int_tok(c[0])

    def true_lit(self, meta: Meta, c: list[Any]) -> A.BoolLit:
        return A.BoolLit(True, pos=self._p(meta))

    def false_lit(self, meta: Meta, c: list[Any]) -> A.BoolLit:
        return A.BoolLit(False, pos=self._p(meta))

    def string_lit(self, meta: Meta, c: list[Any]) -> A.StrLit:
        raw = str(c[0])[1:-1]
        try:
            value = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except UnicodeDecodeError as exc:
            raise CompileError(f"bad escape sequence in string literal ({exc.reason})", self._p(meta)) from None
        return A.StrLit(value, pos=self._p(meta))

    def name_ref(self, meta: Meta, c: list[Any]) -> A.Name:
        return A.Name(c[0], pos=self._p(meta))

    def type_member(self, meta: Meta, c: list[Any]) -> A.TypeMember:
        return A.TypeMember(c[0], c[1], pos=self._p(meta))

    def error_member(self, meta: Meta, c: list[Any]) -> A.TypeMember:
        return A.TypeMember("error", c[0], pos=self._p(meta))

    def ctor_call(self, meta: Meta, c: list[Any]) -> A.CtorCall:
        return A.CtorCall(c[0], c[1] or [], pos=self._p(meta))

    def list_expr(self, meta: Meta, c: list[Any]) -> A.ListExpr:
        return A.ListExpr(c[0] or [], pos=self._p(meta))
