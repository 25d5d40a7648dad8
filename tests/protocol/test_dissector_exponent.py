"""tshark shows a scale only where one applies (issue #25): an int32 stream's exponent code 0 is
"no scale: exact integers", a float block's code its power of two. Runs the generated dissector
in real tshark on frames written here (skipped without tshark)."""
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import needs
import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire

ROOT = Path(__file__).resolve().parents[2]


def _frame(exponent: int) -> bytes:
    payload = wire.encode(wire.Header(msg_type=C.MsgType.RESULT, job_id=1, exponent=exponent,
                                      bitmap=1), np.arange(C.LANES, dtype=np.int32))
    udp = struct.pack("!HHHH", C.AGG_UDP_PORT, 40000, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes([10, 0, 0, 254]), bytes([10, 0, 0, 1])) + udp
    return b"\x00\x00\x00\x00\x00\x01" + b"\x00\x00\x00\x00\x01\xfe" + b"\x08\x00" + ip


def test_exponent_scale_only_where_it_applies(tmp_path):
    if shutil.which("tshark") is None:
        needs.missing("tshark not installed")
    home = tmp_path / "home"
    subprocess.run([sys.executable, str(ROOT / "tools/wireshark/dissector.py"),
                    "--out", str(home / ".local/lib/wireshark/plugins/p4reduce.lua")], check=True,
                   capture_output=True)
    pcap = tmp_path / "x.pcap"
    with open(pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for code in (0, C.EXP_BIAS + 3):
            fr = _frame(code)
            t = time.time()
            f.write(struct.pack("<IIII", int(t), 0, len(fr), len(fr)) + fr)
    t0 = time.monotonic()
    out = subprocess.run(["tshark", "-r", str(pcap), "-O", "p4reduce"], capture_output=True, text=True,
                         env=dict(os.environ, HOME=str(home)), timeout=60).stdout
    assert time.monotonic() - t0 < 30
    exps = [line.strip() for line in out.splitlines() if line.strip().startswith("Exponent")]
    assert exps == ["Exponent (shared scale): 0 (no scale: exact integers)",
                    f"Exponent (shared scale): {C.EXP_BIAS + 3} (scale 2^3)"], out
