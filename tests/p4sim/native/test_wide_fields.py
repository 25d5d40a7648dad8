"""Fields wider than 64 bits on the native backend: 128-bit addresses as exact, lpm and ternary
keys and action parameters; arithmetic, shifts, comparisons and signed values past 128 bits,
checked against the Python engine (infinite precision) and against known answers."""
import ipaddress
import random

from engine.bmv2 import SM, C, E, F, M, P, Program, R, extract, wrap

from .diff import pair, same_outputs

A, B = int(ipaddress.IPv6Address("2001:db8::1")), int(ipaddress.IPv6Address("2001:db8:ffff::42"))


def h(f):
    return F("h6", f)


def program():
    """h6 = src:128 dst:128 tag:8 big:256; three tables on 128-bit keys, then wide arithmetic."""
    p = Program()
    p.meta(("s", 100, True), ("t", 192))
    p.header("h6", [("src", 128), ("dst", 128), ("tag", 8), ("big", 256)])
    p.state("start", [extract("h6")])
    p.deparse("h6")
    p.action("set_tag", [P("assign", h("tag"), R(0))], [("tag", 8)])
    p.action("set_src", [P("assign", h("src"), R(0))], [("addr", 128)])
    p.action("nop", [])
    p.table("ingress", "by_dst", [("hdr.h6.dst", "exact", ("h6", "dst"))], ["set_tag", "nop"], default="nop",
            base_next="by_prefix")
    p.table("ingress", "by_prefix", [("hdr.h6.dst", "lpm", ("h6", "dst"))], ["set_src", "nop"], default="nop",
            base_next="by_src")
    p.table("ingress", "by_src", [("hdr.h6.src", "ternary", ("h6", "src"))], ["set_tag", "nop"], default="nop",
            base_next="tbl_math")
    p.run("ingress", "math", [
        P("assign", SM("egress_spec"), C(1)),
        # big = (dst << 100) ^ src, wrapped to 256 bits; 100-bit signed difference; 192-bit sum
        P("assign", h("big"), wrap(E("^", E("<<", h("dst"), C(100)), h("src")), 256)),
        P("assign", M("s"), E("two_comp_mod", E("-", h("src"), h("dst")), C(100))),
        P("assign", M("t"), wrap(E("+", E("*", h("src"), C(3)), h("dst")), 192)),
        P("assign", h("src"), wrap(E("+", E(">>", M("t"), C(70)), E("&", M("s"), C((1 << 100) - 1))), 128)),
        P("assign", h("tag"), E("?", h("tag"), wrap(E("+", h("tag"), C(1)), 8),
                                E("b2d", E("d2b", E(">", h("src"), h("dst")))))),
    ])
    return p.build()


def setup(sw):
    sw.table_add("by_dst", {"hdr.h6.dst": "2001:db8::1"}, "set_tag", {"tag": 7})
    sw.table_add("by_dst", {"hdr.h6.dst": B}, "set_tag", {"tag": 9})
    sw.table_add("by_prefix", {"hdr.h6.dst": "2001:db8::/32"}, "set_src", {"addr": "::ffff:1.2.3.4"})
    sw.table_add("by_prefix", {"hdr.h6.dst": "2001:db8:ffff::/48"}, "set_src", {"addr": (1 << 128) - 1})
    sw.table_add("by_src", {"hdr.h6.src": ("::ff00", "::ff00")}, "set_tag", {"tag": 0x55}, priority=10)


def frame(src, dst, tag=0, big=0):
    return src.to_bytes(16, "big") + dst.to_bytes(16, "big") + bytes([tag]) + big.to_bytes(32, "big") + b"pl"


def test_128_bit_keys_hit_exact_lpm_and_ternary_entries():
    py, nat = pair(program(), setup)
    # exact hit (tag 7), then the /32 prefix rewrites src to ::ffff:1.2.3.4
    [(port, out)] = nat.process(1, frame(0, A))
    src, dst = int.from_bytes(out[:16], "big"), int.from_bytes(out[16:32], "big")
    assert (port, dst) == (1, A)
    s = (0xFFFF01020304 - A)
    s = ((s + (1 << 99)) & ((1 << 100) - 1)) - (1 << 99)
    t = (0xFFFF01020304 * 3 + A) & ((1 << 192) - 1)
    assert src == ((t >> 70) + (s & ((1 << 100) - 1))) & ((1 << 128) - 1)
    assert out[32] == 8  # tag 7 + 1
    assert int.from_bytes(out[33:65], "big") == ((A << 100) ^ 0xFFFF01020304) & ((1 << 256) - 1)
    # the longer prefix wins and sets src to all ones
    assert nat.process(1, frame(0, B)) == py.process(1, frame(0, B))
    big = int.from_bytes(nat.process(1, frame(0, B))[0][1][33:65], "big")
    assert big == ((B << 100) ^ ((1 << 128) - 1)) & ((1 << 256) - 1)


def test_wide_arithmetic_matches_the_python_engine():
    rng = random.Random(11)
    specials = [0, 1, A, B, (1 << 128) - 1, 1 << 127, 0xFF00]
    packets = []
    for _ in range(300):
        src = rng.choice(specials + [rng.getrandbits(128)])
        dst = rng.choice(specials + [rng.getrandbits(128)])
        packets.append((1, frame(src, dst, rng.getrandbits(8), rng.getrandbits(256))))
    same_outputs(pair(program(), setup), packets)


def test_wide_register_cells_and_control_plane_values():
    p = Program()
    p.header("h", [("i", 8), ("v", 160)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.register("r", 4, 160)
    p.run("ingress", "rw", [
        P("assign", SM("egress_spec"), C(1)),
        P("register_write", {"type": "register_array", "value": "r"}, F("h", "i"),
          wrap(E("+", F("h", "v"), C(1)), 160)),
        P("register_read", F("h", "v"), {"type": "register_array", "value": "r"}, C(3))])
    py, nat = pair(p.build())
    nat.register_write("r", 3, (1 << 160) - 2)
    py.register_write("r", 3, (1 << 160) - 2)
    packets = [(1, bytes([i]) + (v).to_bytes(20, "big")) for i, v in
               [(0, 5), (3, (1 << 160) - 1), (2, 1 << 159), (9, 7), (3, 41)]]
    same_outputs((py, nat), packets)
    assert nat.register_read("r") == py.register_read("r")
    assert nat.register_read("r", 3) == 42
