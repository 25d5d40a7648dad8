"""The parser as C: one label per parse state, gotos for transitions, bounds checks everywhere.

Semantics follow p4sim.engine.codegen_parser: an error stores its code in
standard_metadata.parser_error and ends parsing at the offset where it happened (headers
extracted before stay valid); a select without a matching case ends parsing without an error.
Parsing is bounded as in the Python engine: a parser that visits more than bytes + slack
states is looping without consuming input, and the packet is dropped (counted in
stats["dropped_parser_loop"]) instead of hanging the switch.
"""
from ..codegen_parser import _compress  # the Python engine's key packing, shared: same select semantics
from ..program_loader import parse_hexstr
from .cexpr import ExprC, c_string
from .cstmt import Ctx, Prims
from .errors import NativeUnsupported

U64 = (1 << 64) - 1
PARSER_CTX = Ctx(exit="goto P_accept;",
                 drop="rt_set_error(sw, sw->drop_msg ? sw->drop_msg : \"parser\"); return R_ABORT;",
                 abort="return R_ABORT;")


class ParserGen:
    def __init__(self, cg):
        self.cg = cg
        self.prog = cg.prog
        self.layout = cg.layout
        self.codecs = cg.codecs
        self.lines = []

    def w(self, line):
        self.lines.append(line)

    def build(self):
        prog = self.prog
        perr = prog.errors
        self.errors = perr
        parsers = prog.json.get("parsers", [])
        w = self.w
        w("static int parse(rt_switch *sw, pstate *st, const uint8_t *d, uint32_t n, uint32_t *offp) {")
        self.slack = 256
        if not parsers:
            w("    (void)sw; (void)st; (void)d; (void)n;")
            w("    *offp = 0;")
            w("    return R_OK;")
            w("}")
            return
        parser = parsers[0]
        states = {s["name"]: s for s in parser.get("parse_states", [])}
        labels = {name: f"S{i}" for i, name in enumerate(states)}
        init = parser.get("init_state")
        if init not in labels:
            raise NativeUnsupported(f"parser: init_state {init!r} is not a parse state")
        pe = ExprC(self.cg, "parser").lvalue({"type": "field", "value": ["standard_metadata", "parser_error"]})
        # as the Python engine: a terminating parse visits states at most once per byte it consumes
        # or stack element it fills, plus a slack; more is a loop (the packet is dropped)
        slack = 256 + len(states) + sum(cs.size for cs in self.layout.stacks.values())
        w("    uint32_t off = 0, perr = 0;")
        w("    uint64_t steps = 0, bound = (uint64_t)n + PARSER_SLACK;")
        self.slack = slack
        w("    (void)perr;")
        w("    RT_TRACE(sw, \"Parser 'parser': start\");")
        w(f"    goto {labels[init]};")
        for sname, stt in states.items():
            self.state(sname, stt, labels, perr)
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

    def error_names(self):
        out = ["static const char *error_name(uint64_t code) {", "    switch (code) {"]
        seen = set()
        for name, value in self.prog.errors.items():
            if value in seen:
                continue
            seen.add(value)
            out.append(f"    case {int(value)}ULL: return {c_string(name)};")
        out += ["    default: return \"(unknown error)\";", "    }", "}"]
        return "\n".join(out)

    def fail(self, code):
        return f"{{ perr = {code}; goto P_err; }}"

    def state(self, sname, stt, labels, perr):
        w = self.w
        where = f"parser state {sname}"
        x = ExprC(self.cg, where)
        prims = Prims(self.cg, where, ctx=PARSER_CTX)
        too_short = self.fail(perr["PacketTooShort"])
        w(f"{labels[sname]}: /* {sname} */")
        w("    if (UNLIKELY(++steps > bound)) goto P_loop;")
        w(f"    RT_TRACE(sw, \"Parser 'parser' entering state '%s'\", {c_string(sname)});")
        for op in stt.get("parser_ops", []):
            kind = op.get("op")
            ps = op.get("parameters", [])
            if kind == "extract":
                t, v = ps[0].get("type"), ps[0].get("value")
                if t == "regular":
                    h = self.layout.headers.get(v)
                    if h is None:
                        raise NativeUnsupported(f"{where}: extract of unknown header {v!r}")
                    nb = self.codecs.ensure(h.htype, where)
                    w(f"    if (n - off < {nb}u) {too_short}")
                    w(f"    RT_TRACE(sw, \"Extracting header '%s'\", {c_string(v)});")
                    w(f"    ext_{h.htype.cname}(&st->{h.access}, d + off); st->{h.access}.valid = 1; off += {nb};")
                elif t == "stack":
                    cs = self.layout.stacks.get(v)
                    if cs is None:
                        raise NativeUnsupported(f"{where}: extract to unknown header stack {v!r}")
                    nb = self.codecs.ensure(cs.htype, where)
                    w(f"    {{ uint32_t k_ = st->{cs.next};")
                    w(f"      if (k_ >= {cs.size}u) {self.fail(perr['StackOutOfBounds'])}")
                    w(f"      if (n - off < {nb}u) {too_short}")
                    w(f"      RT_TRACE(sw, \"Extracting header '%s[%u]'\", {c_string(v)}, k_);")
                    w(f"      ext_{cs.htype.cname}(&st->{cs.array}[k_], d + off); st->{cs.array}[k_].valid = 1;")
                    w(f"      st->{cs.next} = k_ + 1; off += {nb}; }}")
                else:
                    raise NativeUnsupported(f"{where}: extract target type {t!r}")
            elif kind == "set":
                lv = x.lvalue(ps[0])
                src = ps[1]
                if src.get("type") == "lookahead":
                    bo, bw = src["value"]
                    code, ct = self.peek(bo, bw, too_short)
                    lo_hi = (0, (1 << bw) - 1)
                    w(f"    {{ {'wide_t' if ct == 'w' else 'uint64_t'} v_;")
                    w(f"      {code}")
                    w(f"      {x.store(lv, {'type': '$c', 'code': 'v_', 'ct': ct, 'lo': lo_hi[0], 'hi': lo_hi[1]})} }}")
                else:
                    x.uses_index = False
                    w("    " + x.store(lv, src))
                    if x.uses_index:
                        w(f"    if (UNLIKELY(sw->abort)) {{ {PARSER_CTX.drop} }}")
            elif kind == "verify":
                x.uses_index = False
                cond = x.cond(ps[0])
                code = x.i64_code(ps[1], "verify error code")
                check = f"if (UNLIKELY(sw->abort)) {{ {PARSER_CTX.drop} }} " if x.uses_index else ""
                w(f"    {{ int c_ = {cond}; {check}if (!c_) {self.fail(f'(uint32_t)({code})')} }}")
            elif kind in ("advance", "shift"):
                amount = x.exact(ps[0])
                if amount.lo < 0:
                    raise NativeUnsupported(f"{where}: advance by a possibly negative amount")
                bits = x.as_u64(amount) if kind == "advance" else f"({x.as_u64(amount)} * 8)"
                w(f"    {{ uint64_t k_ = ({bits}) >> 3;")
                w(f"      if ((uint64_t)(n - off) < k_) {too_short} off += (uint32_t)k_; }}")
            elif kind == "primitive":
                body = []
                prims.primitive(ps[0], "    ", body)
                self.lines += body
            else:
                raise NativeUnsupported(f"{where}: parser operation {kind!r}")
        self.transition(sname, stt, labels, x, too_short, where)

    def peek(self, bo, bw, too_short):
        """C statement setting v_ to `bw` bits at bit `bo` after the offset (PacketTooShort if not there)."""
        nb = ((bo & 7) + bw + 7) >> 3
        check = f"if ((uint64_t)off + {bo >> 3}u + {nb}u > n) {too_short}"
        if bw > 64:
            self.cg.need_bits(bw + 1)
            return f"{check} v_ = w_get_bits(d + off + {bo >> 3}, {bo & 7}, {bw});", "w"
        return f"{check} v_ = rt_get_bits(d + off + {bo >> 3}, {bo & 7}, {bw});", "u64"

    def transition(self, sname, stt, labels, x, too_short, where):
        w = self.w
        keys = stt.get("transition_key", [])
        trans = stt.get("transitions", [])

        def target(tt):
            nxt = tt.get("next_state")
            if nxt is None:
                return "P_accept"
            if nxt not in labels:
                raise NativeUnsupported(f"{where}: transition to unknown state {nxt!r}")
            return labels[nxt]

        if not keys or all(tt.get("type") == "default" for tt in trans):
            default = next((tt for tt in trans if tt.get("type") == "default"), None)
            w(f"    goto {target(default) if default else 'P_accept'};")
            return
        parts = []   # (C code, width, is_wide)
        required = 0
        pre = []
        for i, k in enumerate(keys):
            kt, kv = k.get("type"), k.get("value")
            if kt in ("field", "stack_field"):
                lv = x.lvalue(k)
                parts.append((x.pattern(lv), lv.ref.width))
            elif kt == "lookahead":
                bo, bw = kv
                required = max(required, bo // 8 + (bo % 8 + bw + 7) // 8)
                code, ct = self.peek(bo, bw, too_short)
                var = f"la{i}_"
                ctype = "wide_t" if ct == "w" else "uint64_t"
                pre.append(f"{ctype} {var}; {{ {ctype} v_; {code} {var} = v_; }}")
                parts.append((var, bw))
            else:
                raise NativeUnsupported(f"{where}: transition key type {kt!r}")
        total = sum((wd + 7) // 8 * 8 for _, wd in parts)
        wide = total > 64
        if wide:
            self.cg.need_bits(total + 1)
        w("    {")
        if required:
            w(f"    if (n - off < {required}u) {too_short}")
        for line in pre:
            w("    " + line)
        shift = total
        terms = []
        for code, wd in parts:
            shift -= (wd + 7) // 8 * 8
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
            w(f"    RT_TRACE(sw, \"Parser state '%s': key is %0{max(total // 4, 1)}llx\", {c_string(sname)}, "
              f"(unsigned long long)key);")
        for tt in trans:
            ttype = tt.get("type")
            dest = target(tt)
            if ttype == "default":
                w(f"    goto {dest};")
                break
            if ttype == "hexstr":
                val = parse_hexstr(tt["value"])
                mask = parse_hexstr(tt["mask"]) if tt.get("mask") else None
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
            elif ttype == "parse_vset":
                if wide:
                    raise NativeUnsupported(f"{where}: parse value set on a key wider than 64 bits")
                widths = [wd for _, wd in parts]
                full = (1 << sum(widths)) - 1
                mask = _compress(parse_hexstr(tt["mask"]), widths) if tt.get("mask") else full
                name = tt["value"]
                if name not in self.prog.parse_vsets:
                    raise NativeUnsupported(f"{where}: unknown parse value set {name!r}")
                shift = sum(widths)
                cterms = []
                for code, wd in parts:
                    shift -= wd
                    cterms.append(f"(({code} & {(1 << wd) - 1:#x}ULL) << {shift})" if shift else
                                  f"({code} & {(1 << wd) - 1:#x}ULL)")
                ckey = " | ".join(cterms)
                w(f"    if (rt_vset_match(sw, {self.cg.vset_index(name)}, {ckey}, {mask:#x}ULL)) goto {dest};")
            else:
                raise NativeUnsupported(f"{where}: transition type {ttype!r}")
        else:
            w("    goto P_accept;")
        w("    }")


def _c(code):
    from .cexpr import V
    return V(code, "u64", True, 0, (1 << 32) - 1)
