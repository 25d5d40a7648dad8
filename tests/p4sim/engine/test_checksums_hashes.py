"""Checksum verification/update (csum16 over IPv4) and hash calculations (crc16, crc32, identity,
csum16) through modify_field_with_hash_based_offset."""
import struct
import zlib

import pytest

from p4sim.engine import Switch

from .bmv2 import SM, C, E, F, P, Program, extract, simple, wrap
from .checksum_reference import crc16_arc, ones_complement_checksum

IP_FIELDS = [("vihl", 8), ("tos", 8), ("len", 16), ("id", 16), ("frag", 16), ("ttl", 8), ("proto", 8),
             ("csum", 16), ("src", 32), ("dst", 32)]


def ipv4(ttl=64, csum=None):
    hdr = struct.pack(">BBHHHBBHII", 0x45, 0, 20, 1, 0, ttl, 17, 0, 0xC0000201, 0x0A000001)
    c = ones_complement_checksum(hdr) if csum is None else csum
    return hdr[:10] + struct.pack(">H", c) + hdr[12:]


def checksum_program():
    p = Program()
    p.header("ip", IP_FIELDS)
    p.state("start", [extract("ip")])
    p.deparse("ip")
    inputs = [{"type": "field", "value": ["ip", f]} for f, _ in IP_FIELDS if f != "csum"]
    p.calculation("calc", "csum16", inputs)
    valid = E("d2b", F("ip", "$valid$"))
    p.checksum("verify_ip", ("ip", "csum"), "calc", verify=True, update=False, cond=valid)
    p.checksum("update_ip", ("ip", "csum"), "calc", verify=False, update=True, cond=valid)
    p.run("ingress", "ing", [P("assign", SM("egress_spec"), C(1)),
                             P("assign", F("ip", "tos"), SM("checksum_error")),
                             P("assign", F("ip", "ttl"), wrap(E("+", F("ip", "ttl"), C(0xFF)), 8))])
    return Switch(p.build())


def test_good_checksum_verifies_and_is_updated_after_ttl_change():
    out = checksum_program().process(1, ipv4(ttl=64) + b"data")
    [(_port, data)] = out
    assert data[1] == 0  # checksum_error
    assert data[8] == 63
    assert data[:20] == ipv4(ttl=63)[:1] + b"\x00" + ipv4(ttl=63)[2:20]
    assert ones_complement_checksum(data[:10] + b"\0\0" + data[12:20]) == int.from_bytes(data[10:12], "big")
    assert data[20:] == b"data"


def test_bad_checksum_sets_checksum_error_without_dropping():
    out = checksum_program().process(1, ipv4(csum=0x1234) + b"data")
    [(_port, data)] = out
    assert data[1] == 1
    assert int.from_bytes(data[10:12], "big") == ones_complement_checksum(data[:10] + b"\0\0" + data[12:20])


@pytest.mark.parametrize("algo,ref,width", [
    ("crc32", zlib.crc32, 32),
    ("crc16", crc16_arc, 16),
    ("identity", lambda b: int.from_bytes(b, "big"), 32),
    ("csum16", None, 16),  # checked below: ones' complement of 0x1234 + 0xabcd
])
def test_hash_calculations(algo, ref, width):
    p = simple([("a", 16), ("b", 16), ("out", 32)], [
        P("modify_field_with_hash_based_offset", F("h", "out"), C(0), {"type": "calculation", "value": "hc"},
          C(1 << width))])
    p.calculation("hc", algo, [{"type": "field", "value": ["h", "a"]}, {"type": "field", "value": ["h", "b"]}])
    sw = Switch(p.build())
    out = sw.process(1, b"\x12\x34\xab\xcd" + bytes(4))
    got = int.from_bytes(out[0][1][4:8], "big")
    if algo == "csum16":
        total = 0x1234 + 0xABCD
        total = (total & 0xFFFF) + (total >> 16)
        assert got == 0xFFFF - total
    else:
        assert got == ref(b"\x12\x34\xab\xcd") & ((1 << width) - 1)


def test_known_crc16_check_value():
    from p4sim.engine.hashes import crc16, crc32
    assert crc16(b"123456789") == 0xBB3D   # CRC-16/ARC
    assert crc32(b"123456789") == 0xCBF43926


def test_hash_with_base_and_size():
    p = simple([("a", 16), ("b", 16), ("out", 32)], [
        P("modify_field_with_hash_based_offset", F("h", "out"), C(100), {"type": "calculation", "value": "hc"},
          C(7))])
    p.calculation("hc", "identity", [{"type": "field", "value": ["h", "a"]}])
    out = Switch(p.build()).process(1, b"\x00\x2a\x00\x00" + bytes(4))
    assert int.from_bytes(out[0][1][4:8], "big") == 100 + 42 % 7
