"""Per-feature behaviour on P4 programs (tests/p4sim/engine/programs/*.p4) compiled by p4sim-compile.

The programs are compiled once per session.  Expected values are computed here in Python from the
P4 semantics (P4_16 spec + v1model), independently of the engine.
"""
import pathlib
import struct
import subprocess
import sys
import zlib

import pytest

from p4sim.engine import Switch

from .checksum_reference import crc16_arc, ones_sum

PROGRAMS = pathlib.Path(__file__).parent / "programs"
REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("engine-programs")
    cache = {}

    def get(name):
        if name not in cache:
            out = out_dir / f"{name}.json"
            r = subprocess.run([sys.executable, "-m", "p4sim.compile", "-o", str(out),
                                "--p4runtime-files", str(out_dir / f"{name}.p4info.txtpb"),
                                str(PROGRAMS / f"{name}.p4")], capture_output=True, text=True, cwd=REPO,
                               timeout=300)
            if r.returncode != 0:
                pytest.fail(f"p4sim-compile failed on {name}.p4:\n{r.stderr}")
            cache[name] = out
        return Switch(cache[name])
    return get


def one(sw, port, frame):
    out = sw.process(port, frame)
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error
    assert len(out) == 1, out
    return out[0]


# ---- arith.p4 -------------------------------------------------------------------------------------
def s8(x):
    return ((x + 128) & 0xFF) - 128


@pytest.mark.parametrize("a,b,c,s,t", [(250, 10, 0xABCD, 100, 100), (3, 200, 0, -100, -100),
                                       (0x80, 0x7F, 0x0001, -1, 2), (0, 0, 0xFFFF, 127, -128)])
def test_arith(compiled, a, b, c, s, t):
    sw = compiled("arith")
    frame = bytes([a, b]) + c.to_bytes(2, "big") + bytes([s & 0xFF, t & 0xFF])
    port, data = one(sw, 0, frame)
    assert port == 1 and data[:6] == frame
    (add, sub, mul, shl, shr, sl, concat, sadd, ssat, usat, usub, lt, neg, down, up, sext, tern,
     logic) = struct.unpack(">BBHBBBHbbBBBBBHhBB", data[6:])
    assert add == (a + b) & 0xFF
    assert sub == (a - b) & 0xFF
    assert mul == (a * b) & 0xFFFF
    assert shl == (a << 3) & 0xFF and shr == a >> 3
    assert sl == (c >> 4) & 0xFF
    assert concat == (a << 8) | b
    assert sadd == s8(s + t)
    assert ssat == max(-128, min(127, s + t))
    assert usat == min(255, a + b)
    assert usub == max(0, a - b)
    assert lt == (1 if s < t else 0)
    assert neg == (~a) & 0xFF
    assert down == c & 0xFF and up == a
    assert sext == s
    assert tern == (a if (a > b and c != 0) else b)
    assert logic == (a & 0xF0) | (b ^ 0x0F)


# ---- stacks.p4 ------------------------------------------------------------------------------------
def tag(val, bos):
    return bytes([(val << 1) | bos])


def info(data, offset):
    return tuple(data[offset:offset + 5])  # err, path, peek, depth


@pytest.mark.parametrize("kind", [0x10, 0x1F])
def test_stack_next_last_and_masked_select(compiled, kind):
    sw = compiled("stacks")
    frame = bytes([kind, 0]) + tag(1, 0) + tag(2, 0) + tag(3, 1) + b"payload"
    port, data = one(sw, 4, frame)
    assert port == 4
    assert data[:5] == frame[:5]
    assert info(data, 5)[:4] == (0, 3, 0, 3)
    assert data[10:] == b"payload"


def test_stack_out_of_bounds_is_reported_not_dropped(compiled):
    frame = bytes([0x10, 0]) + tag(1, 0) + tag(2, 0) + tag(3, 0) + tag(4, 0) + tag(5, 1) + b"xy"
    _port, data = one(compiled("stacks"), 1, frame)
    assert data[:6] == frame[:6]               # all four tags extracted stay valid
    assert info(data, 6)[:2] == (3, 4)         # StackOutOfBounds, four extracts ran
    assert data[11:] == frame[6:]


def test_packet_too_short_keeps_headers(compiled):
    _port, data = one(compiled("stacks"), 1, bytes([0x10, 0]) + tag(1, 0))
    assert data[:3] == bytes([0x10, 0]) + tag(1, 0)
    assert info(data, 3)[:2] == (1, 1)


def test_verify_raises_a_program_error(compiled):
    _port, data = one(compiled("stacks"), 1, bytes([0xFF, 0]) + b"zz")
    assert info(data, 2)[0] == 9
    assert data[7:] == b"zz"


def test_range_select_and_lookahead(compiled):
    sw = compiled("stacks")
    port, data = one(sw, 1, bytes([0x25, 0]) + bytes([0xA3]) + tag(1, 1)[:0] + b"\x00")
    # lookahead<bit<4>> == 0xA -> tags: extracts 0xA3 as a tag (bos = 1)
    assert info(data, 3)[:3] == (0, 1, 0xA3)
    port, data = one(sw, 1, bytes([0x25, 0]) + b"\x31rest")
    assert info(data, 2)[:3] == (0, 0, 0x31)
    assert data[7:] == b"\x31rest"
    _port, data = one(sw, 1, bytes([0x30, 0]) + b"\xa1")    # 0x30 is outside 0x20..0x2f: accept
    assert info(data, 2)[:3] == (0, 0, 0)


