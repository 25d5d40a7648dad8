"""Random expressions: what the compiled program computes on p4sim's engine must equal P4's
width/wraparound semantics computed in Python (and constant folding must agree with run time)."""
import random
import struct

import pytest
from compiler_helpers import compile_text, program

N_EXPR = 40
SEEDS = [int(s) for s in __import__("os").environ.get("P4SIM_SEM_SEEDS", "1,2,3").split(",")]


def wrap(v, w, signed):
    v &= (1 << w) - 1
    if signed and v >> (w - 1):
        v -= 1 << w
    return v


class Gen:
    """Random typed expressions over fields a, b (bit<8>), c (bit<16>) and s, t (int<8>)."""

    def __init__(self, rnd, env):
        self.r = rnd
        self.env = env

    def bits(self, w, signed, depth):
        r = self.r
        if depth == 0 or r.random() < 0.25:
            leaves = {(8, False): ["a", "b"], (16, False): ["c"], (8, True): ["s", "t"]}[(w, signed)]
            if r.random() < 0.3:
                v = r.randrange(1 << w)
                v = wrap(v, w, signed)
                lit = f"{w}{'s' if signed else 'w'}{abs(v)}"
                return (f"(-{lit})" if v < 0 else lit), v
            name = r.choice(leaves)
            return f"hdr.n.{name}", self.env[name]
        op = r.choice(["+", "-", "*", "&", "|", "^", "|+|", "|-|", "~", "neg", "<<", ">>", "?:", "cast", "slice"])
        if op in ("~", "neg"):
            x, xv = self.bits(w, signed, depth - 1)
            return (f"(~{x})", wrap(~xv, w, signed)) if op == "~" else (f"(-{x})", wrap(-xv, w, signed))
        if op in ("<<", ">>"):
            x, xv = self.bits(w, signed, depth - 1)
            k = r.randrange(0, w + 2)
            return f"({x} {op} {k})", wrap(xv << k if op == "<<" else xv >> k, w, signed)
        if op == "?:":
            c, cv = self.cond(depth - 1)
            x, xv = self.bits(w, signed, depth - 1)
            y, yv = self.bits(w, signed, depth - 1)
            return f"({c} ? {x} : {y})", xv if cv else yv
        if op == "cast":
            if signed:
                x, xv = self.bits(8, False, depth - 1)
                return f"((int<8>){x})", wrap(xv, 8, True)
            if w == 8:
                x, xv = self.bits(16, False, depth - 1)
                return f"((bit<8>){x})", xv & 0xFF
            sx = r.random() < 0.5
            x, xv = self.bits(8, sx, depth - 1)
            if sx:
                return f"((bit<16>)(bit<8>){x})", xv & 0xFF
            return f"((bit<16>){x})", xv
        if op == "slice":
            if signed or w != 8:
                x, xv = self.bits(8, False, depth - 1)
                y, yv = self.bits(8, False, depth - 1)
                if w == 16 and not signed:
                    return f"({x} ++ {y})", (xv << 8) | yv
                return self.bits(w, signed, depth - 1)
            x, xv = self.bits(16, False, depth - 1)
            lo = r.randrange(0, 9)
            return f"({x}[{lo + 7}:{lo}])", (xv >> lo) & 0xFF
        x, xv = self.bits(w, signed, depth - 1)
        y, yv = self.bits(w, signed, depth - 1)
        if op == "|+|" or op == "|-|":
            v = xv + yv if op == "|+|" else xv - yv
            lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
            return f"({x} {op} {y})", max(lo, min(hi, v))
        v = {"+": xv + yv, "-": xv - yv, "*": xv * yv, "&": xv & yv, "|": xv | yv, "^": xv ^ yv}[op]
        return f"({x} {op} {y})", wrap(v, w, signed)

    def cond(self, depth):
        r = self.r
        w, signed = r.choice([(8, False), (16, False), (8, True)])
        x, xv = self.bits(w, signed, max(0, depth - 1))
        y, yv = self.bits(w, signed, max(0, depth - 1))
        op = r.choice(["==", "!=", "<", "<=", ">", ">="])
        v = {"==": xv == yv, "!=": xv != yv, "<": xv < yv, "<=": xv <= yv, ">": xv > yv, ">=": xv >= yv}[op]
        if r.random() < 0.3:
            c2, v2 = self.cond(0)
            j = r.choice(["&&", "||"])
            return f"(({x} {op} {y}) {j} {c2})", (v and v2) if j == "&&" else (v or v2)
        if r.random() < 0.2:
            return f"(!({x} {op} {y}))", not v
        return f"({x} {op} {y})", v


@pytest.mark.parametrize("seed", SEEDS)
def test_random_expressions_match_p4_semantics(tmp_path, seed):
    from p4sim import engine
    rnd = random.Random(seed)
    env = {"a": rnd.randrange(256), "b": rnd.randrange(256), "c": rnd.randrange(65536),
           "s": wrap(rnd.randrange(256), 8, True), "t": wrap(rnd.randrange(256), 8, True)}
    gen = Gen(rnd, env)
    kinds = [rnd.choice([(8, False), (16, False), (8, True)]) for _ in range(N_EXPR)]
    fields, stmts, expected = [], [], []
    for i, (w, signed) in enumerate(kinds):
        e, v = gen.bits(w, signed, 4)
        fields.append(f"{'int' if signed else 'bit'}<{w}> r{i};")
        stmts.append(f"hdr.n.r{i} = {e};")
        expected.append((w, signed, v))
    split = N_EXPR // 2          # half in an action, half straight in the apply block
    text = program(decls="header n_t {{ bit<8> a; bit<8> b; bit<16> c; int<8> s; int<8> t; {} }}".format(" ".join(fields)),
                   hdr_fields="n_t n;",
                   parser="state start { pkt.extract(hdr.eth); pkt.extract(hdr.n); transition accept; }",
                   ingress="action f() {{ {} }} apply {{ f(); {} sm.egress_spec = 1; }}".format(" ".join(stmts[:split]), " ".join(stmts[split:])),
                   deparser="pkt.emit(hdr.eth); pkt.emit(hdr.n);")
    res = compile_text(tmp_path, text)
    sw = engine.Switch(res.bmv2)
    body = struct.pack("!BBHbb", env["a"], env["b"], env["c"], env["s"], env["t"]) + \
        bytes(sum(w // 8 for w, _, _ in expected))
    (_port, out), = sw.process(2, bytes(12) + b"\x12\x34" + body)
    off = 14 + 6
    for i, (w, signed, v) in enumerate(expected):
        raw = int.from_bytes(out[off:off + w // 8], "big")
        off += w // 8
        assert wrap(raw, w, signed) == v, f"r{i} = {stmts[i]}"
