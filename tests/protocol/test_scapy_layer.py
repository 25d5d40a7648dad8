"""The scapy layer agrees with the numpy codec in both directions."""
import numpy as np
from scapy.all import IP, UDP, Ether, raw

from p4reduce.protocol import constants as C
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.scapy_layer import P4Reduce, from_block
from p4reduce.protocol.wire import Header, bitmap_of, decode, encode


def test_scapy_dissects_codec_output():
    rng = np.random.default_rng(3)
    for _ in range(30):
        block = rng.integers(-1000, 1000, C.LANES).astype(np.int32)
        block[rng.random(C.LANES) < 0.5] = 0
        block[:C.SUBBLOCK] *= rng.integers(0, 2)
        h = Header(msg_type=int(rng.integers(1, 3)), flags=int(rng.integers(0, 4)), job_id=int(rng.integers(0, 65536)),
                   rank=int(rng.integers(0, 32)), count=4, ver=int(rng.integers(0, 2)),
                   slot=int(rng.integers(0, 32768)), offset=int(rng.integers(0, 2**32)),
                   next_offset=int(rng.integers(0, 2**32)), exponent=int(rng.integers(0, 256)),
                   bitmap=int(bitmap_of(block)))
        payload = encode(h, block)
        pkt = P4Reduce(payload)
        for field in ("msg_type", "job_id", "rank", "count", "ver", "slot", "offset", "next_offset",
                      "exponent", "bitmap"):
            assert int(getattr(pkt, field)) == getattr(h, field), field
        assert int(pkt.flags) == h.flags
        np.testing.assert_array_equal(pkt.lanes(), block)
        assert raw(pkt) == payload


def test_scapy_builds_what_the_codec_decodes():
    block = np.zeros(C.LANES, np.int32)
    block[C.SUBBLOCK * 3:C.SUBBLOCK * 4] = np.arange(-4, C.SUBBLOCK - 4)
    pkt = from_block(dict(job_id=9, rank=2, slot=17, ver=1, offset=4096, next_offset=8192), block, 0b1000)
    h, got = decode(raw(pkt))
    assert (h.job_id, h.rank, h.slot, h.ver, h.offset, h.next_offset, h.bitmap) == (9, 2, 17, 1, 4096, 8192, 8)
    np.testing.assert_array_equal(got, block)


def test_udp_port_binding_and_frames():
    payload = encode(Header(job_id=5, bitmap=0), None)
    frame = udp_frame("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.254", 40001,
                      C.AGG_UDP_PORT, payload)
    pkt = Ether(frame)
    assert pkt.haslayer(P4Reduce) and pkt[P4Reduce].job_id == 5
    # scapy computes the same IPv4 checksum and lengths as protocol.frames
    rebuilt = Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01") / IP(
        src="10.0.0.1", dst="10.0.0.254", flags="DF", id=0, ttl=64) / UDP(sport=40001, dport=C.AGG_UDP_PORT, chksum=0) / payload
    assert raw(rebuilt) == frame
    parsed = parse_udp_frame(frame)
    assert (parsed.src_ip, parsed.dport, parsed.payload) == ("10.0.0.1", C.AGG_UDP_PORT, payload)
    # results (source port AGG_UDP_PORT) dissect too
    back = Ether(udp_frame("02:00:00:00:00:fe", "02:00:00:00:00:01", "10.0.0.254", "10.0.0.1",
                           C.AGG_UDP_PORT, 40001, payload))
    assert back.haslayer(P4Reduce)
