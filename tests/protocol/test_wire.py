"""numpy codec: round trips, batch vs single, strictness."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4reduce.protocol import constants as C
from p4reduce.protocol.frames import FrameError, ipv4_source, parse_udp_frame, udp_frame
from p4reduce.protocol.wire import (
    HEADER_DTYPE,
    WIRE_TOKEN_OFFSET,
    Header,
    Layout,
    WireError,
    bitmap_of,
    decode,
    decode_batch,
    encode,
    encode_batch,
    encode_subblocks,
    header_array,
    pack_header,
    read_subblocks,
    slot_ver,
    split_slot_ver,
    unpack_header,
    with_flags,
)


def random_block(rng, density):
    block = rng.integers(C.LANE_MIN, C.LANE_MAX, C.LANES, dtype=np.int64, endpoint=True).astype(np.int32)
    keep = rng.random(C.NUM_SUBBLOCKS) < density
    return (block.reshape(C.NUM_SUBBLOCKS, C.SUBBLOCK) * keep[:, None]).reshape(-1).astype(np.int32)


def test_header_layout_is_24_bytes_big_endian():
    h = Header(msg_type=2, flags=3, job_id=0x1234, rank=7, count=9, ver=1, slot=0x0155,
               offset=0x01020304, next_offset=0xA0B0C0D0, exponent=131, reserved=0, bitmap=0x000B,
               wire_token=0xDEADBEEF)
    raw = h.pack()
    assert raw.hex() == "0203" "1234" "07" "09" "8155" "01020304" "a0b0c0d0" "83" "00" "000b" "deadbeef"
    assert WIRE_TOKEN_OFFSET == 20 and raw[WIRE_TOKEN_OFFSET:] == bytes.fromhex("deadbeef")
    assert Header.unpack(raw) == h


@pytest.mark.parametrize("density", [0.0, 0.3, 0.7, 1.0])
def test_round_trip_keeps_exactly_the_bitmap_subblocks(density):
    rng = np.random.default_rng(int(density * 10))
    for _ in range(50):
        block = random_block(rng, density)
        bitmap = int(bitmap_of(block))
        h = Header(job_id=rng.integers(0, 65536), rank=3, slot=rng.integers(0, 32768), ver=1,
                   offset=rng.integers(0, 2**32), bitmap=bitmap)
        payload = encode(h, block)
        assert len(payload) == 24 + bin(bitmap).count("1") * C.SUBBLOCK_BYTES
        h2, block2 = decode(payload)
        assert h2 == h
        np.testing.assert_array_equal(block2, block)


def test_bitmap_of_marks_nonzero_subblocks():
    block = np.zeros(C.LANES, np.int32)
    block[C.SUBBLOCK * 2 + 3] = -1
    assert int(bitmap_of(block)) == 0b0100
    assert int(bitmap_of(np.ones(C.LANES, np.int32))) == C.full_bitmap()
    rows = np.zeros((3, C.LANES), np.int32)
    rows[1, 0] = 5
    assert bitmap_of(rows).tolist() == [0, 1, 0]


def test_absent_subblocks_are_not_sent_even_if_nonzero():
    block = np.arange(1, C.LANES + 1, dtype=np.int32)
    payload = encode(Header(bitmap=0b0010), block)
    _, got = decode(payload)
    want = np.zeros(C.LANES, np.int32)
    want[C.SUBBLOCK:2 * C.SUBBLOCK] = block[C.SUBBLOCK:2 * C.SUBBLOCK]
    np.testing.assert_array_equal(got, want)


def test_batch_encode_equals_single_encode_and_decodes_back():
    rng = np.random.default_rng(7)
    blocks = np.stack([random_block(rng, 0.5) for _ in range(40)])
    headers = [Header(job_id=1, rank=i % 8, slot=i, offset=i * 32, bitmap=int(bitmap_of(b)))
               for i, b in enumerate(blocks)]
    batch = encode_batch(header_array(headers), blocks)
    assert batch == [encode(h, b) for h, b in zip(headers, blocks)]
    hdrs, lanes = decode_batch(batch)
    np.testing.assert_array_equal(lanes, blocks)
    assert hdrs.dtype == HEADER_DTYPE
    assert hdrs["slot_ver"].tolist() == list(range(40))


def test_strict_errors_name_the_problem():
    with pytest.raises(WireError, match="shorter than the 24-byte header"):
        decode(b"\x01" * 10)
    payload = encode(Header(bitmap=0b11), np.ones(C.LANES, np.int32))
    needs = f"needs {C.HEADER_BYTES + 2 * C.SUBBLOCK_BYTES}"
    with pytest.raises(WireError, match=needs):
        decode(payload[:-1])
    with pytest.raises(WireError, match=needs):
        decode(payload + b"\0")
    with pytest.raises(WireError, match="beyond"):
        encode(Header(bitmap=1 << C.NUM_SUBBLOCKS), np.ones(C.LANES, np.int32))
    with pytest.raises(WireError, match="slot=40000"):
        Header(slot=40000).pack()
    with pytest.raises(WireError, match="int32"):
        encode(Header(bitmap=1), np.full(C.LANES, 2**31, np.int64))


def test_other_layouts():
    lay = Layout(lanes=64, subblock=4)
    assert lay.num_subblocks == 16 and lay.full_bitmap == 0xFFFF
    block = np.arange(64, dtype=np.int32)
    block[:4] = 0
    h = Header(bitmap=int(bitmap_of(block, lay)))
    assert h.bitmap == 0xFFFE
    _, got = decode(encode(h, block, lay), lay)
    np.testing.assert_array_equal(got, block)
    with pytest.raises(WireError, match="1..16"):
        Layout(lanes=64, subblock=2)



@settings(max_examples=200, deadline=None)
@given(fields=st.fixed_dictionaries({
    "msg_type": st.integers(0, 255), "flags": st.integers(0, 255), "job_id": st.integers(0, 65535),
    "rank": st.integers(0, 255), "count": st.integers(0, 255), "ver": st.integers(0, 1),
    "slot": st.integers(0, 32767), "offset": st.integers(0, 2**32 - 1),
    "next_offset": st.integers(0, 2**32 - 1), "exponent": st.integers(0, 255)}),
    bitmap=st.integers(0, C.full_bitmap()),
    lanes=st.lists(st.integers(C.LANE_MIN, C.LANE_MAX), min_size=C.LANES, max_size=C.LANES))
def test_round_trip_property(fields, bitmap, lanes):
    block = np.array(lanes, np.int64).astype(np.int32)
    h = Header(bitmap=bitmap, **fields)
    payload = encode(h, block)
    h2, got = decode(payload)
    assert h2 == h
    mask = np.repeat([(bitmap >> k) & 1 for k in range(C.NUM_SUBBLOCKS)], C.SUBBLOCK).astype(bool)
    np.testing.assert_array_equal(got, np.where(mask, block, 0))
    assert encode_batch(header_array([h]), block[None, :]) == [payload]


def test_fast_path_is_the_same_codec():
    """pack_header/unpack_header, slot_ver, with_flags and the sub-block helpers produce and read
    exactly what Header, encode and decode do."""
    h = Header(msg_type=2, flags=1, job_id=0x1234, rank=7, count=9, ver=1, slot=0x7FFE,
               offset=64, next_offset=C.NEXT_NONE, exponent=131, reserved=5, bitmap=0b1010,
               wire_token=0x5EC0_0001)
    fields = tuple(vars(h).values())
    assert pack_header(*fields) == h.pack()
    assert unpack_header(b"xx" + h.pack(), offset=2) == fields and Header(*unpack_header(h.pack())) == h
    assert slot_ver(0x7FFE, 1) == 0xFFFE and split_slot_ver(0xFFFE) == (0x7FFE, 1)
    assert split_slot_ver(slot_ver(5, 0)) == (5, 0)
    retx = with_flags(h.pack(), C.Flags.RETX)
    assert Header.unpack(retx).flags == C.Flags.EOT | C.Flags.RETX and retx[2:] == h.pack()[2:]
    layout = Layout(32, 8)
    assert layout.present(0b1010) == [1, 3] and layout.present(0) == []
    block = np.arange(-16, 16, dtype=np.int32)
    payload = encode(h, block, layout)
    assert payload[C.HEADER_BYTES:] == encode_subblocks(block, h.bitmap, layout)
    out = np.full((4, 8), 99, np.int64)
    read_subblocks(payload, layout.present(h.bitmap), out, layout)
    assert (out[[1, 3]] == block.reshape(4, 8)[[1, 3]]).all() and (out[[0, 2]] == 99).all()


def test_frames_parse_reports_what_is_wrong_without_raising():
    payload = encode(Header(bitmap=0), None)
    frame = udp_frame("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.254", 40000,
                      C.AGG_UDP_PORT, payload)
    good = parse_udp_frame(frame)
    assert good.checksum_ok and good.lengths_ok(len(frame)) and good.payload == payload
    assert ipv4_source(frame) == 0x0A000001 and ipv4_source(b"\xff" * 12 + b"\x86\xdd" + bytes(40)) is None
    bad = bytearray(frame)
    bad[24] ^= 0xFF                                        # IPv4 checksum
    bad += b"\0"                                           # one byte past the IPv4 total length
    loose = parse_udp_frame(bytes(bad), strict=False)
    assert not loose.checksum_ok and not loose.lengths_ok(len(bad)) and loose.payload == payload
    with pytest.raises(FrameError, match="checksum"):
        parse_udp_frame(bytes(bad))


def test_a_layout_must_be_named():
    """No compiled-in default: a layout without its sizes is an error naming what is missing."""
    with pytest.raises(TypeError, match="lanes"):
        Layout()
    with pytest.raises(TypeError, match="subblock"):
        Layout(256)
