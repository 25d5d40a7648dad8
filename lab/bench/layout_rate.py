"""Which packet layout for software targets: the aggregation rate of p4src/p4reduce.p4 compiled at
several layouts, on p4sim's native backend in-process, as packets/s and elements/s.

    python -m lab.bench.layout_rate [--layouts 32x8,64x8,128x16,256x16,352x22] [--seconds 3] [--json]

Each layout (LANES x SUBBLOCK) is compiled with p4sim-compile, one dense job of 4 workers and 16
slots is installed with the controller's entry builder, and a closed loop feeds the switch each
round's 4 contributions in batches (the last one completes the round and is multicast to all 4);
every result's lanes are checked against the exact sum once. `pps` counts contributions (switch
input packets), `elements_per_s` the tensor elements aggregated per second (rounds/s x LANES).
The figures chose the default layout (docs/protocol.md section 1). The last line of stdout is one JSON document.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from p4reduce.controller.engine_writer import EngineJobWriter
from p4reduce.controller.job_entries import JobSpec, MemberSpec
from p4reduce.p4src.build import compile_program
from p4reduce.protocol import constants as C
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.wire import Header, Layout, decode, encode

WORKERS, SLOTS = 4, 16


def parse_layouts(text: str) -> list[Layout]:
    out = []
    for item in text.split(","):
        lanes, _, sub = item.strip().partition("x")
        out.append(Layout(int(lanes), int(sub)))
    return out


def measure(layout: Layout, seconds: float, backend: str) -> dict:
    from p4sim.engine.native import Switch
    from p4sim.engine.native.switch import NativeSwitch

    def process_batch(frames: list[tuple[int, bytes]]) -> list[list[tuple[int, bytes]]]:
        # the native backend takes a batch in one call; the Python engine (--backend python, or a
        # program the native backend gives up) has no batch call, so one frame at a time
        if isinstance(sw, NativeSwitch):
            return sw.process_batch(frames)
        return [sw.process(port, frame) for port, frame in frames]
    built = compile_program(tempfile.mkdtemp(prefix="p4r-layout-"),
                            defines=[f"LANES={layout.lanes}", f"SUBBLOCK={layout.subblock}"])
    sw = Switch(str(built.json_path), backend=backend)
    hosts = [host_address(r + 1) for r in range(WORKERS)]
    EngineJobWriter(sw).install(JobSpec(1, WORKERS, 0, SLOTS, C.Mode.DENSE),
                                [MemberSpec(r, h.ip, 5000, h.mac, port=r + 1) for r, h in enumerate(hosts)])
    lanes = np.arange(layout.lanes, dtype=np.int32)
    frames = []
    for k in range(2 * SLOTS):   # both copies of every slot, then the pattern repeats
        slot, ver = k % SLOTS, (k // SLOTS) % 2
        for r, h in enumerate(hosts):
            hdr = Header(job_id=1, rank=r, slot=slot, ver=ver, offset=k * layout.lanes,
                         next_offset=(k + SLOTS) * layout.lanes, bitmap=layout.full_bitmap)
            frames.append((r + 1, udp_frame(h.mac, SERVICE_MAC, h.ip, SERVICE_IP, 5000, C.AGG_UDP_PORT,
                                            encode(hdr, lanes + r, layout))))
    outs = process_batch(frames)   # one lap checked: every round multicast with the exact sum
    want = WORKERS * lanes + sum(range(WORKERS))
    for i in range(WORKERS - 1, len(frames), WORKERS):
        if len(outs[i]) != WORKERS:
            raise RuntimeError(f"{layout.lanes}x{layout.subblock}: round {i // WORKERS} not multicast")
        _h, got = decode(parse_udp_frame(outs[i][0][1]).payload, layout)
        if not np.array_equal(got, want):
            raise RuntimeError(f"{layout.lanes}x{layout.subblock}: wrong sum")
    packets, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        process_batch(frames)
        packets += len(frames)
    secs = time.perf_counter() - t0
    pps = packets / secs
    return {"lanes": layout.lanes, "subblock": layout.subblock, "backend": backend,
            "frame_bytes": C.FRAME_HEADER_BYTES + layout.payload_bytes(layout.full_bitmap),
            "pps": round(pps), "elements_per_s": round(pps / WORKERS * layout.lanes),
            "payload_fraction": round(layout.lanes * C.LANE_BYTES /
                                      (C.FRAME_HEADER_BYTES + layout.payload_bytes(layout.full_bitmap)), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.bench.layout_rate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--layouts", type=parse_layouts, default=parse_layouts("32x8,64x8,128x16,256x16,352x22"))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--backend", choices=("native", "python"), default="native")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for layout in args.layouts:
        row = measure(layout, args.seconds, args.backend)
        rows.append(row)
        if not args.json:
            print(f"{row['lanes']:4d} x {row['subblock']:2d}: {row['pps']:>10,} packets/s  "
                  f"{row['elements_per_s'] / 1e6:7.1f} M elements/s aggregated  "
                  f"({row['frame_bytes']}-byte frames, {row['payload_fraction']:.0%} payload)", file=sys.stderr)
    print(json.dumps({"workers": WORKERS, "slots": SLOTS, "loadavg": list(os.getloadavg()), "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
