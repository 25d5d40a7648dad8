"""Emitting the parser: one function per parse state, and `parse(f, data)` that runs them."""
from .actions import PrimitiveGen, store_code
from .codegen_deparser import DeparserEmitter
from .exprs import ExprGen
from .ir_parser import Advance, Extract, SetField, Verify, packed_shifts, padded_shifts, parser, vset_mask


class ParserLoopError(Exception):
    """The parser visited more states than a terminating parse of this packet can (a loop that
    consumes no input, e.g. a -> b -> a): the packet is dropped, the switch keeps serving."""

    def __init__(self, states: int) -> None:
        super().__init__(f"parser visited {states} states without ending (a loop in the parse graph)")
        self.states = states


class ParserError(Exception):
    """Raised inside generated parser states; carries the error code and bytes parsed so far."""

    def __init__(self, code: int, offset: int) -> None:
        super().__init__(code)
        self.code = code
        self.offset = offset


def _packed_key(parts: list[tuple[str, int]]) -> str:
    """The select key's fields packed at their own widths, as Python (value-set members)."""
    shifts = packed_shifts([w for _, w in parts])
    return "(" + " | ".join(f"({code} << {sh})" if sh else code for (code, _), sh in zip(parts, shifts)) + ")"


class ParserEmitter(DeparserEmitter):
    """Parse states over the header codecs of DeparserEmitter."""

    def emit_parser(self) -> None:
        prog = self.prog
        perr = prog.errors
        pe_slot = prog.fields[("standard_metadata", "parser_error")].slot
        graph = parser(prog)
        if graph is None:
            self.w("def parse(f, data):\n    return 0")
            return
        states = graph.states
        idents = {name: self.ident("PS_", name) for name in states}
        tr = self.traced
        for sname, st in states.items():
            where = st.where
            x = ExprGen(prog, where=where)
            pg = PrimitiveGen(prog, None, where, "return None, off", tr)
            self.w(f"def {idents[sname]}(f, data, off, n):")
            if tr:
                self.w(f"    TR(\"Parser 'parser' entering state '{sname}'\")")
            body: list[str] = []
            for op in st.ops:
                if isinstance(op, Extract) and op.header is not None:
                    h = prog.headers[op.header]
                    nbytes, unpack, _ = self.header_codec(h)
                    body.append(f"    if n - off < {nbytes}: raise PErr({perr['PacketTooShort']}, off)")
                    if tr:
                        body.append(f"    TR(\"Extracting header '{op.header}'\")")
                    unpack(str(h.vslot), body, "    ")
                    body.append(f"    f[{h.vslot}] = 1")
                    body.append(f"    off += {nbytes}")
                elif isinstance(op, Extract):
                    assert op.stack is not None     # an Extract names a header or a stack
                    stk = prog.stacks[op.stack]
                    nbytes, unpack, _ = self.header_codec(prog.headers[stk.headers[0]])
                    body.append(f"    k = f[{stk.next_slot}]")
                    body.append(f"    if k >= {stk.size}: raise PErr({perr['StackOutOfBounds']}, off)")
                    body.append(f"    if n - off < {nbytes}: raise PErr({perr['PacketTooShort']}, off)")
                    body.append(f"    b = {stk.base} + k * {stk.stride}")
                    if tr:
                        body.append(f"    TR(\"Extracting header '{op.stack}[%d]'\" % k)")
                    unpack("b", body, "    ")
                    body.append("    f[b] = 1")
                    body.append(f"    f[{stk.next_slot}] = k + 1")
                    body.append(f"    off += {nbytes}")
                elif isinstance(op, SetField):
                    lv = x.lvalue(op.target)
                    if op.lookahead is None:
                        value = x.int_expr(op.source)
                    else:
                        value = f"_peek(data, off, n, {op.lookahead[0]}, {op.lookahead[1]})"
                    body.append(f"    f[{lv.slot}] = {store_code(lv, value)}")
                elif isinstance(op, Verify):
                    body.append(f"    if not {x.cond(op.cond)}: raise PErr({x.int_expr(op.error)}, off)")
                elif isinstance(op, Advance):
                    amount = x.int_expr(op.amount)
                    if op.in_bytes:
                        amount = f"({amount}) * 8"
                    body.append(f"    k = ({amount}) >> 3")
                    body.append(f"    if n - off < k: raise PErr({perr['PacketTooShort']}, off)")
                    body.append("    off += k")
                else:
                    pg.primitive(op.call, 4, body)
            for line in body:
                self.w(line)
            self._transition(st, idents, x)
        init = graph.init
        self.w("def _vset_match(vs, key, mask):\n    return any(key & mask & m == v & mask & m for v, m in vs)")
        self.w("def _peek(data, off, n, bo, bw):")
        self.w("    start = off + (bo >> 3); nb = ((bo & 7) + bw + 7) >> 3")
        self.w(f"    if start + nb > n: raise PErr({perr['PacketTooShort']}, off)")
        self.w("    x = int.from_bytes(data[start:start + nb], 'big')")
        self.w("    return (x >> (nb * 8 - (bo & 7) - bw)) & ((1 << bw) - 1)")
        slack = graph.slack     # more states than bytes + slack: a loop
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

    def _transition(self, st, idents, x):
        perr = self.prog.errors

        def target(case):
            return idents[case.next_state] if case.next_state else "None"

        if not st.keys:
            self.w(f"    return {target(st.cases[0])}, off")
            return
        parts = []
        for k in st.keys:
            if k.lookahead is None:
                lv = x.lvalue(k.node)
                parts.append((x.pattern(lv), lv.width))
            else:
                bo, bw = k.lookahead
                parts.append((f"_peek(data, off, n, {bo}, {bw})", bw))
        if st.lookahead_bytes:
            self.w(f"    if n - off < {st.lookahead_bytes}: raise PErr({perr['PacketTooShort']}, off)")
        total, shifts = padded_shifts([w for _, w in parts])
        self.w(f"    key = {' | '.join(f'({code} << {sh})' if sh else code for (code, _), sh in zip(parts, shifts))}")
        if self.traced:
            self.w(f"    TR(\"Parser state '{st.name}': key is %0{total // 4}x\" % key)")
        default = None
        for case in st.cases:
            nxt = target(case)
            if case.kind == "default":
                default = nxt
            elif case.kind == "value" and case.mask is not None:
                self.w(f"    if key & {case.mask} == {case.value & case.mask}: return {nxt}, off")
            elif case.kind == "value":
                self.w(f"    if key == {case.value}: return {nxt}, off")
            else:
                mask = vset_mask(case, [w for _, w in parts])
                self.w(f"    if _vset_match(VSETS[{case.vset!r}], {_packed_key(parts)}, {mask}): return {nxt}, off")
        self.w(f"    return {default or 'None'}, off")

    # ---- deparser ----------------------------------------------------------------------------
