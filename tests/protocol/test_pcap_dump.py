"""protocol.pcap_dump reads captures (pcap and pcapng, streaming) and names every p4reduce field;
a damaged file is one line naming the packet, never a traceback; scapy is not involved."""
import json
import struct
import subprocess
import sys

import numpy as np
import pytest
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from p4reduce.protocol import constants as C
from p4reduce.protocol.frames import udp_frame
from p4reduce.protocol.pcap_dump import main
from p4reduce.protocol.wire import Header, Layout, encode


def _frames():
    block = np.zeros(C.LANES, np.int32)
    block[C.SUBBLOCK] = -7
    contrib = udp_frame("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.254", 40000,
                        C.AGG_UDP_PORT, encode(Header(job_id=3, rank=1, slot=2, ver=1, offset=64, bitmap=0b10), block))
    result = udp_frame("02:00:00:00:00:fe", "02:00:00:00:00:01", "10.0.0.254", "10.0.0.1", C.AGG_UDP_PORT, 40000,
                       encode(Header(msg_type=C.MsgType.RESULT, flags=C.Flags.EOT, job_id=3, rank=1, count=4,
                                     bitmap=0), None))
    return contrib, result


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "x.pcap"
    wrpcap(str(path), [Ether(f) for f in _frames()])
    return path


def test_dump_a_capture(capture, tmp_path, capsys):
    assert main([str(capture), "--lanes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "10.0.0.1:40000 > 10.0.0.254:48864 CONTRIB job=3 rank=1 slot=2/v1 off=64 next=none" in out[0]
    assert "bitmap=0x0002" in out[0] and f" lanes={C.SUBBLOCK}:-7 " in out[0]
    assert "RESULT job=3" in out[1] and "count=4 flags=EOT" in out[1]
    assert main([str(tmp_path / "missing.pcap")]) == 2


def test_json_count_and_other_layouts(tmp_path, capsys):
    layout = Layout(256, 16)                    # the default build's layout, not constants.LANES
    lanes = np.arange(256, dtype=np.int32) - 5
    frames = [udp_frame("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.254", 40000, C.AGG_UDP_PORT,
                        encode(Header(job_id=1, rank=0, offset=256 * i, bitmap=0b1000_0000_0000_0001,
                                      wire_token=0xC0FFEE), lanes, layout))
              for i in range(50)]
    path = tmp_path / "big.pcap"
    wrpcap(str(path), [Ether(f) for f in frames])
    assert main([str(path), "--json", "--lanes", "--count", "3"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["offset"] for r in rows] == [0, 256, 512] and {r["wire_token"] for r in rows} == {0xC0FFEE}
    assert rows[0]["lanes"] == {**{str(j): j - 5 for j in range(16)}, **{str(j): j - 5 for j in range(240, 256)}}


def test_streams_and_names_damage(capture, tmp_path, capsys):
    data = capture.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data + struct.pack("<IIII", 0, 0, 100, 100) + b"\0" * 10)    # the third record cut off
    assert main([str(cut), "--count", "2"]) == 0                 # never read that far: streaming
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main([str(cut)]) == 2
    assert capsys.readouterr().err.strip().endswith("packet 2: truncated (the capture was cut off)")
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"hello, not a capture")
    assert main([str(junk)]) == 2
    assert "not a pcap or pcapng capture" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([str(capture), "--count", "0"])
    assert exit_.value.code == 2 and "--count: must be >= 1" in capsys.readouterr().err


def test_pcapng_from_tshark_and_no_scapy(capture, tmp_path):
    ng = tmp_path / "x.pcapng"
    subprocess.run(["tshark", "-r", str(capture), "-F", "pcapng", "-w", str(ng)], check=True, capture_output=True)
    code = ("import sys; from p4reduce.protocol.pcap_dump import main; rc = main(sys.argv[1:]); "
            "assert 'scapy' not in sys.modules, 'scapy imported'; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, str(ng)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and "CONTRIB job=3 rank=1 slot=2/v1" in lines[0] and "RESULT job=3" in lines[1]
