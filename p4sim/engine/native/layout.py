"""The packet state of one program as a C struct, and where each field of the JSON lives in it.

The Python engine keeps a packet's state as a flat list of slots (p4sim.engine.program); the
native backend keeps the same state as typed C: one struct per header type (a validity byte and
one member per field), one member per header instance, an array per header stack plus its
next index, and a `hid` struct for v1model intrinsics the program does not declare.

Field storage follows the values the Python engine keeps: an unsigned bit<W> field holds its
pattern (uint8/16/32/64_t, or W/64 limbs when wider); a signed int<W> field holds BMv2's value,
which lies in [-2^(W-1), 2^W - 1] (see exprs.signed_store), so it needs W+1 bits: int32_t up to
W=31, int64_t up to W=63, limbs (two's complement) above.
"""
from dataclasses import dataclass

from ..program import HIDDEN_SLOTS, FieldInfo, HeaderInfo, Program
from .errors import NativeUnsupported


def ident(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


@dataclass(frozen=True)
class FieldRef:
    """A field (or validity) as C sees it: `access` is relative to a pstate pointer."""
    access: str
    width: int
    signed: bool
    limbs: int = 0          # > 0: stored as that many uint64 words, least significant first
    is_valid: bool = False  # the header's validity byte

    def at(self, ptr: str = "st") -> str:
        return f"{ptr}->{self.access}"


def storage(width: int, signed: bool) -> tuple[str, int]:
    """(C type, limbs) of a field."""
    if signed:
        if width <= 31:
            return "int32_t", 0
        if width <= 63:
            return "int64_t", 0
        return "uint64_t", (width + 1 + 63) // 64
    if width <= 8:
        return "uint8_t", 0
    if width <= 16:
        return "uint16_t", 0
    if width <= 32:
        return "uint32_t", 0
    if width <= 64:
        return "uint64_t", 0
    return "uint64_t", (width + 63) // 64


@dataclass
class HeaderType:
    cname: str
    fields: list[tuple[str, FieldInfo]]   # (member name, field)
    nbits: int


@dataclass
class CHeader:
    """One header instance: `access` is its struct (e.g. "h2_eth" or "s0_mpls[1]")."""
    name: str
    access: str
    htype: HeaderType
    metadata: bool
    stack: str | None
    index: int

    @property
    def nbytes(self) -> int:
        return self.htype.nbits // 8


@dataclass
class CStack:
    name: str
    array: str     # member name of the element array
    next: str      # member name of the next index
    size: int
    htype: HeaderType


class Layout:
    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.types: dict[str, HeaderType] = {}
        self.headers: dict[str, CHeader] = {}
        self.stacks: dict[str, CStack] = {}
        self.by_slot: dict[int, FieldRef] = {}
        self.hidden: dict[str, FieldRef] = {}
        self.hidden_members: list[tuple[str, str]] = []  # (C type, member) of struct hid
        self._build()

    # ---- construction --------------------------------------------------------------------
    def _type_of(self, h: HeaderInfo) -> HeaderType:
        key = h.header_type
        ht = self.types.get(key)
        if ht is None:
            members = [(f"f{i}_{ident(fi.name)}", fi) for i, fi in enumerate(h.fields)]
            ht = HeaderType(f"ht{len(self.types)}_{ident(key)}", members, sum(fi.width for fi in h.fields))
            self.types[key] = ht
        elif [fi.width for _, fi in ht.fields] != [fi.width for fi in h.fields]:
            raise NativeUnsupported(f"header {h.name}: header type {key} laid out differently")
        return ht

    def _build(self):
        prog = self.prog
        for i, st in enumerate(prog.stacks.values()):
            first = prog.headers[st.headers[0]]
            cs = CStack(st.name, f"s{i}_{ident(st.name)}", f"n{i}_{ident(st.name)}", st.size,
                        self._type_of(first))
            self.stacks[st.name] = cs
            for k, hname in enumerate(st.headers):
                h = prog.headers[hname]
                if self._type_of(h) is not cs.htype:
                    raise NativeUnsupported(f"header stack {st.name}: members of different types")
                self.headers[hname] = CHeader(hname, f"{cs.array}[{k}]", cs.htype, h.metadata, st.name, k)
        for i, h in enumerate(prog.headers.values()):
            if h.name in self.headers:
                continue
            self.headers[h.name] = CHeader(h.name, f"h{i}_{ident(h.name)}", self._type_of(h), h.metadata,
                                           None, 0)
        for h in prog.headers.values():
            ch = self.headers[h.name]
            self.by_slot[h.vslot] = FieldRef(f"{ch.access}.valid", 1, False, 0, True)
            for (member, _), fi in zip(ch.htype.fields, h.fields):
                ctype, limbs = storage(fi.width, fi.signed)
                self.by_slot[fi.slot] = FieldRef(f"{ch.access}.{member}", fi.width, fi.signed, limbs)
        for (_header, fname), fi in prog.fields.items():
            if fi.slot in self.by_slot:
                continue
            # a v1model intrinsic the JSON does not declare: a hidden member
            member = f"sm_{ident(fname)}"
            ctype, limbs = storage(fi.width, fi.signed)
            if limbs:
                raise NativeUnsupported(f"standard metadata {fname} wider than 64 bits")
            self.hidden_members.append((ctype, member))
            self.by_slot[fi.slot] = FieldRef(f"hid.{member}", fi.width, fi.signed)
        for name in HIDDEN_SLOTS:
            member = f"x_{name}"
            self.hidden_members.append(("int64_t", member))
            self.hidden[name] = FieldRef(f"hid.{member}", 64, True)

    # ---- lookups ---------------------------------------------------------------------------
    def field(self, header: str, fname: str) -> FieldRef:
        prog = self.prog
        if fname == "$valid$":
            if header not in self.headers:
                raise NativeUnsupported(f"unknown header {header!r}")
            return FieldRef(f"{self.headers[header].access}.valid", 1, False, 0, True)
        fi = prog.fields.get((header, fname))
        if fi is None:
            raise NativeUnsupported(f"unknown field {header}.{fname}")
        return self.by_slot[fi.slot]

    def sm(self, fname: str) -> FieldRef:
        return self.field("standard_metadata", fname)

    def header_nbytes(self, h: CHeader, where: str) -> int:
        if h.htype.nbits % 8:
            raise NativeUnsupported(f"{where}: header {h.name} is {h.htype.nbits} bits, not whole bytes")
        return h.htype.nbits // 8

    # ---- C source --------------------------------------------------------------------------
    def struct_source(self) -> str:
        out = []
        for ht in self.types.values():
            out.append("typedef struct {")
            out.append("    uint8_t valid;")
            for member, fi in ht.fields:
                ctype, limbs = storage(fi.width, fi.signed)
                out.append(f"    {ctype} {member}{f'[{limbs}]' if limbs else ''};  /* {fi.name}: "
                           f"{'int' if fi.signed else 'bit'}<{fi.width}> */")
            out.append(f"}} {ht.cname};")
        out.append("typedef struct {")
        for h in self.headers.values():
            if h.stack is None:
                out.append(f"    {h.htype.cname} {h.access};")
        for cs in self.stacks.values():
            out.append(f"    {cs.htype.cname} {cs.array}[{cs.size}];")
            out.append(f"    uint32_t {cs.next};")
        out.append("    struct {")
        for ctype, member in self.hidden_members:
            out.append(f"        {ctype} {member};")
        out.append("    } hid;")
        out.append("} pstate;")
        return "\n".join(out)

    def fresh_source(self) -> str:
        """pstate_fresh(): every header invalid and zero, metadata valid (as Switch._fresh)."""
        out = ["static inline void pstate_fresh(pstate *st) {", "    memset(st, 0, sizeof *st);"]
        for h in self.headers.values():
            if h.metadata:
                out.append(f"    st->{h.access}.valid = 1;")
        out.append("}")
        return "\n".join(out)

    def copy_headers_source(self) -> str:
        """copy_headers(dst, src): the packet headers (not metadata) an E2E clone keeps."""
        out = ["static inline void copy_headers(pstate *dst, const pstate *src) {"]
        for h in self.headers.values():
            if not h.metadata and h.stack is None:
                out.append(f"    dst->{h.access} = src->{h.access};")
        for cs in self.stacks.values():
            out.append(f"    memcpy(dst->{cs.array}, src->{cs.array}, sizeof dst->{cs.array});")
            out.append(f"    dst->{cs.next} = src->{cs.next};")
        out.append("}")
        return "\n".join(out)
