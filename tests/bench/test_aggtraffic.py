"""The packet-rate traffic generator's frames follow docs/protocol.md and results are recognised."""
import numpy as np

from lab.bench import aggtraffic
from p4reduce.protocol import constants as C
from p4reduce.protocol import frames, wire

EP = aggtraffic.Endpoint(rank=2, iface="x", ip="10.0.0.3", mac="00:00:00:00:00:03", udp_port=40002)
SVC = aggtraffic.Service(ip="10.0.0.254", mac="00:00:00:00:01:fe")


def test_contributions_are_dense_well_formed_and_alternate_versions():
    built = aggtraffic.build_frames(EP, SVC, job_id=7, window=4)
    assert set(built) == {(s, v) for s in range(4) for v in (0, 1)}
    for (slot, ver), frame in built.items():
        udp = frames.parse_udp_frame(frame)
        assert (udp.src_ip, udp.dst_ip, udp.sport, udp.dport) == ("10.0.0.3", "10.0.0.254", 40002, C.AGG_UDP_PORT)
        header, lanes = wire.decode(udp.payload)
        assert header.msg_type == C.MsgType.CONTRIB and header.job_id == 7 and header.rank == 2
        assert (header.slot, header.ver) == (slot, ver)
        assert header.offset == slot * C.LANES and header.bitmap == C.full_bitmap()
        assert np.array_equal(lanes, np.full(C.LANES, 3, dtype=np.int32))
        assert len(frame) == 66 + C.LANES * 4


def test_result_frames_are_recognised_and_contributions_are_not():
    contrib = aggtraffic.build_frames(EP, SVC, job_id=1, window=8)[(5, 1)]
    assert aggtraffic._result_slot_ver(contrib) is None
    header = wire.Header(msg_type=C.MsgType.RESULT, job_id=1, rank=2, count=4, ver=1, slot=5,
                         bitmap=C.full_bitmap())
    result = frames.udp_frame(SVC.mac, EP.mac, SVC.ip, EP.ip, C.AGG_UDP_PORT, EP.udp_port,
                              wire.encode(header, np.zeros(C.LANES, dtype=np.int32)))
    assert aggtraffic._result_slot_ver(result) == (5, 1)
    assert aggtraffic._result_slot_ver(result[:50]) is None
