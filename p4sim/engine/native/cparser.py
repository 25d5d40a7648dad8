"""The parser as C: one label per parse state, gotos for transitions, bounds checks everywhere.

The states come decoded from p4sim.engine.ir_parser, as the Python engine's codegen_parser
gets them, and the semantics are the same: an error stores its code in
standard_metadata.parser_error and ends parsing at the offset where it happened (headers
extracted before stay valid); a select without a matching case ends parsing without an error.
Parsing is bounded as in the Python engine: a parser that visits more than bytes + slack
states is looping without consuming input, and the packet is dropped (counted in
stats["dropped_parser_loop"]) instead of hanging the switch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir_parser import Advance, Extract, SetField, State, Verify, packed_shifts, padded_shifts, parser, vset_mask
from .cexpr import ExprC, V, c_string
from .cstmt import Ctx, Prims
from .errors import NativeUnsupported

if TYPE_CHECKING:
    from .cgen import ProgramC

U64 = (1 << 64) - 1
PARSER_CTX = Ctx(exit="goto P_accept;",
                 drop="rt_set_error(sw, sw->drop_msg ? sw->drop_msg : \"parser\"); return R_ABORT;",
                 abort="return R_ABORT;")


class ParserGen:
    def __init__(self, cg: ProgramC) -> None:
        self.cg = cg
        self.prog = cg.prog
        self.layout = cg.layout
        self.codecs = cg.codecs
        self.lines: list[str] = []

    def w(self, line: str) -> None:
        self.lines.append(line)

    def build(self) -> None:
        prog = self.prog
        perr = prog.errors
        self.errors = perr
        graph = parser(prog, NativeUnsupported)
        w = self.w
        w("static int parse(rt_switch *sw, pstate *st, const uint8_t *d, uint32_t n, uint32_t *offp) {")
        self.slack = 256
        if graph is None:
            w("    (void)sw; (void)st; (void)d; (void)n;")
            w("    *offp = 0;")
            w("    return R_OK;")
            w("}")
            return
        labels = {name: f"S{i}" for i, name in enumerate(graph.states)}
        pe = ExprC(self.cg, "parser").lvalue({"type": "field", "value": ["standard_metadata", "parser_error"]})
        w("    uint32_t off = 0, perr = 0;")
        w("    uint64_t steps = 0, bound = (uint64_t)n + PARSER_SLACK;")
        self.slack = graph.slack
        w("    (void)perr;")
        w("    RT_TRACE(sw, \"Parser 'parser': start\");")
        w(f"    goto {labels[graph.init]};")
        for stt in graph.states.values():
            self.state(stt, labels, perr)
        w("P_err:")
        w(f"    {ExprC(self.cg, 'parser').store_value(pe, _c('perr'))}")
        w("    RT_TRACE(sw, \"Exception while parsing: %s\", error_name(perr));")
        w("P_accept:")
        w("    RT_TRACE(sw, \"Parser 'parser': end (%u bytes parsed)\", off);")
        w("    *offp = off;")
        w("    return R_OK;")
        w("P_loop:")
        w("    *offp = off;")
        w("    return R_LOOP;")
        w("}")

    def error_names(self) -> str:
        out = ["static const char *error_name(uint64_t code) {", "    switch (code) {"]
        seen = set()
        for name, value in self.prog.errors.items():
            if value in seen:
                continue
            seen.add(value)
            out.append(f"    case {int(value)}ULL: return {c_string(name)};")
        out += ["    default: return \"(unknown error)\";", "    }", "}"]
        return "\n".join(out)

    def fail(self, code: str | int) -> str:
        return f"{{ perr = {code}; goto P_err; }}"

    def state(self, stt: State, labels: dict[str, str], perr: dict[str, int]) -> None:
        w = self.w
        where = stt.where
        x = ExprC(self.cg, where)
        prims = Prims(self.cg, where, ctx=PARSER_CTX)
        too_short = self.fail(perr["PacketTooShort"])
        w(f"{labels[stt.name]}: /* {stt.name} */")
        w("    if (UNLIKELY(++steps > bound)) goto P_loop;")
        w(f"    RT_TRACE(sw, \"Parser 'parser' entering state '%s'\", {c_string(stt.name)});")
        for op in stt.ops:
            if isinstance(op, Extract) and op.header is not None:
                h = self.layout.headers[op.header]
                nb = self.codecs.ensure(h.htype, where)
                w(f"    if (n - off < {nb}u) {too_short}")
                w(f"    RT_TRACE(sw, \"Extracting header '%s'\", {c_string(op.header)});")
                w(f"    ext_{h.htype.cname}(&st->{h.access}, d + off); st->{h.access}.valid = 1; off += {nb};")
            elif isinstance(op, Extract):
                assert op.stack is not None     # an Extract names a header or a stack
                cs = self.layout.stacks[op.stack]
                nb = self.codecs.ensure(cs.htype, where)
                w(f"    {{ uint32_t k_ = st->{cs.next};")
                w(f"      if (k_ >= {cs.size}u) {self.fail(perr['StackOutOfBounds'])}")
                w(f"      if (n - off < {nb}u) {too_short}")
                w(f"      RT_TRACE(sw, \"Extracting header '%s[%u]'\", {c_string(op.stack)}, k_);")
                w(f"      ext_{cs.htype.cname}(&st->{cs.array}[k_], d + off); st->{cs.array}[k_].valid = 1;")
                w(f"      st->{cs.next} = k_ + 1; off += {nb}; }}")
            elif isinstance(op, SetField):
                lv = x.lvalue(op.target)
                if op.lookahead is not None:
                    bo, bw = op.lookahead
                    code, ct = self.peek(bo, bw, too_short)
                    w(f"    {{ {'wide_t' if ct == 'w' else 'uint64_t'} v_;")
                    w(f"      {code}")
                    w(f"      {x.store(lv, {'type': '$c', 'code': 'v_', 'ct': ct, 'lo': 0, 'hi': (1 << bw) - 1})} }}")
                else:
                    x.uses_index = False
                    w("    " + x.store(lv, op.source))
                    if x.uses_index:
                        w(f"    if (UNLIKELY(sw->abort)) {{ {PARSER_CTX.drop} }}")
            elif isinstance(op, Verify):
                x.uses_index = False
                cond = x.cond(op.cond)
                code = x.i64_code(op.error, "verify error code")
                check = f"if (UNLIKELY(sw->abort)) {{ {PARSER_CTX.drop} }} " if x.uses_index else ""
                w(f"    {{ int c_ = {cond}; {check}if (!c_) {self.fail(f'(uint32_t)({code})')} }}")
            elif isinstance(op, Advance):
                amount = x.exact(op.amount)
                if amount.lo < 0:
                    raise NativeUnsupported(f"{where}: advance by a possibly negative amount")
                bits = f"({x.as_u64(amount)} * 8)" if op.in_bytes else x.as_u64(amount)
                w(f"    {{ uint64_t k_ = ({bits}) >> 3;")
                w(f"      if ((uint64_t)(n - off) < k_) {too_short} off += (uint32_t)k_; }}")
            else:
                body: list[str] = []
                prims.primitive(op.call, "    ", body)
                self.lines += body
        self.transition(stt, labels, x, too_short)

    def peek(self, bo: int, bw: int, too_short: str) -> tuple[str, str]:
        """C statement setting v_ to `bw` bits at bit `bo` after the offset (PacketTooShort if not there)."""
        nb = ((bo & 7) + bw + 7) >> 3
        check = f"if ((uint64_t)off + {bo >> 3}u + {nb}u > n) {too_short}"
        if bw > 64:
            self.cg.need_bits(bw + 1)
            return f"{check} v_ = w_get_bits(d + off + {bo >> 3}, {bo & 7}, {bw});", "w"
        return f"{check} v_ = rt_get_bits(d + off + {bo >> 3}, {bo & 7}, {bw});", "u64"

    def transition(self, stt: State, labels: dict[str, str], x: ExprC, too_short: str) -> None:
        w = self.w

        def target(case):
            return labels[case.next_state] if case.next_state else "P_accept"

        if not stt.keys:
            w(f"    goto {target(stt.cases[0])};")
            return
        parts = []   # (C code, width)
        pre = []
        for i, k in enumerate(stt.keys):
            if k.lookahead is None:
                lv = x.lvalue(k.node)
                parts.append((x.pattern(lv), lv.ref.width))
            else:
                bo, bw = k.lookahead
                code, ct = self.peek(bo, bw, too_short)
                var = f"la{i}_"
                ctype = "wide_t" if ct == "w" else "uint64_t"
                pre.append(f"{ctype} {var}; {{ {ctype} v_; {code} {var} = v_; }}")
                parts.append((var, bw))
        widths = [wd for _, wd in parts]
        total, shifts = padded_shifts(widths)
        wide = total > 64
        if wide:
            self.cg.need_bits(total + 1)
        w("    {")
        if stt.lookahead_bytes:
            w(f"    if (n - off < {stt.lookahead_bytes}u) {too_short}")
        for line in pre:
            w("    " + line)
        terms = []
        for (code, wd), shift in zip(parts, shifts):
            if wide:
                term = code if code.startswith("w_") or wd > 64 else f"w_from_u64({code})"
                terms.append(f"w_shl({term}, {shift})" if shift else term)
            else:
                terms.append(f"({code} << {shift})" if shift else code)
        if wide:
            key = terms[0]
            for t in terms[1:]:
                key = f"w_or({key}, {t})"
            w(f"    wide_t key = {key};")
        else:
            w(f"    uint64_t key = {' | '.join(terms)};")
            w(f"    RT_TRACE(sw, \"Parser state '%s': key is %0{max(total // 4, 1)}llx\", {c_string(stt.name)}, "
              f"(unsigned long long)key);")
        for case in stt.cases:
            dest = target(case)
            if case.kind == "default":
                w(f"    goto {dest};")
                break
            if case.kind == "value":
                val, mask = case.value, case.mask
                if wide:
                    m = mask if mask is not None else (1 << (total + 1)) - 1
                    w(f"    if (!w_cmp(w_and(key, {x.wconst(m)}), {x.wconst(val & m)})) goto {dest};")
                elif mask is not None:
                    if (val & mask) >> 64:
                        continue  # bits no key of at most 64 bits has: never matches
                    w(f"    if ((key & {mask & U64:#x}ULL) == {val & mask:#x}ULL) goto {dest};")
                else:
                    if not 0 <= val < (1 << 64):
                        continue  # can never equal a key of at most 64 bits
                    w(f"    if (key == {val:#x}ULL) goto {dest};")
            else:
                if wide:
                    raise NativeUnsupported(f"{stt.where}: parse value set on a key wider than 64 bits")
                assert case.vset is not None    # a "vset" case names its value set
                cterms = [f"(({code} & {(1 << wd) - 1:#x}ULL) << {shift})" if shift else
                          f"({code} & {(1 << wd) - 1:#x}ULL)"
                          for (code, wd), shift in zip(parts, packed_shifts(widths))]
                w(f"    if (rt_vset_match(sw, {self.cg.vset_index(case.vset)}, {' | '.join(cterms)}, "
                  f"{vset_mask(case, widths):#x}ULL)) goto {dest};")
        else:
            w("    goto P_accept;")
        w("    }")


def _c(code: str) -> V:
    return V(code, "u64", True, 0, (1 << 32) - 1)
