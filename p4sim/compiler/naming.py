"""Control-plane names and ids, computed the way p4c does.

Names: objects declared in a control/parser are ``Block.name``; ``@name("x")`` replaces the local
part and ``@name(".x")`` makes it absolute. Ids: the P4Runtime resource prefix in the top byte and
the low 24 bits of Jenkins' one-at-a-time hash of the name (linear probing on collision), or the
``@id`` annotation. Aliases: the shortest dotted suffix that is unique.
"""
from typing import Any

from .annotations import anno, anno_str

PREFIX = {"action": 0x01, "table": 0x02, "value_set": 0x03, "controller_header": 0x04,
          "action_profile": 0x11, "counter": 0x12, "direct_counter": 0x13, "meter": 0x14,
          "direct_meter": 0x15, "register": 0x16, "digest": 0x17}


def joaat(text: str) -> int:
    """Jenkins one-at-a-time hash (32-bit), as used by p4c for P4Runtime ids."""
    h = 0
    for c in text.encode():
        h = (h + c) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def block_path(block: Any) -> str:
    """The name prefix of objects declared in ``block``: its name, or for an instantiated
    sub-control the instance path (``Top.inst``) p4c gives the objects it inlines."""
    return getattr(block, "path", None) or block.name


def full_name(decl: Any, block: Any = None) -> str:
    """p4c's fully-qualified control-plane name of a declaration inside ``block``."""
    n = anno_str(getattr(decl, "annos", None), "name")
    if n is not None:
        if n.startswith("."):
            return n[1:]
        return f"{block_path(block)}.{n}" if block is not None else n
    return f"{block_path(block)}.{decl.name}" if block is not None else decl.name


class UniqueNames:
    """One namespace of emitted names (actions, tables, calculations, header instances): a base
    name is kept while free, else suffixed ``_0``, ``_1``, ... as p4c suffixes its duplicates."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def add(self, name: str) -> None:
        """Reserve a name given from elsewhere (a declared name, a fixed one like 'scalars')."""
        self.taken.add(name)

    def take(self, base: str) -> str:
        """`base`, or the first free `base_i`; reserved from now on."""
        name, i = base, 0
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name


class IdAllocator:
    """Assigns stable ids: @id first, then hashes in a deterministic order."""

    def __init__(self):
        self.used = set()
        self.ids = {}

    def assign(self, kind: str, name: str, decl: Any = None, pos: Any = None) -> int:
        key = (kind, name)
        if key in self.ids:
            return self.ids[key]
        a = anno(getattr(decl, "annos", None), "id") if decl is not None else None
        pre = PREFIX[kind] << 24
        if a is not None and a.args and hasattr(a.args[0], "value"):
            v = a.args[0].value
            if not isinstance(v, int) or not 0 < v < 1 << 32:
                from .diagnostics import CompileError
                raise CompileError(f"@id {v!r} of '{name}' is not a 32-bit id", a.pos)
            if v >> 24 == 0:
                v |= pre
            if v in self.used:
                from .diagnostics import CompileError
                raise CompileError(f"@id {a.args[0].value} of '{name}' is already used", a.pos)
        else:
            v = pre | (joaat(name) & 0xFFFFFF)
            while v in self.used:
                v = pre | ((v + 1) & 0xFFFFFF)
        self.used.add(v)
        self.ids[key] = v
        return v


def aliases(names: list[str]) -> dict[str, str]:
    """Shortest unique dotted suffix for each name."""
    parts = {n: n.split(".") for n in names}
    out = {}
    for n, p in parts.items():
        for k in range(1, len(p) + 1):
            suffix = ".".join(p[-k:])
            if sum(1 for o, q in parts.items() if ".".join(q[-k:]) == suffix) == 1:
                out[n] = suffix
                break
        else:
            out[n] = n
    return out
