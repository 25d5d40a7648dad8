"""Compile a Program once into Python source (parser, controls, actions, checksums, deparser).

The generated module works on the flat slot list `f` (see program.py).  Table lookups go through
`tables.Table` objects placed in the namespace, so control-plane changes never need recompiling.
A traced variant (with `TR(...)` calls) is generated only when a trace callback is set.

Backend seam: `Switch` only needs an object like `Compiled` -- parse(f, data) -> bytes parsed,
verify_checksums(f, payload), ingress(f), egress(f), update_checksums(f, payload), deparse(f) ->
header bytes, plus `actions` {id: fn(f, args)} and `nodes` {name: fn} for binding table entries.
A native backend can provide the same over the same slot layout.
"""
import random
import struct

from . import hashes
from .actions import PrimitiveGen, fmt_log, reg_get, stk_pop, stk_push, store_code
from .errors import ProgramError
from .exprs import RUNTIME_HELPERS, ExprGen
from .program import parse_hexstr


class ParserError(Exception):
    """Raised inside generated parser states; carries the error code and bytes parsed so far."""

    def __init__(self, code, offset):
        super().__init__(code)
        self.code = code
        self.offset = offset


class AssertFail(Exception):
    """An assert/assume primitive failed."""


_STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def _ident(prefix, name, used):
    base = prefix + "".join(c if c.isalnum() else "_" for c in name)
    ident = base
    n = 0
    while ident in used:
        n += 1
        ident = f"{base}_{n}"
    used.add(ident)
    return ident


class Compiled:
    """The namespace of one compiled program: call `parse`, `ingress`, `egress`, `deparse`, ..."""

    def __init__(self, ns, source):
        self.ns = ns
        self.source = source
        self.parse = ns["parse"]
        self.verify_checksums = ns["verify_checksums"]
        self.update_checksums = ns["update_checksums"]
        self.ingress = ns["run_ingress"]
        self.egress = ns["run_egress"]
        self.deparse = ns["deparse"]
        self.actions = ns["ACTIONS"]
        self.nodes = ns["NODES"]


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


