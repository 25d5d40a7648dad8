"""Benchmark: in-process packet rate of p4sim's engines, native and Python (not a test).

    python -m lab.bench.switch_rate [--seconds S] [--backends native,python] [--repeat N]
                                         [--quick] [--json]

Cases, each on every backend asked for:
* L2 forwarding: one exact-match table of 256 entries (L2_P4 below, compiled by p4sim-compile),
  64-byte frames to 256 destinations;
* aggregation, closed loop: p4src/p4reduce.p4 built with 32 lanes (4 workers, dense), the job installed as
  the controller installs it (controller/engine_writer.py); every round each worker contributes
  its block for one slot, the last contribution completes it and the result is multicast to the
  four workers; slots cycle through both shadow versions;
* the same with the 256-lane build of the program (-DLANES=256 -DSUBBLOCK=16, 16 sub-blocks).

What the figure measures: frames through the switch per CPU-second of this process
(time.process_time, one core), best of --repeat runs.  native: the batch API -- a few thousand
prebuilt frames per call into C (NativeSwitch.batch_runner), outputs left in C's buffer and
counted, the number of multicast results checked after every call; python: one process() call
per frame.  Nothing else runs in the loop, so the figure is the switch's packet path.
"""
import argparse
import functools
import json
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

L2_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser L2Parser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control L2Verify(inout headers_t hdr, inout meta_t meta) { apply { } }
control L2Ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action forward(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table dmac {
        key = { hdr.eth.dst: exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 4096;
    }
    apply { dmac.apply(); }
}
control L2Egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control L2Compute(inout headers_t hdr, inout meta_t meta) { apply { } }
control L2Deparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(L2Parser(), L2Verify(), L2Ingress(), L2Egress(), L2Compute(), L2Deparser()) main;
"""
L2_TABLE, L2_KEY, L2_ACTION = "L2Ingress.dmac", "hdr.eth.dst", "L2Ingress.forward"
L2_DESTINATIONS = 256
L2_ETHERTYPE = 0x88B5  # local experimental: hosts on a veth do not process it


@functools.lru_cache(maxsize=1)
def l2_build() -> tuple[dict[str, Any], Any]:
    """(BMv2 JSON dict, P4Info message) of L2_P4."""
    from p4sim.compiler import compile_file
    path = tempfile.mkdtemp(prefix="p4sim-bench-l2-") + "/l2.p4"
    with open(path, "w") as fh:
        fh.write(L2_P4)
    result = compile_file(path)
    return result.bmv2, result.p4info


def l2_destination(i: int) -> int:
    return 0x020000000100 + i


def l2_entries(ports: Sequence[int] = (1, 2, 3, 4)) -> list[tuple[int, int]]:
    """[(destination MAC, egress port)] of the L2 table."""
    return [(l2_destination(i), ports[i % len(ports)]) for i in range(L2_DESTINATIONS)]


def l2_frame(i: int) -> bytes:
    dst = l2_destination(i % L2_DESTINATIONS).to_bytes(6, "big")
    return dst + bytes.fromhex("020000000001") + L2_ETHERTYPE.to_bytes(2, "big") + bytes(46)


LANES_32 = ("LANES=32", "SUBBLOCK=8")     # the reference case (the program's default is 256 lanes)
LANES_256 = ("LANES=256", "SUBBLOCK=16")


def compile_p4reduce(defines: Sequence[str] = ()) -> pathlib.Path | None:
    """BMv2 JSON path of p4src/p4reduce.p4 built by p4sim-compile, or None when that fails."""
    from p4reduce.p4src.build import ProgramBuildError, compile_program
    try:
        return compile_program(tempfile.mkdtemp(prefix="p4sim-bench-"), defines=defines).json_path
    except ProgramBuildError:
        return None


# ---- measuring ----------------------------------------------------------------------------------
def _rate(run: Callable[[], None], frames_per_call: int, seconds: float) -> float:
    """Frames per CPU-second of this process while calling run() for `seconds`."""
    done = 0
    start = time.process_time()
    while True:
        run()
        done += frames_per_call
        now = time.process_time()
        if now - start >= seconds:
            return done / (now - start)


def measure(sw: Any, packets: list[tuple[int, bytes]], seconds: float, outputs_per_call: int) -> float:
    """Frames/s of `sw` over the cyclic list `packets`; every pass through the list must emit
    exactly `outputs_per_call` frames (RuntimeError otherwise: the benchmark is not measuring
    what it says)."""
    if getattr(sw, "backend", "python") == "native":
        runner = sw.batch_runner(packets)

        def run() -> None:
            got = runner.run()
            if got != outputs_per_call:
                raise RuntimeError(f"benchmark pass emitted {got} frames, expected {outputs_per_call}")
        return _rate(run, len(packets), seconds)

    def run_python() -> None:
        got = sum(len(sw.process(port, frame)) for port, frame in packets)
        if got != outputs_per_call:
            raise RuntimeError(f"benchmark pass emitted {got} frames, expected {outputs_per_call}")
    return _rate(run_python, len(packets), seconds)


def bench_l2(backend: str, seconds: float, calls: int = 4096) -> float:
    from p4sim.engine import Switch
    program, _ = l2_build()
    sw = Switch(program, backend=backend)
    for mac, port in l2_entries():
        sw.table_add(L2_TABLE, {L2_KEY: mac}, L2_ACTION, {"port": port})
    packets = [(1, l2_frame(i)) for i in range(calls if backend == "native" else 256)]
    return measure(sw, packets, seconds, len(packets))


def aggregation_frames(layout: Any, workers: int, slots: int) -> tuple[list[tuple[int, bytes]], list[Any]]:
    """[(port, frame)]: 2 x slots rounds (both shadow versions of every slot), each the workers'
    dense contributions in rank order."""
    import numpy as np

    from p4reduce.protocol import constants as C
    from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address
    from p4reduce.protocol.frames import udp_frame
    from p4reduce.protocol.wire import Header, encode
    hosts = [host_address(r + 1) for r in range(workers)]
    lanes = np.arange(layout.lanes, dtype=np.int32)
    out = []
    for k in range(2 * slots):
        slot, ver = k % slots, (k // slots) % 2
        for r in range(workers):
            hdr = Header(job_id=1, rank=r, slot=slot, ver=ver, offset=k * layout.lanes,
                         next_offset=(k + slots) * layout.lanes, bitmap=layout.full_bitmap)
            out.append((r + 1, udp_frame(hosts[r].mac, SERVICE_MAC, hosts[r].ip, SERVICE_IP, 5000,
                                         C.AGG_UDP_PORT, encode(hdr, lanes + r, layout))))
    return out, hosts


def bench_aggregation(backend: str, path: pathlib.Path, seconds: float, layout: Any, workers: int = 4) -> float:
    from p4reduce.controller.engine_writer import EngineJobWriter
    from p4reduce.controller.job_entries import JobSpec, MemberSpec
    from p4reduce.protocol import constants as C
    from p4sim.engine import Switch
    slots = 256 if backend == "native" else 16
    sw = Switch(str(path), backend=backend)
    packets, hosts = aggregation_frames(layout, workers, slots)
    EngineJobWriter(sw).install(JobSpec(1, workers, 0, slots, C.Mode.DENSE),
                                [MemberSpec(r, hosts[r].ip, 5000, hosts[r].mac, port=r + 1) for r in range(workers)])
    return measure(sw, packets, seconds, 2 * slots * workers)  # one multicast result per worker per round


def run(backends: Sequence[str], seconds: float, repeat: int) -> dict[str, Any]:
    """{"rows": [...]} with the best of `repeat` runs per case and backend."""
    from p4reduce.protocol.wire import Layout
    rows: list[dict[str, Any]] = []

    def best(fn: Callable[..., float], *args: Any) -> float:
        return max(fn(*args) for _ in range(repeat))

    p4reduce, wide = compile_p4reduce(LANES_32), compile_p4reduce(LANES_256)
    for backend in backends:
        rows.append({"case": "L2 forwarding (1 exact table, 256 entries)", "backend": backend,
                     "unit": "packets/s", "pps": round(best(bench_l2, backend, seconds))})
        for path, layout, what in ((p4reduce, Layout(32, 8), "32 lanes"), (wide, Layout(256, 16), "256 lanes")):
            if path is None:
                rows.append({"case": f"aggregation ({what})", "backend": backend, "status": "failed",
                             "error": "p4src/p4reduce.p4 did not compile"})
                continue
            rows.append({"case": f"aggregation closed loop ({what}, 4 workers, dense)", "backend": backend,
                         "unit": "contributions/s",
                         "pps": round(best(bench_aggregation, backend, path, seconds, layout))})
    return {"rows": rows, "method": "frames per CPU-second of one process (one core); native: batch API, "
                                    f"python: process() per frame; best of {repeat}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement (CPU seconds)")
    ap.add_argument("--backends", default="native,python", help="comma-separated: native, python")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best counts")
    ap.add_argument("--quick", action="store_true", help="one short run per case")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON document")
    args = ap.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in ("native", "python"):
            ap.error(f"--backends: {b!r} is not native or python")
    seconds, repeat = (0.5, 1) if args.quick else (args.seconds, max(1, args.repeat))
    doc = run(backends, seconds, repeat)
    if args.json:
        print(json.dumps(doc))
        return 0
    for row in doc["rows"]:
        figure = f"{row['pps']:>12,} {row['unit']}" if "pps" in row else f"failed: {row['error']}"
        print(f"{row['backend']:>6}  {row['case']:<55} {figure}")
    print(doc["method"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
