"""Emitting the parser: one function per parse state, and `parse(f, data)` that runs them."""
from .actions import PrimitiveGen, store_code
from .codegen_deparser import DeparserEmitter
from .errors import ProgramError
from .exprs import ExprGen
from .program_loader import parse_hexstr


class ParserLoopError(Exception):
    """The parser visited more states than a terminating parse of this packet can (a loop that
    consumes no input, e.g. a -> b -> a): the packet is dropped, the switch keeps serving."""

    def __init__(self, states):
        super().__init__(f"parser visited {states} states without ending (a loop in the parse graph)")
        self.states = states


class ParserError(Exception):
    """Raised inside generated parser states; carries the error code and bytes parsed so far."""

    def __init__(self, code, offset):
        super().__init__(code)
        self.code = code
        self.offset = offset


def _compress(padded, widths):
    """Select-key value with each field padded to whole bytes -> fields packed at their widths."""
    out = 0
    shift = sum((w + 7) // 8 * 8 for w in widths)
    for w in widths:
        shift -= (w + 7) // 8 * 8
        out = (out << w) | ((padded >> shift) & ((1 << w) - 1))
    return out


def _compressed_key(parts):
    terms = []
    shift = sum(w for _, w in parts)
    for code, w in parts:
        shift -= w
        terms.append(f"({code} << {shift})" if shift else code)
    return "(" + " | ".join(terms) + ")"



class ParserEmitter(DeparserEmitter):
    """Parse states over the header codecs of DeparserEmitter."""

    def emit_parser(self):
        prog = self.prog
        parsers = prog.json.get("parsers", [])
        perr = prog.errors
        pe_slot = prog.fields[("standard_metadata", "parser_error")].slot
        if not parsers:
            self.w("def parse(f, data):\n    return 0")
            return
        parser = parsers[0]
        states = {s["name"]: s for s in parser.get("parse_states", [])}
        idents = {name: self.ident("PS_", name) for name in states}
        tr = self.traced
        for sname, st in states.items():
            where = f"parser state {sname}"
            x = ExprGen(prog, where=where)
            pg = PrimitiveGen(prog, None, where, "return None, off", tr)
            self.w(f"def {idents[sname]}(f, data, off, n):")
            if tr:
                self.w(f"    TR(\"Parser 'parser' entering state '{sname}'\")")
            body = []
            for op in st.get("parser_ops", []):
                kind = op.get("op")
                ps = op.get("parameters", [])
                if kind == "extract":
                    t, v = ps[0].get("type"), ps[0].get("value")
                    if t == "regular":
                        h = prog.headers.get(v)
                        if h is None:
                            raise ProgramError(f"{where}: extract of unknown header {v!r}")
                        nbytes, unpack, _ = self.header_codec(h)
                        body.append(f"    if n - off < {nbytes}: raise PErr({perr['PacketTooShort']}, off)")
                        if tr:
                            body.append(f"    TR(\"Extracting header '{v}'\")")
                        unpack(str(h.vslot), body, "    ")
                        body.append(f"    f[{h.vslot}] = 1")
                        body.append(f"    off += {nbytes}")
                    elif t == "stack":
                        stk = prog.stacks.get(v)
                        if stk is None:
                            raise ProgramError(f"{where}: extract to unknown header stack {v!r}")
                        h = prog.headers[stk.headers[0]]
                        nbytes, unpack, _ = self.header_codec(h)
                        body.append(f"    k = f[{stk.next_slot}]")
                        body.append(f"    if k >= {stk.size}: raise PErr({perr['StackOutOfBounds']}, off)")
                        body.append(f"    if n - off < {nbytes}: raise PErr({perr['PacketTooShort']}, off)")
                        body.append(f"    b = {stk.base} + k * {stk.stride}")
                        if tr:
                            body.append(f"    TR(\"Extracting header '{v}[%d]'\" % k)")
                        unpack("b", body, "    ")
                        body.append("    f[b] = 1")
                        body.append(f"    f[{stk.next_slot}] = k + 1")
                        body.append(f"    off += {nbytes}")
                    else:
                        raise ProgramError(f"{where}: unsupported extract target type {t!r}")
                elif kind == "set":
                    lv = x.lvalue(ps[0])
                    src = ps[1]
                    if src.get("type") == "lookahead":
                        bo, bw = src["value"]
                        body.append(f"    f[{lv.slot}] = {store_code(lv, f'_peek(data, off, n, {bo}, {bw})')}")
                    else:
                        body.append(f"    f[{lv.slot}] = {store_code(lv, x.int_expr(src))}")
                elif kind == "verify":
                    cond = x.cond(ps[0])
                    code = x.int_expr(ps[1])
                    body.append(f"    if not {cond}: raise PErr({code}, off)")
                elif kind in ("advance", "shift"):
                    amount = x.int_expr(ps[0])
                    if kind == "shift":
                        amount = f"({amount}) * 8"
                    body.append(f"    k = ({amount}) >> 3")
                    body.append(f"    if n - off < k: raise PErr({perr['PacketTooShort']}, off)")
                    body.append("    off += k")
                elif kind == "primitive":
                    pg.primitive(ps[0], 4, body)
                else:
                    raise ProgramError(f"{where}: unsupported parser operation {kind!r}")
            for line in body:
                self.w(line)
            # transition
            keys = st.get("transition_key", [])
            trans = st.get("transitions", [])
            if not keys or all(tt.get("type") == "default" for tt in trans):
                nxt = next((tt.get("next_state") for tt in trans if tt.get("type") == "default"), None)
                self.w(f"    return {idents[nxt] if nxt else 'None'}, off")
                continue
            parts = []
            required = 0
            for k in keys:
                kt, kv = k.get("type"), k.get("value")
                if kt in ("field", "stack_field"):
                    lv = x.lvalue(k)
                    parts.append((x.pattern(lv), lv.width))
                elif kt == "lookahead":
                    bo, bw = kv
                    parts.append((f"_peek(data, off, n, {bo}, {bw})", bw))
                    required = max(required, bo // 8 + (bo % 8 + bw + 7) // 8)
                else:
                    raise ProgramError(f"{where}: unsupported transition key type {kt!r}")
            if required:
                self.w(f"    if n - off < {required}: raise PErr({perr['PacketTooShort']}, off)")
            total = sum((w + 7) // 8 * 8 for _, w in parts)
            shift = total
            terms = []
            for code, w in parts:
                shift -= (w + 7) // 8 * 8
                terms.append(f"({code} << {shift})" if shift else code)
            self.w(f"    key = {' | '.join(terms)}")
            if tr:
                self.w(f"    TR(\"Parser state '{sname}': key is %0{total // 4}x\" % key)")
            default = None
            for tt in trans:
                ttype = tt.get("type")
                nxt = idents[tt["next_state"]] if tt.get("next_state") else "None"
                if tt.get("next_state") and tt["next_state"] not in idents:
                    raise ProgramError(f"{where}: transition to unknown state {tt['next_state']!r}")
                if ttype == "default":
                    default = nxt
                    break
                if ttype == "hexstr":
                    val = parse_hexstr(tt["value"])
                    if tt.get("mask"):
                        mask = parse_hexstr(tt["mask"])
                        self.w(f"    if key & {mask} == {val & mask}: return {nxt}, off")
                    else:
                        self.w(f"    if key == {val}: return {nxt}, off")
                elif ttype == "parse_vset":
                    # value-set members are "compressed" (key fields without byte padding)
                    widths = [w for _, w in parts]
                    full = (1 << sum(widths)) - 1
                    mask = _compress(parse_hexstr(tt["mask"]), widths) if tt.get("mask") else full
                    if tt["value"] not in self.prog.parse_vsets:
                        raise ProgramError(f"{where}: unknown parse value set {tt['value']!r}")
                    self.w(f"    if _vset_match(VSETS[{tt['value']!r}], {_compressed_key(parts)}, {mask}): "
                           f"return {nxt}, off")
                else:
                    raise ProgramError(f"{where}: unsupported transition type {ttype!r}")
            self.w(f"    return {default or 'None'}, off")
        init = parser.get("init_state")
        if init not in idents:
            raise ProgramError(f"parser: init_state {init!r} is not a parse state")
        self.w("def _vset_match(vs, key, mask):\n    return any(key & mask & m == v & mask & m for v, m in vs)")
        self.w("def _peek(data, off, n, bo, bw):")
        self.w("    start = off + (bo >> 3); nb = ((bo & 7) + bw + 7) >> 3")
        self.w(f"    if start + nb > n: raise PErr({perr['PacketTooShort']}, off)")
        self.w("    x = int.from_bytes(data[start:start + nb], 'big')")
        self.w("    return (x >> (nb * 8 - (bo & 7) - bw)) & ((1 << bw) - 1)")
        # a terminating parse visits each state at most once per byte it consumes or per stack
        # element it fills, plus once more: anything beyond that bound is a loop
        slack = 256 + len(states) + sum(s.size for s in prog.stacks.values())
        self.w("def parse(f, data):")
        self.w(f"    n = len(data); off = 0; st = {idents[init]}; left = n + {slack}")
        if tr:
            self.w("    TR(\"Parser 'parser': start\")")
        self.w("    try:")
        self.w("        while st is not None:")
        self.w("            left -= 1")
        self.w(f"            if left < 0: raise PLoop(n + {slack})")
        self.w("            st, off = st(f, data, off, n)")
        self.w("    except PErr as e:")
        self.w(f"        f[{pe_slot}] = e.code; off = e.offset")
        if tr:
            self.w("        TR('Exception while parsing: %s' % ERRNAMES.get(e.code, e.code))")
            self.w("    TR(\"Parser 'parser': end (%d bytes parsed)\" % off)")
        self.w("    return off")
        self.w(f"ERRNAMES = {({v: k for k, v in perr.items()})!r}")

    # ---- deparser ----------------------------------------------------------------------------
