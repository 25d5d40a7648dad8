"""Closed-loop SwitchML-style aggregation traffic on raw interfaces, for switch packet rates.

N emulated workers, each with its own AF_PACKET socket on the host side of a veth pair whose
other side is a switch port. Every worker keeps `window` slots busy: it sends one dense
contribution per slot and, when the slot's result comes back, sends the next one on that slot with
the shadow-copy bit flipped (docs/protocol.md section 7). Frames are prebuilt, one thread drives
all workers, so the generator costs little next to the switch it measures. A slot silent for
`retx_s` is retransmitted (the switch answers duplicates per the protocol), so a dropped frame
stalls nothing.
"""
from __future__ import annotations

import dataclasses
import select
import socket
import time

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol import frames, wire
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address

ETH_P_ALL = 0x0003
RESULT = int(C.MsgType.RESULT)
_P4R_AT = C.FRAME_HEADER_BYTES  # where the p4reduce header starts in a frame


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One emulated worker: its interface and addresses."""
    rank: int
    iface: str
    ip: str
    mac: str
    udp_port: int

    @classmethod
    def of_rank(cls, rank: int, iface: str, udp_port: int) -> Endpoint:
        """Rank `rank` as host rank+1 of the address plan (protocol.addressing)."""
        host = host_address(rank + 1)
        return cls(rank=rank, iface=iface, ip=host.ip, mac=host.mac, udp_port=udp_port)


@dataclasses.dataclass(frozen=True)
class Service:
    """Where contributions go (the switch's aggregation address; the plan's by default)."""
    ip: str = SERVICE_IP
    mac: str = SERVICE_MAC
    udp_port: int = C.AGG_UDP_PORT


def build_frames(ep: Endpoint, svc: Service, job_id: int, window: int) -> dict[tuple, bytes]:
    """{(slot, ver): frame} of dense contributions for one worker."""
    lanes = np.full(C.LANES, ep.rank + 1, dtype=np.int32)
    out = {}
    for slot in range(window):
        offset = slot * C.LANES
        for ver in (0, 1):
            header = wire.Header(job_id=job_id, rank=ep.rank, ver=ver, slot=slot, offset=offset,
                                 next_offset=offset + window * C.LANES, bitmap=C.full_bitmap())
            payload = wire.encode(header, lanes)
            out[(slot, ver)] = frames.udp_frame(ep.mac, svc.mac, ep.ip, svc.ip, ep.udp_port,
                                                svc.udp_port, payload)
    return out


def _result_slot_ver(frame: bytes):
    """(slot, ver) of a RESULT frame, None for anything else (own sends, other traffic)."""
    if len(frame) < _P4R_AT + C.HEADER_BYTES or frame[_P4R_AT] != RESULT:
        return None
    _mt, _flags, _job, _rank, _count, ver, slot, *_ = wire.unpack_header(frame, _P4R_AT)
    return slot, ver


def run(endpoints: list[Endpoint], svc: Service, job_id: int, window: int, duration_s: float,
        warmup_s: float = 0.5, retx_s: float = 0.2) -> dict:
    """Drive the closed loop; return counts and rates over the measured `duration_s`."""
    socks, prebuilt = [], []
    try:
        for ep in endpoints:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((ep.iface, 0))
            s.setblocking(False)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            socks.append(s)
            prebuilt.append(build_frames(ep, svc, job_id, window))
        n = len(endpoints)
        # every lane of every result must be the sum of the ranks' values (rank + 1)
        expected_lanes = np.full(C.LANES, n * (n + 1) // 2, dtype=">i4").tobytes()
        lanes_at = _P4R_AT + C.HEADER_BYTES
        wrong = 0
        ver = [[0] * window for _ in range(n)]
        sent_at = [[0.0] * window for _ in range(n)]
        by_fd = {s.fileno(): i for i, s in enumerate(socks)}
        now = time.monotonic()
        for i, s in enumerate(socks):
            for slot in range(window):
                s.send(prebuilt[i][(slot, 0)])
                sent_at[i][slot] = now
        sent = n * window
        retx = 0
        results = 0
        poller = select.epoll()
        for s in socks:
            poller.register(s.fileno(), select.EPOLLIN)
        t_start = time.monotonic()
        t_measure = t_start + warmup_s
        t_end = t_measure + duration_s
        measured_results = measured_sent = None
        last_retx_scan = t_start
        while True:
            now = time.monotonic()
            if measured_results is None and now >= t_measure:
                measured_results, measured_sent, t_measure = results, sent, now
            if now >= t_end:
                break
            for fd, _ev in poller.poll(0.05):
                i = by_fd[fd]
                s = socks[i]
                while True:
                    try:
                        frame = s.recv(2048)
                    except BlockingIOError:
                        break
                    sv = _result_slot_ver(frame)
                    if sv is None:
                        continue
                    slot, v = sv
                    if slot >= window or v != ver[i][slot]:
                        continue  # a late duplicate of an older round
                    results += 1
                    if frame[lanes_at:lanes_at + len(expected_lanes)] != expected_lanes:
                        wrong += 1
                    ver[i][slot] ^= 1
                    s.send(prebuilt[i][(slot, ver[i][slot])])
                    sent_at[i][slot] = time.monotonic()
                    sent += 1
            if now - last_retx_scan > retx_s / 2:
                last_retx_scan = now
                for i in range(n):
                    for slot in range(window):
                        if now - sent_at[i][slot] > retx_s:
                            socks[i].send(prebuilt[i][(slot, ver[i][slot])])
                            sent_at[i][slot] = now
                            retx += 1
        elapsed = time.monotonic() - t_measure
        got = results - (measured_results or 0)
        rounds = got / n
        return {"workers": n, "window": window, "duration_s": round(elapsed, 3),
                "results_received": got, "rounds": rounds,
                "contributions_sent": sent - (measured_sent or 0), "retransmissions": retx,
                "wrong_results": wrong,
                "pps": rounds * n / elapsed if elapsed > 0 else 0.0,
                "rounds_per_s": rounds / elapsed if elapsed > 0 else 0.0}
    finally:
        for s in socks:
            s.close()
