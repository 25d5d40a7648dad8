"""Header codecs and the deparser: headers to and from wire bytes, as C.

Per header type, ext_<type>() reads a header from bytes and ser_<type>() writes it back (into
zeroed bytes); byte-aligned fields move as big-endian words, the others bit by bit.  Signed
fields are read as two's complement and written as their bit pattern, as the Python engine's
struct codes do.  deparse() writes the valid headers of the deparser's order; ser_after_N()
writes the ones after a given header (a calculation's "payload" input).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import NativeUnsupported
from .layout import CHeader, HeaderType, storage

if TYPE_CHECKING:
    from .cgen import ProgramC


class HeaderCodecs:
    def __init__(self, cg: ProgramC) -> None:
        self.cg = cg
        self.layout = cg.layout
        self.emitted: set[str] = set()
        self.lines: list[str] = []

    def nbytes(self, htype: HeaderType, where: str) -> int:
        if htype.nbits % 8:
            raise NativeUnsupported(f"{where}: header type {htype.cname} is {htype.nbits} bits, not whole bytes")
        return htype.nbits // 8

    def ensure(self, htype: HeaderType, where: str) -> int:
        """Emit ext_/ser_ for a header type once; -> its size in bytes."""
        n = self.nbytes(htype, where)
        if htype.cname in self.emitted:
            return n
        self.emitted.add(htype.cname)
        ext = [f"static inline void ext_{htype.cname}({htype.cname} *h, const uint8_t *d) {{"]
        ser = [f"static inline void ser_{htype.cname}(const {htype.cname} *h, uint8_t *o) {{",
               f"    memset(o, 0, {max(n, 1)});"]
        bo = 0
        for member, fi in htype.fields:
            w = fi.width
            ctype, limbs = storage(w, fi.signed)
            aligned = bo % 8 == 0 and w % 8 == 0
            if limbs:
                self.cg.need_bits(w + 1)
                get = f"w_get_bits(d, {bo}, {w})"
                if fi.signed:
                    get = f"w_sext({get}, {w})"
                ext.append(f"    w_store(h->{member}, {limbs}, {get});")
                ser.append(f"    w_put_bits(o, {bo}, {w}, w_load(h->{member}, {limbs}, {int(fi.signed)}));")
            elif w == 0:
                pass
            else:
                get = f"rt_get_be(d + {bo // 8}, {w // 8})" if aligned else f"rt_get_bits(d, {bo}, {w})"
                if fi.signed:
                    get = f"rt_sext({get}, {w})"
                ext.append(f"    h->{member} = ({ctype}){get};")
                if aligned:
                    ser.append(f"    rt_put_be(o + {bo // 8}, {w // 8}, (uint64_t)h->{member});")
                else:
                    ser.append(f"    rt_put_bits(o, {bo}, {w}, (uint64_t)h->{member});")
            bo += w
        self.lines += ext + ["}"] + ser + ["}"]
        return n

    def deparser(self) -> None:
        """deparse(), DEPARSE_MAX and the deparser order (for ser_after)."""
        prog = self.cg.prog
        deps = prog.json.get("deparsers", [])
        order = deps[0].get("order", []) if deps else []
        self.order: list[CHeader] = []
        for name in order:
            h = self.layout.headers.get(name)
            if h is None:
                raise NativeUnsupported(f"deparser: unknown header {name!r}")
            self.order.append(h)
        # the Python engine builds a codec for every packet header, even ones never emitted
        for h in self.layout.headers.values():
            if not h.metadata:
                self.ensure(h.htype, f"header {h.name}")
        total = 0
        out = ["static uint32_t deparse(const pstate *st, uint8_t *o) {", "    uint32_t n = 0;"]
        for h in self.order:
            nb = self.ensure(h.htype, f"deparser header {h.name}")
            total += nb
            out.append(self._emit(h, nb))
        out += ["    return n;", "}", f"#define DEPARSE_MAX {total}"]
        self.lines += out
        self.max_bytes = total
        self._after: dict[int, tuple[str, int]] = {}  # first index -> (C function, max bytes)

    @staticmethod
    def _emit(h: CHeader, nb: int) -> str:
        return f"    if (st->{h.access}.valid) {{ ser_{h.htype.cname}(&st->{h.access}, o + n); n += {nb}; }}"

    def ser_after(self, name: str | None) -> tuple[str, int]:
        """Name of a C function writing the valid headers after `name` in the deparser order."""
        names = [h.name for h in self.order]
        start = names.index(name) + 1 if name in names else len(names)
        if start not in self._after:
            fn = f"ser_after_{start}"
            out = [f"static uint32_t {fn}(const pstate *st, uint8_t *o) {{", "    uint32_t n = 0;"]
            for h in self.order[start:]:
                nb = self.ensure(h.htype, f"header {h.name}")
                out.append(self._emit(h, nb))
            out += ["    (void)st; (void)o;", "    return n;", "}"]
            self.lines += out
            self._after[start] = (fn, sum(self.ensure(h.htype, h.name) for h in self.order[start:]))
        return self._after[start]

    def source(self) -> str:
        return "\n".join(self.lines)