def test_push_and_pop_front(compiled):
    sw = compiled("stacks")
    port, data = one(sw, 1, bytes([0x11, 0]) + tag(1, 0) + tag(2, 1))
    assert data[2:5] == tag(0x55, 0) + tag(1, 0) + tag(2, 1)
    assert info(data, 5)[3] == 3
    port, data = one(sw, 1, bytes([0x12, 0]) + tag(1, 0) + tag(2, 1))
    assert data[2:3] == tag(2, 1)
    assert info(data, 3)[3] == 1
    _port, data = one(sw, 1, bytes([0x13, 0]) + tag(1, 0) + tag(2, 1))
    assert data[2:4] == tag(1, 0) + tag(0x7F, 1)


# ---- v1model_tm.p4 --------------------------------------------------------------------------------
def tm_frame(op):
    return bytes([op]) + bytes(8) + b"payload"  # h_t is 9 bytes


def tm_decode(data):
    op, itype, inport, keep, rid, eport = struct.unpack(">BBHBHH", data[:9])
    return {"op": op, "itype": itype, "inport": inport, "keep": keep, "rid": rid, "eport": eport,
            "rest": data[9:]}


def test_tm_unicast_and_drop(compiled):
    sw = compiled("v1model_tm")
    port, data = one(sw, 1, tm_frame(1))
    assert port == 2 and tm_decode(data)["itype"] == 0
    assert sw.process(1, tm_frame(7)) == []


def test_tm_multicast_rid(compiled):
    sw = compiled("v1model_tm")
    sw.mc_group_set(1, [(1, 11), (4, 44)])
    out = sw.process(2, tm_frame(2))
    assert [(p, tm_decode(d)["itype"], tm_decode(d)["rid"], tm_decode(d)["eport"]) for p, d in out] == \
        [(1, 5, 11, 1), (4, 5, 44, 4)]


def test_tm_ingress_clone_preserving_field_list(compiled):
    sw = compiled("v1model_tm")
    sw.clone_session_set(5, [(4, 0)])
    out = sorted(sw.process(1, tm_frame(3)))
    assert [p for p, _ in out] == [2, 4]
    assert tm_decode(out[0][1])["itype"] == 0
    # I2E clone: the packet as received, parsed again (ingress changes and metadata are gone), run
    # through egress: instance_type 1, egress_port and egress_rid from the clone session
    clone = tm_decode(out[1][1])
    assert (clone["op"], clone["itype"], clone["inport"], clone["keep"], clone["rid"], clone["eport"]) == \
        (3, 1, 0, 0, 0, 4)
    assert clone["rest"] == b"payload"


def test_tm_egress_clone_preserving_field_list(compiled):
    sw = compiled("v1model_tm")
    sw.clone_session_set(5, [(4, 9)])
    out = sorted(sw.process(1, tm_frame(6)))
    assert [p for p, _ in out] == [2, 4]
    clone = tm_decode(out[1][1])
    assert (clone["itype"], clone["rid"], clone["eport"], clone["keep"]) == (2, 9, 4, 0x44)


def test_tm_resubmit_preserving_field_list(compiled):
    port, data = one(compiled("v1model_tm"), 2, tm_frame(4))
    v = tm_decode(data)
    assert port == 3
    # ingress saw instance_type 6 and ingress_port 0; egress sees a unicast packet (instance_type 0)
    assert (v["itype"], v["inport"], v["keep"]) == (0, 0, 0x55)


def test_tm_recirculate_preserving_field_list(compiled):
    port, data = one(compiled("v1model_tm"), 2, tm_frame(5))
    v = tm_decode(data)
    assert port == 3
    assert (v["itype"], v["inport"], v["keep"]) == (0, 0, 0x66)


def test_tm_truncate(compiled):
    port, data = one(compiled("v1model_tm"), 1, tm_frame(8))
    assert (port, len(data)) == (2, 6)


# ---- checksum_hash.p4 -----------------------------------------------------------------------------
def ip_header(ttl, ident=0x1234, src=0xC0A80001, dst=0x0A000002, csum=None):
    hdr = struct.pack(">BBHHHBBHII", 0x45, 0, 20, ident, 0, ttl, 17, 0, src, dst)
    c = 0xFFFF - ones_sum(hdr) if csum is None else csum
    return hdr[:10] + struct.pack(">H", c) + hdr[12:]



@pytest.mark.parametrize("good", [True, False])
def test_checksums_and_hashes(compiled, good):
    sw = compiled("checksum_hash")
    frame = ip_header(64, csum=None if good else 0xBEEF)
    _port, data = one(sw, 1, frame)
    assert data[:20] == ip_header(63)
    crc16, crc32, ident, csum, err = struct.unpack(">HIHHB", data[20:])
    key = struct.pack(">II", 0xC0A80001, 0x0A000002)
    assert crc16 == crc16_arc(key)
    assert crc32 == zlib.crc32(key)
    assert ident == 100 + 0x1234 % 1000
    assert csum == 0xFFFF - ones_sum(key)
    assert err == (0 if good else 1)
