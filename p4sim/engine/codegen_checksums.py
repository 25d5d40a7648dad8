"""Emitting calculations (hash and checksum inputs) and the verify/update checksum passes."""
from typing import Any

from . import hashes
from .actions import store_code
from .codegen_emitter import Emitter
from .exprs import ExprGen
from .ir_calculations import calculation, checksum_steps


class ChecksumEmitter(Emitter):
    """`CALC[name](f, payload)` per calculation; `verify_checksums` and `update_checksums`."""

    # ---- calculations (hashes, checksums) ----------------------------------------------------
    def emit_calculations(self, ns: dict[str, Any]) -> None:
        prog = self.prog
        ns["CALC"] = {}
        x = ExprGen(prog, where="calculations")
        for calc in prog.json.get("calculations", []):
            name = calc["name"]
            algo = hashes.algorithm(calc.get("algo", ""), f"calculation {name}")
            fn = self.ident("C_", name)
            ns[fn + "_algo"] = algo
            c = calculation(prog, calc)
            parts: list[tuple[str, Any, int]] = []
            for inp in c.inputs:
                if inp.kind == "field":
                    lv = x.field_info(*inp.node["value"])
                    parts.append(("v", f"f[{lv.slot}]", lv.width))
                elif inp.kind == "const":
                    parts.append(("v", str(inp.value), inp.width))
                elif inp.kind == "header":
                    assert inp.header is not None   # a "header" input names its header
                    parts.append(("h", prog.headers[inp.header], 0))
                else:
                    parts.append(("p", inp.header, 0))
            self.w(f"def {fn}(f, pl):")
            if not c.dynamic:
                nbits = sum(p[2] for p in parts)
                pad = (-nbits) % 8
                expr = []
                shift = nbits + pad
                for _, code, width in parts:
                    shift -= width
                    expr.append(f"({code} & {(1 << width) - 1}) << {shift}" if shift else
                                f"({code} & {(1 << width) - 1})")
                self.w(f"    x = {' | '.join(expr) or '0'}")
                self.w(f"    return {fn}_algo(x.to_bytes({(nbits + pad) // 8}, 'big'))")
            else:
                self.w("    o = []")
                for kind, val, width in parts:
                    if kind == "v":
                        pad = (-width) % 8
                        nbytes, mask = (width + pad) // 8, (1 << width) - 1
                        self.w(f"    o.append(((({val}) & {mask}) << {pad}).to_bytes({nbytes}, 'big'))")
                    elif kind == "h":
                        self.w(f"    if f[{val.vslot}]: o.append(SER[{val.name!r}](f))")
                    else:
                        self.w(f"    o.append(ser_after(f, {val!r})); o.append(pl)")
                self.w(f"    return {fn}_algo(b''.join(o))")
            self.w(f"CALC[{name!r}] = {fn}")
        # checksums: verify after parsing, update before deparsing
        for kind in ("verify", "update"):
            self.w(f"def {kind}_checksums(f, pl):")
            body = []
            for ck in checksum_steps(prog, kind):
                tgt = x.field_info(*ck["target"])
                cond = x.cond(ck["if_cond"]) if ck.get("if_cond") else "True"
                calc = f"CALC[{ck['calculation']!r}](f, pl) & {(1 << tgt.width) - 1}"
                body.append(f"    if {cond}:")
                if kind == "verify":
                    body.append(f"        if {calc} != {x.pattern(tgt)}:")
                    body.append(f"            f[{prog.fields[('standard_metadata', 'checksum_error')].slot}] = 1")
                    if self.traced:
                        body.append(f"            TR('Checksum {ck['name']} is not correct')")
                else:
                    body.append(f"        f[{tgt.slot}] = {store_code(tgt, '(' + calc + ')')}")
            for line in body or ["    pass"]:
                self.w(line)
