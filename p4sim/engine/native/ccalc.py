"""Calculations (hashes, checksums) and the verify/update checksum steps, as C.

A calculation serialises its inputs (p4sim.engine.ir_calculations, which the Python engine's
codegen_checksums walks too) and runs the algorithm over the bytes (runtime rt_calc).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir_calculations import calculation, checksum_steps
from .cexpr import ExprC, c_string
from .errors import NativeUnsupported

if TYPE_CHECKING:
    from .cgen import ProgramC

ALGOS = {"csum16": ("RT_ALGO_CSUM16", 16), "xor16": ("RT_ALGO_XOR16", 16), "crc16": ("RT_ALGO_CRC16", 16),
         "crc16_custom": ("RT_ALGO_CRC16", 16), "crc32": ("RT_ALGO_CRC32", 32),
         "crc32_custom": ("RT_ALGO_CRC32", 32), "identity": ("RT_ALGO_IDENTITY", None),
         "random": ("RT_ALGO_RANDOM", 32)}


class Calculations:
    def __init__(self, cg: ProgramC) -> None:
        self.cg = cg
        self.prog = cg.prog
        self.by_name: dict[str, tuple[str, int | None]] = {}  # name -> (C function, exact result bits or None)
        self.lines: list[str] = []

    def build(self) -> None:
        for i, calc in enumerate(self.prog.json.get("calculations", [])):
            self.by_name[calc["name"]] = self._calc(i, calc)

    def get(self, name: str | None, where: str) -> tuple[str, int]:
        """(function, bits) of a calculation whose exact value a hash offset needs."""
        if name not in self.by_name:
            raise NativeUnsupported(f"{where}: unknown calculation {name!r}")
        fn, bits = self.by_name[name]
        if bits is None or bits > 64:
            raise NativeUnsupported(f"{where}: calculation {name} yields more than 64 bits")
        return fn, bits

    def _calc(self, i, calc):
        name = calc["name"]
        algo = calc.get("algo", "")
        if algo not in ALGOS:
            raise NativeUnsupported(f"calculation {name}: algorithm {algo!r}")
        const, bits = ALGOS[algo]
        x = ExprC(self.cg, f"calculation {name}")
        c = calculation(self.prog, calc, NativeUnsupported)
        # (kind, what, width): "v" an Lv, "c" an int, "h" a CHeader, "p" the header before the payload
        parts: list[tuple[str, Any, int]] = []
        for inp in c.inputs:
            if inp.kind == "field":
                lv = x.lvalue(inp.node)
                parts.append(("v", lv, lv.ref.width))
            elif inp.kind == "const":
                parts.append(("c", inp.value, inp.width))
            elif inp.kind == "header":
                assert inp.header is not None   # a "header" input names its header
                parts.append(("h", self.cg.layout.headers[inp.header], 0))
            else:
                parts.append(("p", inp.header, 0))
        fn = f"calc{i}"
        out = [f"/* calculation {c_string(name)} ({algo}) */",
               f"static uint64_t {fn}(rt_switch *sw, const pstate *st, const uint8_t *pl, uint32_t pllen) {{",
               "    (void)sw; (void)st; (void)pl; (void)pllen;"]
        if algo == "random":
            out += ["    return rt_rand_u64(sw, 0xFFFFFFFFULL);", "}"]
            self.lines += out
            return fn, 32

        def value(kind, v, width):
            if kind == "c":
                return f"{v & ((1 << width) - 1):#x}ULL" if width <= 64 else x.wconst(v & ((1 << width) - 1))
            return x.pattern(v)

        if not c.dynamic:
            nbits = sum(p[2] for p in parts)
            nbytes = (nbits + 7) // 8
            out.append(f"    uint8_t b_[{max(nbytes, 1)}] = {{0}};")
            bo = 0
            for kind, v, width in parts:
                if width:
                    put = "w_put_bits" if width > 64 else "rt_put_bits"
                    out.append(f"    {put}(b_, {bo}, {width}, {value(kind, v, width)});")
                bo += width
            out.append(f"    return rt_calc({const}, b_, {nbytes});")
            bits = bits if bits is not None else 8 * nbytes
        else:
            fixed = 0
            for kind, v, width in parts:
                if kind in ("v", "c"):
                    fixed += (width + 7) // 8
                elif kind == "h":
                    fixed += self.cg.codecs.ensure(v.htype, f"calculation {name}")
                else:
                    fixed += self.cg.codecs.ser_after(v)[1]
            out.append(f"    uint8_t *b_ = rt_scratch(sw, {fixed}u + pllen);")
            out.append("    if (!b_) return 0;")
            out.append(f"    memset(b_, 0, {fixed}u + pllen);")
            out.append("    uint32_t o_ = 0;")
            for kind, v, width in parts:
                if kind in ("v", "c"):
                    if width:
                        put = "w_put_bits" if width > 64 else "rt_put_bits"
                        out.append(f"    {put}(b_ + o_, 0, {width}, {value(kind, v, width)}); "
                                   f"o_ += {(width + 7) // 8};")
                elif kind == "h":
                    nb = self.cg.codecs.ensure(v.htype, f"calculation {name}")
                    out.append(f"    if (st->{v.access}.valid) {{ ser_{v.htype.cname}(&st->{v.access}, b_ + o_); "
                               f"o_ += {nb}; }}")
                else:
                    after, _ = self.cg.codecs.ser_after(v)
                    out.append(f"    o_ += {after}(st, b_ + o_);")
                    out.append("    if (pllen) memcpy(b_ + o_, pl, pllen);")
                    out.append("    o_ += pllen;")
            out.append(f"    return rt_calc({const}, b_, o_);")
        out.append("}")
        self.lines += out
        return fn, bits

    def checksums(self) -> None:
        """verify_checksums() and update_checksums()."""
        prog = self.prog
        for kind in ("verify", "update"):
            out = [f"static int {kind}_checksums(rt_switch *sw, pstate *st, const uint8_t *pl, "
                   f"uint32_t pllen) {{",
                   "    (void)sw; (void)st; (void)pl; (void)pllen;"]
            for ck in checksum_steps(prog, kind, NativeUnsupported):
                cname = ck["calculation"]
                fn, _bits = self.by_name[cname]
                x = ExprC(self.cg, f"checksum {ck.get('name')}")
                tgt = x.lvalue({"type": "field", "value": ck["target"]})
                if tgt.ref.width > 64:
                    raise NativeUnsupported(f"checksum {ck.get('name')}: target wider than 64 bits")
                mask = (1 << tgt.ref.width) - 1
                cond = x.cond(ck["if_cond"]) if ck.get("if_cond") else "1"
                guard = "    if (UNLIKELY(sw->abort)) { rt_set_error(sw, sw->drop_msg); return R_ABORT; }" \
                    if x.uses_index else ""
                out.append(f"    {{ int c_ = {cond};")
                if guard:
                    out.append(guard)
                out.append("      if (c_) {")
                out.append(f"        uint64_t v_ = {fn}(sw, st, pl, pllen) & {mask:#x}ULL;")
                if kind == "verify":
                    out.append(f"        if (v_ != {x.pattern(tgt)}) {{")
                    out.append("          " + x.store_value(x.lvalue({"type": "field", "value": [
                        "standard_metadata", "checksum_error"]}), x.const(1)))
                    name = c_string(str(ck.get("name")))
                    out.append(f"          RT_TRACE(sw, \"Checksum %s is not correct\", {name});")
                    out.append("        }")
                else:
                    value = {"type": "$c", "code": "v_", "ct": "u64", "lo": 0, "hi": mask}
                    out.append("        " + x.store(tgt, value))
                out.append("      }")
                out.append("    }")
            out += ["    return R_OK;", "}"]
            self.lines += out

    def source(self) -> str:
        return "\n".join(self.lines)
