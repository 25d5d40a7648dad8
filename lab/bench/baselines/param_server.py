"""Baseline 2: a plain parameter server over TCP (one server host, N workers).

Every allreduce: each worker sends its whole float32 tensor to the server, the server sums the N
tensors once all have arrived and sends the sum back to every worker. This is what p4reduce
replaces with the switch: the server's link carries N tensors each way, the bottleneck the
in-network approach removes.

Wire protocol (one TCP connection per worker): a hello ``!II`` (rank, elements), then messages
made of one type byte: ``T`` + tensor bytes (answered with the sum), ``B`` (barrier, answered with
``B`` once all workers sent one), ``Q`` (quit).

Run ``python -m lab.bench.baselines.param_server server --world N --port P --size S --iface IF`` on
the server host and ``... worker --rank R --world N --server IP:PORT --size S --iface IF`` on each
worker host.
"""
from __future__ import annotations

import argparse
import socket
import struct
import sys
import threading
import time

import numpy as np

from lab.bench import hostside, interface_counters, tensors

HELLO = struct.Struct("!II")


def recv_exact(sock: socket.socket, view: memoryview) -> None:
    """Fill `view` from `sock`; a closed connection is an error, not a short read."""
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError(f"peer closed after {got} of {len(view)} bytes")
        got += n


def recv_bytes(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    recv_exact(sock, memoryview(buf))
    return bytes(buf)


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Server:
    """N connection threads meet at a barrier; the last one to arrive sums the tensors."""

    def __init__(self, world: int, size: int, iface: str):
        self.world = world
        self.size = size
        self.inbox = [np.empty(size, dtype=np.float32) for _ in range(world)]
        self.total = np.empty(size, dtype=np.float32)
        self.sum_barrier = threading.Barrier(world, action=self._sum)
        self.sync_barrier = threading.Barrier(world)
        self.iface = iface
        self.marks: list[tuple[interface_counters.IfCounters, int]] = []  # at each worker barrier: the timing windows
        self.mark_barrier = threading.Barrier(world, action=self._mark)
        self.errors: list = []
        self.rounds = 0

    def _mark(self) -> None:
        self.marks.append((interface_counters.read_proc(self.iface), self.rounds))

    def _sum(self) -> None:
        np.sum(self.inbox, axis=0, out=self.total)
        self.rounds += 1

    def serve_connection(self, conn: socket.socket, rank: int) -> None:
        mine = _bytes_view(self.inbox[rank])
        out = _bytes_view(self.total)
        try:
            while True:
                kind = recv_bytes(conn, 1)
                if kind == b"T":
                    recv_exact(conn, mine)
                    self.sum_barrier.wait()
                    conn.sendall(out)
                    self.sync_barrier.wait()  # nobody overwrites `total` while others still send it
                elif kind == b"B":
                    self.mark_barrier.wait()
                    conn.sendall(b"B")
                elif kind == b"Q":
                    return
                else:
                    raise ConnectionError(f"rank {rank}: unknown message type {kind!r}")
        except (ConnectionError, OSError, threading.BrokenBarrierError) as exc:
            self.errors.append(f"rank {rank}: {exc}")
            self.sum_barrier.abort()
            self.sync_barrier.abort()
            self.mark_barrier.abort()
        finally:
            conn.close()


def _bytes_view(a: np.ndarray) -> memoryview:
    """The bytes of a contiguous array, for socket calls (send from it, receive into it)."""
    return memoryview(a.data).cast("B")


def run_server(args: argparse.Namespace) -> int:
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((args.bind, args.port))
    lsock.listen(args.world)
    lsock.settimeout(args.timeout)
    server = Server(args.world, args.size, args.iface)
    conns: dict[int, socket.socket] = {}
    try:
        while len(conns) < args.world:
            conn, _ = lsock.accept()
            conn.settimeout(args.timeout)
            _tune(conn)
            rank, size = HELLO.unpack(recv_bytes(conn, HELLO.size))
            if size != args.size or not 0 <= rank < args.world or rank in conns:
                sys.stderr.write(f"param server: bad hello rank={rank} size={size}\n")
                conn.close()
                continue
            conns[rank] = conn
    except TimeoutError:
        sys.stderr.write(f"param server: only {len(conns)} of {args.world} workers connected "
                         f"within {args.timeout}s\n")
        return 1
    finally:
        lsock.close()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=server.serve_connection, args=(c, r), daemon=True)
               for r, c in conns.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(server.marks) < 2 and not server.errors:
        server.errors.append(f"expected 2 worker barriers, saw {len(server.marks)}")
    if server.errors:
        hostside.emit({"system": "ps-tcp", "role": "server", "errors": server.errors})
        return 1
    (before, r0), (after, r1) = server.marks[0], server.marks[-1]
    # counters and rounds between the workers' first and last barrier: their timed loop
    hostside.emit({"system": "ps-tcp", "role": "server", "world": args.world, "size": args.size,
                   "iface": args.iface, "rounds": r1 - r0, "rounds_total": server.rounds,
                   "elapsed_s": time.perf_counter() - t0,
                   "counters": (after - before).as_dict(), "errors": server.errors})
    return 0


