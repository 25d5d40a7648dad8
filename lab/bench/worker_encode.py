"""Worker-side encode throughput: what a worker does to a float32 gradient before and after the
switch, per compressor, on one core (target: >= 10 M elements/s for fixed point).

    python -m lab.bench.worker_encode [--size 4000000] [--repeat 5] [--quick] [--json]

For each compressor, one step is timed end to end without a network: exponent proposals,
(agreement stubbed by a loopback reducer that returns this worker's own values as the "sum"),
quantization/compression into int32 lanes, and decoding of the lanes back to float32 -- plus,
separately, turning the lanes into wire packets (protocol.wire.encode_batch) and back, and the
packet rate of the UDP streaming loop against an echo "switch" on loopback.
The last line of stdout is one JSON document (for bench/extra_sections.py).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time

import numpy as np

from p4reduce.protocol import wire
from p4reduce.protocol.constants import HEADER_BYTES, LANES, NEXT_NONE, SUBBLOCK, Flags, MsgType
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import COMPRESSORS, make_compressor
from p4reduce.worker.job import JobParams
from p4reduce.worker.memory import ErrorFeedback, NoMemory
from p4reduce.worker.reducer import BlockSource, Reducer, fill_out
from p4reduce.worker.streaming import UdpReducer


class LoopbackReducer(Reducer):
    """A 'switch' of n workers where every other worker sent zeros: no network, no threads."""

    def __init__(self, n_workers: int, lanes: int):
        self.rank, self.n_workers, self.lanes = 0, n_workers, lanes

    def aggregate(self, source: BlockSource, out: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        nb = source.n_blocks
        exps = None if source.proposals is None else np.asarray(source.proposals, np.int8)
        return fill_out(source.take(np.arange(nb), exps, self.lanes), out), exps


def time_step(comm: Communicator, x: np.ndarray, repeat: int) -> float:
    comm.allreduce(x, key="g")  # warm-up (allocations, state)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        comm.allreduce(x, key="g")
        best = min(best, time.perf_counter() - t0)
    return best


def time_packets(size: int, repeat: int) -> tuple[float, float]:
    """(encode, decode) elements/s of turning int32 lanes into payloads with protocol.wire and back."""
    nb = -(-size // LANES)
    lanes = np.random.default_rng(0).integers(-2**20, 2**20, (nb, LANES), dtype=np.int32)
    headers = np.zeros(nb, wire.HEADER_DTYPE)
    headers["msg_type"], headers["bitmap"] = 1, wire.DEFAULT_LAYOUT.full_bitmap
    headers["offset"] = np.arange(nb) * LANES
    enc = dec = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        payloads = wire.encode_batch(headers, lanes)
        t1 = time.perf_counter()
        wire.decode_batch(payloads)
        t2 = time.perf_counter()
        enc, dec = min(enc, t1 - t0), min(dec, t2 - t1)
    return nb * LANES / enc, nb * LANES / dec


class EchoSwitch:
    """A one-worker 'switch' answering every contribution with itself as the result, so the
    worker's streaming loop (worker.streaming) is what gets measured, not a switch."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.addr = self.sock.getsockname()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(2048)
            except TimeoutError:
                continue
            _mt, flags, job, rank, _count, ver, slot, off, nxt, exp, res, bitmap, wire_token = wire.unpack_header(data)
            flags = (flags & ~Flags.RETX) | (Flags.EOT if nxt == NEXT_NONE else 0)   # EOT iff no next
            out = wire.pack_header(MsgType.RESULT, flags, job, rank, 1, ver, slot, off, nxt, exp, res, bitmap,
                                   wire_token)
            self.sock.sendto(out + data[HEADER_BYTES:], peer)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1)
        self.sock.close()


def time_streaming(blocks: int) -> float:
    """Packets per second of one worker's UDP streaming loop against :class:`EchoSwitch`."""
    sw = EchoSwitch()
    red = UdpReducer(JobParams(1, 0, 1, 64, "127.0.0.1", sw.addr[1], lanes=LANES, subblock=SUBBLOCK),
                     bind=("127.0.0.1", 0))
    x = np.arange(blocks * LANES, dtype=np.int32)
    try:
        red.sum_int32(x[: 64 * LANES])  # warm-up
        t0 = time.perf_counter()
        y = red.sum_int32(x)
        secs = time.perf_counter() - t0
    finally:
        red.close()
        sw.close()
    if not np.array_equal(x, y):
        raise RuntimeError("echo streaming returned wrong data")
    return red.stats.packets_sent and blocks / secs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.bench.worker_encode",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--size", type=int, default=4_000_000, help="float32 elements per step")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="small size, 2 repetitions (a harness test)")
    ap.add_argument("--json", action="store_true", help="only the JSON document on stdout")
    args = ap.parse_args(argv)
    if args.quick:
        args.size, args.repeat = 200_000, 2
    x = (np.random.default_rng(0).standard_normal(args.size) * 1e-2).astype(np.float32)
    rows = []
    for name in COMPRESSORS:
        comp, ef = make_compressor(name, seed=1)
        comm = Communicator(LoopbackReducer(args.workers, LANES), comp, ErrorFeedback() if ef else NoMemory())
        secs = time_step(comm, x, args.repeat)
        rows.append({"case": name, "elements_per_s": round(args.size / secs), "ms_per_step": round(secs * 1e3, 2),
                     "error_feedback": ef})
        if not args.json:
            print(f"{name:14s} {args.size / secs / 1e6:8.1f} M elements/s  ({secs * 1e3:.1f} ms per "
                  f"{args.size / 1e6:g} M)", file=sys.stderr)
    ints = np.random.default_rng(0).integers(-100, 100, args.size, dtype=np.int32)
    secs = time_step(Communicator(LoopbackReducer(args.workers, LANES)), ints, args.repeat)
    rows.append({"case": "int32 passthrough", "elements_per_s": round(args.size / secs),
                 "ms_per_step": round(secs * 1e3, 2)})
    penc, pdec = time_packets(min(args.size, 400_000), args.repeat)
    pps = time_streaming(2000 if args.quick else 20000)
    doc = {"size": args.size, "workers": args.workers, "cpu_count": os.cpu_count(), "rows": rows,
           "fixedpoint_elements_per_s": next(r["elements_per_s"] for r in rows if r["case"] == "fixedpoint"),
           "target_elements_per_s": 10_000_000,
           "packet_encode_elements_per_s": round(penc), "packet_decode_elements_per_s": round(pdec),
           "streaming_echo_pps": round(pps)}
    if not args.json:
        print(f"int32 passthrough {rows[-1]['elements_per_s'] / 1e6:8.1f} M elements/s", file=sys.stderr)
        print(f"packets: encode {penc / 1e6:.1f} M elements/s, decode {pdec / 1e6:.1f} M elements/s "
              f"(protocol.wire batch codecs)", file=sys.stderr)
        print(f"streaming loop vs an echo switch: {pps:,.0f} packets/s ({pps * LANES / 1e6:.2f} M int32/s) "
              "per worker", file=sys.stderr)
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