class CodeGen:
    def __init__(self, prog, tables, registers, counters, drop_port, traced=False, trace_fn=None,
                 vsets=None, meters=None):
        self.prog = prog
        self.tables = tables          # name -> tables.Table
        self.registers = registers    # name -> list
        self.counters = counters      # name -> (packets list, bytes list)
        self.drop_port = drop_port
        self.traced = traced
        self.trace_fn = trace_fn
        self.vsets = vsets if vsets is not None else {}  # name -> list of (value, mask), shared
        self.meters = meters if meters is not None else {}  # name -> meters.MeterArray, shared
        self.lines = []
        self.used = set()
        self.structs = {}

    # ---- entry point -----------------------------------------------------------------------
    def build(self):
        try:
            return self._build()
        except RecursionError:
            raise ProgramError("program too deeply nested to compile (expressions or control flow)") from None
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ProgramError(f"BMv2 JSON: malformed or unsupported content "
                               f"({type(exc).__name__}: {exc})") from None

    def _build(self):
        prog = self.prog
        ns = dict(RUNTIME_HELPERS)
        ns.update({
            "PErr": ParserError, "AssertFail": AssertFail, "DROP_PORT": self.drop_port,
            "_stk_push": stk_push, "_stk_pop": stk_pop, "_reg_get": reg_get, "_fmt_log": fmt_log,
            "_randint": random.randint, "TR": self.trace_fn or (lambda line: None), "VSETS": self.vsets,
            "_ONE_ZEROS": [[1] + [0] * n for n in range(0, 1 + max(
                [len(h.fields) for h in prog.headers.values()] or [0]))],
        })
        for reg in prog.registers.values():
            ns[f"R_{reg.id}"] = self.registers[reg.name]
        for c in prog.counters.values():
            if not c.direct:
                ns[f"CP_{c.id}"], ns[f"CB_{c.id}"] = self.counters[c.name]
        for m in prog.meters.values():
            if m.name in self.meters:
                ns[f"M_{m.id}"] = self.meters[m.name]
        for t in self.tables.values():
            ns[f"T_{t.info.id}"] = t
        self.emit_actions()
        self.emit_calculations(ns)
        self.emit_parser()
        self.emit_deparser()
        for pipe_name in ("ingress", "egress"):
            self.emit_pipeline(pipe_name)
        source = "\n".join(self.lines) + "\n"
        for name, s in self.structs.items():
            ns[name] = s
        try:
            code = compile(source, "<p4sim-engine>", "exec")
        except SyntaxError as exc:  # a bug in the generator, never the user's
            raise ProgramError(f"internal error compiling the program: {exc}") from None
        exec(code, ns)  # noqa: S102 - source this module generated from the loaded program
        return Compiled(ns, source)

    def w(self, line=""):
        self.lines.append(line)

    # ---- actions ---------------------------------------------------------------------------
    def emit_actions(self):
        self.w("ACTIONS = {}")
        for a in self.prog.actions.values():
            prims = self.prog_action_json(a.id).get("primitives", [])
            gen = PrimitiveGen(self.prog, None, f"action {a.name}", "return 1", self.traced)
            self.w(f"def A_{a.id}(f, p):")
            for line in gen.body(prims, 4):
                self.w(line)
            self.w(f"ACTIONS[{a.id}] = A_{a.id}")

    def prog_action_json(self, aid):
        if not hasattr(self, "_action_json"):
            self._action_json = {a["id"]: a for a in self.prog.json.get("actions", [])}
        return self._action_json[aid]

    # ---- calculations (hashes, checksums) ----------------------------------------------------
    def emit_calculations(self, ns):
        prog = self.prog
        ns["CALC"] = {}
        x = ExprGen(prog, where="calculations")
        for calc in prog.json.get("calculations", []):
            name = calc["name"]
            algo = hashes.algorithm(calc.get("algo", ""), f"calculation {name}")
            fn = _ident("C_", name, self.used)
            ns[fn + "_algo"] = algo
            parts = []
            dynamic = False
            last_header = None
            for inp in calc.get("input", []):
                t = inp.get("type")
                if t == "field":
                    lv = x.field_info(*inp["value"])
                    parts.append(("v", f"f[{lv.slot}]", lv.width))
                    last_header = inp["value"][0]
                elif t == "hexstr":
                    parts.append(("v", str(parse_hexstr(inp["value"])), int(inp.get("bitwidth", 0))))
                elif t == "header":
                    h = prog.headers[inp["value"]]
                    parts.append(("h", h, 0))
                    dynamic = True
                    last_header = h.name
                elif t == "payload":
                    parts.append(("p", last_header, 0))
                    dynamic = True
                else:
                    raise ProgramError(f"calculation {name}: unsupported input type {t!r}")
            self.w(f"def {fn}(f, pl):")
            if not dynamic:
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
        calcs = {c["name"] for c in prog.json.get("calculations", [])}
        cks = prog.json.get("checksums", [])
        for kind in ("verify", "update"):
            self.w(f"def {kind}_checksums(f, pl):")
            body = []
            for ck in cks:
                if not ck.get(kind, True):
                    continue
                if ck.get("calculation") not in calcs:
                    raise ProgramError(f"checksum {ck.get('name')}: unknown calculation {ck.get('calculation')!r}")
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

    # ---- header (de)serialization ------------------------------------------------------------
    def header_codec(self, h):
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
        idents = {name: _ident("PS_", name, self.used) for name in states}
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
                    (1 << lv.width) - 1
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
        self.w("def parse(f, data):")
        self.w(f"    n = len(data); off = 0; st = {idents[init]}")
        if tr:
            self.w("    TR(\"Parser 'parser': start\")")
        self.w("    try:")
        self.w("        while st is not None:")
        self.w("            st, off = st(f, data, off, n)")
        self.w("    except PErr as e:")
        self.w(f"        f[{pe_slot}] = e.code; off = e.offset")
        if tr:
            self.w("        TR('Exception while parsing: %s' % ERRNAMES.get(e.code, e.code))")
            self.w("    TR(\"Parser 'parser': end (%d bytes parsed)\" % off)")
        self.w("    return off")
        self.w(f"ERRNAMES = {({v: k for k, v in perr.items()})!r}")

    # ---- deparser ----------------------------------------------------------------------------
    def emit_deparser(self):
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
            h = prog.headers.get(name)
            if h is None:
                raise ProgramError(f"deparser: unknown header {name!r}")
            _, _, pack = self.header_codec(h)
            self.w(f"    if f[{h.vslot}]: o.append({pack(str(h.vslot))})")
        self.w("    return b''.join(o)")
        self.w(f"DEPARSE_ORDER = {order!r}")
        self.w("def ser_after(f, name):")
        self.w("    i = DEPARSE_ORDER.index(name) + 1 if name in DEPARSE_ORDER else len(DEPARSE_ORDER)")
        self.w("    return b''.join(SER[h](f) for h in DEPARSE_ORDER[i:] if f[HDR_VSLOT[h]])")
        self.w(f"HDR_VSLOT = {({h.name: h.vslot for h in prog.headers.values()})!r}")

    # ---- control pipelines -------------------------------------------------------------------
    # nodes inlined along one path of one function: bounds both the nesting of ifs (Python allows
    # ~100 levels) and the generator's recursion
    MAX_INLINE_DEPTH = 40

    def emit_pipeline(self, pipe_name):
        """One function per control-flow node that needs one; every other node is inlined into its
        only predecessor, so straight-line code and if/else chains run without dispatch."""
        prog = self.prog
        pipes = {p["name"]: p for p in prog.json.get("pipelines", [])}
        self.w("NODES = globals().setdefault('NODES', {})")
        pipe = pipes.get(pipe_name)
        if pipe is None:
            self.w(f"def run_{pipe_name}(f):\n    pass")
            return
        nodes = {}
        for t in pipe.get("tables", []):
            nodes[t["name"]] = ("table", t)
        for c in pipe.get("conditionals", []):
            nodes[c["name"]] = ("cond", c)
        for ac in pipe.get("action_calls", []) or []:
            nodes[ac["name"]] = ("call", ac)
        names = {n: _ident("N_", n, self.used) for n in nodes}

        def check(name):
            if name is not None and name not in nodes:
                raise ProgramError(f"pipeline {pipe_name}: next node {name!r} does not exist")
            return name

        # fixed successors (known at compile time) and dynamic ones (chosen by a table entry)
        fixed, dynamic = {}, set()
        for name, (kind, j) in nodes.items():
            if kind == "cond":
                fixed[name] = [check(j.get("true_next")), check(j.get("false_next"))]
            elif kind == "call":
                fixed[name] = [check(j.get("next_node"))]
            else:
                table = self.tables[name]
                for nxt in list(table.info.next_tables.values()) + [table.info.base_default_next]:
                    check(nxt)
                if self._inline_table(table.info):
                    fixed[name] = [check(table.next_name_for(table.info.default_entry.action, hit=False))]
                else:
                    fixed[name] = []
                    for nxt in list(table.info.next_tables.values()) + [table.info.base_default_next]:
                        if check(nxt) is not None:
                            dynamic.add(nxt)
        indegree = {}
        for succs in fixed.values():
            for sname in succs:
                if sname is not None:
                    indegree[sname] = indegree.get(sname, 0) + 1
        init = check(pipe.get("init_table"))
        need = {n for n in nodes if indegree.get(n, 0) != 1} | dynamic
        if init is not None:
            need.add(init)
        queue = sorted(need)
        done = set()
        while queue:
            name = queue.pop()
            if name in done:
                continue
            done.add(name)
            self.w(f"def {names[name]}(f):")
            lines = []
            forced = []
            self._node_body(name, nodes, names, need, 4, 0, lines, forced)
            for line in lines:
                self.w(line)
            self.w(f"NODES[{name!r}] = {names[name]}")
            for fname in forced:
                need.add(fname)
                queue.append(fname)
        self.w(f"def run_{pipe_name}(f):")
        if self.traced:
            self.w(f"    TR(\"Pipeline '{pipe_name}': start\")")
        self.w(f"    node = {names[init] if init else 'None'}")
        self.w("    while node is not None:")
        self.w("        node = node(f)")
        if self.traced:
            self.w(f"    TR(\"Pipeline '{pipe_name}': end\")")

    def _inline_table(self, info):
        """A keyless table whose default entry the control plane cannot change: p4c's wrapper
        around a direct action call, compiled as the action body itself."""
        de = info.default_entry
        return (not info.keys and de is not None and not info.direct_counter and
                (de.action_entry_const or (de.action_const and not self.prog.actions[de.action_id].params)))

    def _goto(self, target, nodes, names, need, ind, depth, out, forced):
        pad = " " * ind
        if target is None:
            out.append(f"{pad}return None")
        elif target in need or depth >= self.MAX_INLINE_DEPTH:
            if target not in need:
                forced.append(target)
                need.add(target)
            out.append(f"{pad}return {names[target]}")
        else:
            self._node_body(target, nodes, names, need, ind, depth, out, forced)

    def _node_body(self, name, nodes, names, need, ind, depth, out, forced):
        prog = self.prog
        tr = self.traced
        pad = " " * ind
        kind, j = nodes[name]
        if kind == "cond":
            cond = ExprGen(prog, where=f"condition {name}").cond(j["expression"])
            if tr:
                frag = (j.get("source_info") or {}).get("source_fragment")
                label = f"Condition '{name}'" + (f" ({frag})" if frag else "")
                out.append(f"{pad}r = {cond}")
                out.append(f"{pad}TR({label!r} + (' is true' if r else ' is false'))")
                cond = "r"
            out.append(f"{pad}if {cond}:")
            self._goto(j.get("true_next"), nodes, names, need, ind + 4, depth + 1, out, forced)
            self._goto(j.get("false_next"), nodes, names, need, ind, depth + 1, out, forced)
            return
        if kind == "call":
            out.append(f"{pad}if A_{j['action_id']}(f, ()): return None")
            self._goto(j.get("next_node"), nodes, names, need, ind, depth + 1, out, forced)
            return
        table = self.tables[name]
        info = table.info
        if self._inline_table(info):
            de = info.default_entry
            if tr:
                out.append(f"{pad}TR(\"Applying table '{info.name}'\")")
                args = ", ".join(hex(a) for a in de.args)
                out.append(f"{pad}TR({f'Action entry is {de.action} - {args}'!r})")
            gen = PrimitiveGen(prog, lambda i, a=de.args: str(a[i]), f"action {de.action}", "return None", tr)
            out.extend(gen.body(self.prog_action_json(de.action_id).get("primitives", []), ind))
            self._goto(table.next_name_for(de.action, hit=False), nodes, names, need, ind, depth + 1, out,
                       forced)
            return
        tv = f"T_{info.id}"
        out.append(f"{pad}e = {tv}.lookup({self.key_expr(info)})" if info.keys else f"{pad}e = {tv}.default")
        if tr:
            out.append(f"{pad}TR(\"Applying table '{info.name}'\")")
            out.append(f"{pad}TR({tv}.describe_hit(e))")
        if info.direct_counter:
            plen = prog.fields[("standard_metadata", "packet_length")].slot
            out.append(f"{pad}c = e.counter")
            out.append(f"{pad}if c is not None: c[0] += 1; c[1] += f[{plen}]")
        out.append(f"{pad}if e.fn(f, e.data): return None")
        out.append(f"{pad}return e.next")

    def key_expr(self, info):
        x = ExprGen(self.prog, where=f"table {info.name}")
        total = sum(k.width for k in info.keys)
        shift = total
        terms = []
        for k in info.keys:
            shift -= k.width
            if k.match_type == "valid":
                code = f"f[{self.prog.headers[k.target].vslot}]"
            else:
                code = x.pattern(x.field_info(*k.target))
            if k.mask is not None:
                code = f"({code} & {k.mask})"
            terms.append(f"({code} << {shift})" if shift else code)
        return " | ".join(terms)