def run_worker(args: argparse.Namespace) -> int:
    host, _, port = args.server.rpartition(":")
    deadline = time.monotonic() + args.timeout
    while True:  # the server may still be starting
        try:
            sock = socket.create_connection((host, int(port)), timeout=args.timeout)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.stderr.write(f"param server {args.server} unreachable for {args.timeout}s\n")
                return 1
            time.sleep(0.1)
    _tune(sock)
    sock.sendall(HELLO.pack(args.rank, args.size))
    data = tensors.make_tensor(args.rank, args.size)
    payload = _bytes_view(data)
    result = np.empty(args.size, dtype=np.float32)
    result_view = _bytes_view(result)

    def allreduce() -> np.ndarray:
        sock.sendall(b"T")
        sock.sendall(payload)
        recv_exact(sock, result_view)
        return result

    def barrier() -> None:
        sock.sendall(b"B")
        if recv_bytes(sock, 1) != b"B":
            raise ConnectionError("barrier: unexpected reply")

    record = hostside.measure(
        system="ps-tcp", rank=args.rank, world=args.world, iface=args.iface, size=args.size,
        reps=args.reps, warmup=args.warmup, allreduce=allreduce, barrier=barrier,
        expected=tensors.expected_sum(args.world, args.size),
        extra={"algorithm": "single TCP parameter server", "server": args.server})
    sock.sendall(b"Q")
    sock.close()
    hostside.emit(record)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m lab.bench.baselines.param_server", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("server", help="sum the workers' tensors and send the sum back")
    s.add_argument("--bind", default="0.0.0.0")
    w = sub.add_parser("worker", help="one worker")
    w.add_argument("--rank", type=int, required=True)
    w.add_argument("--server", required=True, help="IP:PORT of the server")
    w.add_argument("--reps", type=int, default=5)
    w.add_argument("--warmup", type=int, default=1)
    for sp in (s, w):
        sp.add_argument("--world", type=int, required=True)
        sp.add_argument("--size", type=int, required=True, help="tensor elements (float32)")
        sp.add_argument("--iface", required=True, help="this host's interface toward the switch")
        sp.add_argument("--timeout", type=float, default=300.0, help="seconds for any one wait")
    s.add_argument("--port", type=int, required=True)
    args = p.parse_args(argv)
    if args.world < 1 or args.size < 1:
        p.error("--world and --size must be positive")
    if args.role == "worker":
        if not 0 <= args.rank < args.world:
            p.error(f"--rank {args.rank} outside 0..{args.world - 1}")
        if ":" not in args.server:
            p.error(f"--server {args.server!r}: expected IP:PORT")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run_server(args) if args.role == "server" else run_worker(args)
    except (ConnectionError, OSError) as exc:
        sys.stderr.write(f"param server {args.role}: {exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
