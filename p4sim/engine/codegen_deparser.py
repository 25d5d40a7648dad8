"""Emitting header (de)serialization and the deparser: `SER[header](f)`, `deparse(f)`."""
import struct
from collections.abc import Callable

from .codegen_emitter import Emitter
from .errors import ProgramError
from .program import HeaderInfo

_STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


class DeparserEmitter(Emitter):
    """Header codecs (shared with the parser emitter) and the deparser in emit order."""

    # ---- header (de)serialization ------------------------------------------------------------
    def header_codec(self, h: HeaderInfo) -> tuple[int, Callable[[str, list[str], str], None], Callable[[str], str]]:
        """-> (unpack lines builder, pack expression builder) for a header type layout."""
        widths = [fi.width for fi in h.fields]
        nbits = sum(widths)
        if nbits % 8:
            raise ProgramError(f"header {h.name}: {nbits} bits is not a whole number of bytes")
        nbytes = nbits // 8
        signed = [fi.signed for fi in h.fields]
        structable = widths and all(w in _STRUCT_CODES for w in widths)
        if structable:
            # lower-case struct codes read two's complement, as BMv2 does on extract
            fmt = "".join(_STRUCT_CODES[w].lower() if sg else _STRUCT_CODES[w] for w, sg in zip(widths, signed))
            key = "S_" + fmt
            if key not in self.structs:
                self.structs[key] = struct.Struct(">" + fmt)
            pfmt = "".join(_STRUCT_CODES[w] for w in widths)
            pkey = "S_" + pfmt
            if pkey not in self.structs:
                self.structs[pkey] = struct.Struct(">" + pfmt)
        n = len(widths)

        def unpack(base, out, pad):
            # base: python source for the validity slot
            if not widths:
                return
            if structable:
                out.append(f"{pad}f[{base} + 1:{base} + {n + 1}] = {key}.unpack_from(data, off)")
                return
            out.append(f"{pad}x = int.from_bytes(data[off:off + {nbytes}], 'big')")
            shift = nbits
            vals = []
            for w, sg in zip(widths, signed):
                shift -= w
                m = (1 << w) - 1
                if shift == 0:
                    v = f"x & {m}"
                elif shift + w == nbits:
                    v = f"x >> {shift}"
                else:
                    v = f"(x >> {shift}) & {m}"
                if sg:
                    v = f"((({v}) ^ {1 << (w - 1)}) - {1 << (w - 1)})"
                vals.append(v)
            out.append(f"{pad}f[{base} + 1:{base} + {n + 1}] = ({', '.join(vals)},)")

        def pack(base):
            if not widths:
                return "b''"
            if structable and not any(signed):
                return f"{pkey}.pack(*f[{base} + 1:{base} + {n + 1}])"
            if structable:
                args = ", ".join(f"f[{base} + {i + 1}] & {(1 << w) - 1}" if sg else f"f[{base} + {i + 1}]"
                                 for i, (w, sg) in enumerate(zip(widths, signed)))
                return f"{pkey}.pack({args})"
            shift = nbits
            terms = []
            for i, (w, sg) in enumerate(zip(widths, signed)):
                shift -= w
                v = f"(f[{base} + {i + 1}] & {(1 << w) - 1})" if sg else f"f[{base} + {i + 1}]"
                terms.append(f"({v} << {shift})" if shift else v)
            return f"({' | '.join(terms)}).to_bytes({nbytes}, 'big')"

        return nbytes, unpack, pack

    # ---- parser ------------------------------------------------------------------------------

    def emit_deparser(self) -> None:
        prog = self.prog
        deps = prog.json.get("deparsers", [])
        order = deps[0].get("order", []) if deps else []
        self.w("SER = {}")
        for h in prog.headers.values():
            if h.metadata:
                continue
            _, _, pack = self.header_codec(h)
            self.w(f"SER[{h.name!r}] = lambda f: {pack(str(h.vslot))}")
        self.w("def deparse(f):")
        self.w("    o = []")
        for name in order:
            emitted = prog.headers.get(name)
            if emitted is None:
                raise ProgramError(f"deparser: unknown header {name!r}")
            _, _, pack = self.header_codec(emitted)
            self.w(f"    if f[{emitted.vslot}]: o.append({pack(str(emitted.vslot))})")
        self.w("    return b''.join(o)")
        self.w(f"DEPARSE_ORDER = {order!r}")
        self.w("def ser_after(f, name):")
        self.w("    i = DEPARSE_ORDER.index(name) + 1 if name in DEPARSE_ORDER else len(DEPARSE_ORDER)")
        self.w("    return b''.join(SER[h](f) for h in DEPARSE_ORDER[i:] if f[HDR_VSLOT[h]])")
        self.w(f"HDR_VSLOT = {({h.name: h.vslot for h in prog.headers.values()})!r}")
