"""protocol.pcap_dump reads captures and names every p4reduce field."""
import numpy as np
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from p4reduce.protocol import constants as C
from p4reduce.protocol.frames import udp_frame
from p4reduce.protocol.pcap_dump import main
from p4reduce.protocol.wire import Header, encode


def test_dump_a_capture(tmp_path, capsys):
    block = np.zeros(C.LANES, np.int32)
    block[C.SUBBLOCK] = -7
    contrib = udp_frame("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.254", 40000,
                        C.AGG_UDP_PORT, encode(Header(job_id=3, rank=1, slot=2, ver=1, offset=64, bitmap=0b10), block))
    result = udp_frame("02:00:00:00:00:fe", "02:00:00:00:00:01", "10.0.0.254", "10.0.0.1", C.AGG_UDP_PORT, 40000,
                       encode(Header(msg_type=C.MsgType.RESULT, flags=C.Flags.EOT, job_id=3, rank=1, count=4,
                                     bitmap=0), None))
    path = tmp_path / "x.pcap"
    wrpcap(str(path), [Ether(contrib), Ether(result)])
    assert main([str(path), "--lanes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "10.0.0.1:40000 > 10.0.0.254:48864 CONTRIB job=3 rank=1 slot=2/v1 off=64 next=none" in out[0]
    assert "bitmap=0x0002" in out[0] and " -7 " in out[0]
    assert "RESULT job=3" in out[1] and "count=4 flags=EOT" in out[1]
    assert main([str(tmp_path / "missing.pcap")]) == 2
