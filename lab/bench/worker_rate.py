"""One worker measured on its own: the UDP streaming path against a reflector that answers each
contribution at once, so the figure is what a worker can feed a switch, not what a switch does.

    python -m lab.bench.worker_rate [--elements 4M] [--lanes 256 --subblock 16] [--slots 64]
                                         [--reps 5] [--quick] [--json]

The reflector runs in its own process (no shared interpreter lock) on 127.0.0.1 and turns every
contribution into the result a one-worker job would get (the same lanes, ``RESULT``, count 1,
``EOT`` when the stream ends, the job's wire token kept, as the switch stamps it), in place. Each
case is timed over whole allreduces (best of ``--reps``) of an int32 tensor (the exact path) and of
a float32 one (fixed point: exponent pre-rounds, quantization and dequantization included), dense
and sparse (half the blocks zero), and reported as packets/s and elements/s per worker. Every
result is checked against the input (int32: bit for bit). The last line of stdout is one JSON
document (``--json``: nothing else).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.job import JobParams
from p4reduce.worker.streaming import RetryPolicy, UdpReducer

_FIELDS: dict[str, Any] = dict(wire.HEADER_DTYPE.fields or {})
_MSG_TYPE = _FIELDS["msg_type"][1]          # byte offsets of the fields the reflector rewrites
_COUNT = _FIELDS["count"][1]
_NEXT = _FIELDS["next_offset"][1]


def reflect(sock: socket.socket) -> None:
    """Answer every contribution on `sock` with itself as a one-worker result, until killed."""
    buf = bytearray(65536)
    view = memoryview(buf)
    recvfrom_into, sendto = sock.recvfrom_into, sock.sendto
    eot, retx = int(C.Flags.EOT), int(C.Flags.RETX)
    flags_at = wire.FLAGS_OFFSET
    while True:
        n, peer = recvfrom_into(buf)
        if n < C.HEADER_BYTES or buf[_MSG_TYPE] != C.MsgType.CONTRIB:
            continue
        buf[_MSG_TYPE] = C.MsgType.RESULT
        buf[_COUNT] = 1
        last = buf[_NEXT:_NEXT + 4] == b"\xff\xff\xff\xff"
        buf[flags_at] = (buf[flags_at] & ~retx & ~eot) | (eot if last else 0)
        sendto(view[:n], peer)


class Reflector:
    """The reflector in a child process; its UDP address is `addr`."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "lab.bench.worker_rate", "--reflect"],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError("the reflector process did not start")
        self.addr = ("127.0.0.1", int(line))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def measure(reflector: Reflector, elements: int, lanes: int, subblock: int, slots: int, reps: int,
            dtype: str, sparse: bool, loop: str = "native") -> dict:
    """Best-of-`reps` allreduce of one tensor against the reflector: packets/s and elements/s."""
    job = JobParams(1, 0, 1, slots, reflector.addr[0], reflector.addr[1], sparse=sparse, lanes=lanes,
                    subblock=subblock, name="worker-rate", wire_token=0x5EC0_0001)
    red = UdpReducer(job, bind=("127.0.0.1", 0), retry=RetryPolicy(timeout=0.2, deadline=30.0), loop=loop)
    rng = np.random.default_rng(1)
    if dtype == "int32":
        x = rng.integers(-2**20, 2**20, elements, dtype=np.int32)
    else:
        x = rng.standard_normal(elements).astype(np.float32)
    if sparse:   # half the packet-sized blocks zero
        blocks = -(-elements // lanes)
        x[np.repeat(rng.random(blocks) < 0.5, lanes)[:elements]] = 0
    comm = Communicator(red)
    try:
        comm.allreduce(x)   # warm-up: window and timeout settle, pages touched
        best, sent = float("inf"), 0
        for _ in range(reps):
            before = red.stats.packets_sent
            t0 = time.perf_counter()
            y = comm.allreduce(x)
            secs = time.perf_counter() - t0
            if secs < best:
                best, sent = secs, red.stats.packets_sent - before
        if dtype == "int32" and not np.array_equal(x, y):
            raise RuntimeError("the reflected int32 allreduce is not bit-exact")
        if dtype == "float32" and not np.allclose(x, y, rtol=1e-5, atol=1e-5 * float(np.abs(x).max())):
            raise RuntimeError("the reflected float32 allreduce is off by more than its quantization")
        return {"case": f"{dtype} {'sparse' if sparse else 'dense'}", "loop": red.loop, "elements": elements,
                "lanes": lanes,
                "packets": sent, "seconds": round(best, 4), "pps": round(sent / best),
                "elements_per_s": round(elements / best), "retransmissions": red.stats.retransmissions,
                "window": red.window.limit(job.slot_count)}
    finally:
        red.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.bench.worker_rate",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=lambda v: int(float(v[:-1]) * (1 << 20)) if v[-1:] in "mM" else int(v),
                    default=4 << 20, help="tensor elements (e.g. 4M, 1000000)")
    ap.add_argument("--lanes", type=int, default=C.LANES)
    ap.add_argument("--subblock", type=int, default=C.SUBBLOCK)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--loop", choices=["native", "python", "both"], default="both",
                    help="the worker loop(s) to measure (default: both, native first)")
    ap.add_argument("--quick", action="store_true", help="256K elements, 2 repetitions (a harness test)")
    ap.add_argument("--json", action="store_true", help="only the JSON document on stdout")
    ap.add_argument("--reflect", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.reflect:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind(("127.0.0.1", 0))
        print(sock.getsockname()[1], flush=True)
        try:
            reflect(sock)
        except KeyboardInterrupt:
            return 0
    try:
        wire.Layout(args.lanes, args.subblock)
    except wire.WireError as e:
        ap.error(f"--lanes/--subblock: {e}")
    if args.quick:
        args.elements, args.reps = 256 << 10, 2
    reflector = Reflector()
    rows = []
    try:
        loops = ["native", "python"] if args.loop == "both" else [args.loop]
        for loop, dtype, sparse in itertools.product(loops, ("int32", "float32"), (False, True)):
            row = measure(reflector, args.elements, args.lanes, args.subblock, args.slots, args.reps,
                          dtype, sparse, loop)
            rows.append(row)
            if not args.json:
                print(f"{row['loop']:6s} {row['case']:15s} {row['pps']:>10,} packets/s  "
                      f"{row['elements_per_s'] / 1e6:7.1f} M elements/s  ({row['lanes']} lanes, "
                      f"window {row['window']}, {row['retransmissions']} retransmissions)", file=sys.stderr)
    finally:
        reflector.close()
    doc = {"elements": args.elements, "lanes": args.lanes, "subblock": args.subblock, "slots": args.slots,
           "cpu_count": os.cpu_count(), "loadavg": list(os.getloadavg()), "rows": rows,
           "worker_int32_dense_pps": rows[0]["pps"],
           "worker_int32_dense_elements_per_s": rows[0]["elements_per_s"]}
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
