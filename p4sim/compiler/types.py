"""P4 types as the checker and the backends see them."""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ast import Annotation
    from .diagnostics import Pos


class Type:
    def __eq__(self, other):
        return type(self) is type(other) and self.key() == other.key()

    def __hash__(self):
        return hash((type(self).__name__, self.key()))

    def key(self) -> tuple[Hashable, ...]:
        return ()


class BitsT(Type):
    """bit<W> (signed=False) or int<W> (signed=True)."""

    def __init__(self, width: int, signed: bool = False) -> None:
        self.width, self.signed = width, signed

    def key(self) -> tuple[Hashable, ...]:
        return (self.width, self.signed)

    def __str__(self):
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


class IntT(Type):
    """Arbitrary-precision integer (unsized literals and constants)."""

    def __str__(self):
        return "int"


class BoolT(Type):
    def __str__(self):
        return "bool"


class ErrorT(Type):
    def __str__(self):
        return "error"


class StringT(Type):
    def __str__(self):
        return "string"


class VoidT(Type):
    def __str__(self):
        return "void"


class MatchKindT(Type):
    def __str__(self):
        return "match_kind"


class NamedT(Type):
    """Types identified by name (each declaration is a distinct type)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def key(self) -> tuple[Hashable, ...]:
        return (self.name,)

    def __str__(self):
        return self.name


class EnumT(NamedT):
    def __init__(self, name: str, members: list[str], underlying: BitsT | None = None,
                 values: dict[str, int] | None = None) -> None:
        super().__init__(name)
        self.members = members            # list of names
        self.underlying = underlying      # BitsT for serializable enums
        self.values = values or {}        # name -> int


class StructLikeT(NamedT):
    def __init__(self, name: str, fields: list[tuple[str, Type, list[Annotation]]] | None = None,
                 annos: list[Annotation] | None = None) -> None:
        super().__init__(name)
        self.fields = fields if fields is not None else []   # [(name, Type, annos)]
        self.annos = annos or []
        self.pos: Pos | None = None                          # where it is declared

    def field(self, name: str) -> Type | None:
        for n, t, _ in self.fields:
            if n == name:
                return t
        return None


class HeaderT(StructLikeT):
    def width(self) -> int:
        return sum(width_of(t) or 0 for _, t, _ in self.fields)


class StructT(StructLikeT):
    pass


class StackT(Type):
    def __init__(self, elem: HeaderT, size: int) -> None:
        self.elem, self.size = elem, size

    def key(self) -> tuple[Hashable, ...]:
        return (self.elem, self.size)

    def __str__(self):
        return f"{self.elem}[{self.size}]"


class ExternT(Type):
    """An extern object type, with its type arguments (register<bit<8>> -> args [bit<8>])."""

    def __init__(self, name: str, args: Iterable[Type] = ()) -> None:
        self.name, self.args = name, tuple(args)

    def key(self) -> tuple[Hashable, ...]:
        return (self.name, self.args)

    def __str__(self):
        return self.name


class ListT(Type):
    """Type of a {a, b, ...} list expression."""

    def __init__(self, items: Iterable[Type]) -> None:
        self.items = tuple(items)

    def key(self) -> tuple[Hashable, ...]:
        return self.items

    def __str__(self):
        return "{" + ", ".join(map(str, self.items)) + "}"


class ObjT(Type):
    """Non-value things that may appear in expressions: tables, actions, parsers, controls..."""

    def __init__(self, kind: str, decl: Any = None) -> None:
        self.kind, self.decl = kind, decl   # decl: the declaration node (table, action, control...)

    def key(self) -> tuple[Hashable, ...]:
        return (self.kind, id(self.decl))

    def __str__(self):
        return self.kind


def width_of(t: Type | None) -> int | None:
    """Bit width of a serializable type (bits, bool as 1, serializable enum, error as 32)."""
    if isinstance(t, BitsT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT):
        return t.underlying.width if t.underlying is not None else 32
    if isinstance(t, ErrorT):
        return 32
    return None
