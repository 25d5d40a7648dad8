"""Reliable, self-clocked streaming of aggregation packets over a plain UDP socket.

Implements the worker side of docs/protocol.md (section 7) as a :class:`~worker.reducer.Reducer`
(which block goes on which slot, and which result answers it, is worker/streams.py; this module
sends, waits and retransmits):

* block ``b`` of a tensor runs on slot ``b mod S`` (``S`` = the job's slot count, or fewer for
  small tensors); each slot has at most one packet outstanding, and its result releases the slot
  for the next block (SwitchML's self-clocking); how many slots are in flight at once is the
  congestion window (worker/window.py: AIMD on timeouts), which persists across calls;
* results are received in batches into a preallocated ring and decoded together; packets are
  built in preallocated frames (worker/streams.py), so the per-packet path allocates no buffers
  and calls no numpy;
* float data: the exponent for a block rides in the previous round's packet; the first block of
  each stream is preceded by a pre-round that only agrees on its exponent (and, in sparse mode,
  on where the stream starts);
* sparse mode (OmniReduce): zero sub-blocks are left out, a worker names its next non-zero block
  in ``next_offset`` and the switch's minimum tells everyone where to go, so blocks that are zero
  on every worker are never sent;
* forged results: only datagrams from the switch's aggregation address and port are read (the
  socket is connected to it; where it cannot be, each datagram's source is checked), and only
  results carrying the job's wire token count (docs/protocol.md section 10); the rest are counted
  in ``StreamStats.forged`` and change nothing;
* loss: a round overtaken by later ones is resent at once (fast retransmission; near a call's
  end, early retransmission and a tail loss probe), and a slot whose result does not come within
  a timeout is retransmitted (flag RETX) with exponential backoff; the timeout adapts to the
  measured round trips (worker/rto.py, RFC 6298); results that are not the round a slot waits
  for (late duplicates) are ignored; when a slot makes no progress for ``deadline`` seconds the
  call raises an :class:`~worker.reducer.AggregationError` naming job, rank, slot and offset --
  never a hang.
"""
from __future__ import annotations

import select
import socket
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import Layout

from . import native_loop
from .job import JobParams
from .reducer import AggregationError, BlockSource, FloatSource, Reducer
from .rto import RtoEstimator
from .streams import Answer, StreamWindow
from .window import CongestionWindow

# A round is overtaken when this many rounds sent after it are answered before it (TCP's three
# duplicate acknowledgements): one or two may pass it because peers opened them in another order.
OVERTAKE_COUNT = 3
# Near a call's end too few rounds follow a lost one to overtake it. With at most OVERTAKE_COUNT
# rounds open and nothing left to open, one later round answered is enough (TCP's early
# retransmit, RFC 5827); and when nothing comes back for PROBE_SRTTS smoothed round trips (at
# least PROBE_MIN seconds) the newest open round is resent as a probe, at most PROBES times per
# silence, whose answer overtakes every round sent before it (RACK-TLP's tail loss probe,
# RFC 8985): a loss at the end of a call, or a burst that took a worker's last packets, costs a
# few round trips instead of a retransmission timeout.
PROBE_SRTTS = 2.0
PROBE_MIN = 0.005
PROBES = 2


@dataclass
class RetryPolicy:
    """Retransmission timing (docs/worker.md, "Loss"); all in seconds.

    ``timeout``: the retransmission timeout (RTO) before the first round-trip sample; afterwards
    the RTO adapts to the measured round trips (worker/rto.py, RFC 6298), kept within
    [``min_timeout``, ``max_timeout``]. Each timeout multiplies a slot's timer by ``backoff`` (up
    to ``max_timeout``). ``deadline``: a slot without progress for this long fails the call.
    ``adaptive=False`` restores a fixed ``timeout`` for every round (for comparisons).
    """

    timeout: float = 0.05
    backoff: float = 2.0
    max_timeout: float = 1.0
    deadline: float = 10.0
    min_timeout: float = 0.03
    adaptive: bool = True

    def estimator(self) -> RtoEstimator:
        return RtoEstimator(self.timeout, min(self.min_timeout, self.timeout, self.max_timeout),
                            max(self.max_timeout, self.timeout), self.backoff)


@dataclass
class StreamStats:
    packets_sent: int = 0
    retransmissions: int = 0
    fast_retransmissions: int = 0   # of those: rounds overtaken by later ones, resent before their timer
    tail_probes: int = 0      # of those: the newest open round resent after a silence (RACK-TLP)
    deferred: int = 0         # timeouts before the call's first result, left to one probe round
    results: int = 0
    ignored: int = 0          # duplicates, stale results, packets of other jobs, forged results
    forged: int = 0           # of those: not from the switch's address, or without the job's wire token
    send_errors: int = 0
    rtt_samples: int = 0      # rounds sent once whose round trip fed the RTO estimator
    wakeups: int = 0          # batches of datagrams received (results / wakeups: the batch size)


DEADLINE_SLACK = 1e-6    # a stream's deadline fires just past it (the fail check is strict)


class RoundTimers:
    """Retransmission timing of one call's open rounds, per slot: when its packet last left, when
    it first left, when the stream last moved on, its timer (backed off on timeouts) and how
    often it was resent."""

    def __init__(self, slots: int, retry: RetryPolicy, estimator: RtoEstimator):
        self.retry, self.est = retry, estimator
        self.sent_at = [0.0] * slots
        self.first_sent = [0.0] * slots
        self.progress = [0.0] * slots
        self.rto = [retry.timeout] * slots
        self.retries = [0] * slots
        self.seq = 0                     # sends so far in this call
        self.first_seq = [0] * slots     # per slot: the send number of its round's first copy
        self.last_seq = [0] * slots      # and of its latest copy
        self.sends: deque[tuple[int, int]] = deque()   # (send number, slot) of every send, oldest first
        self.passed: list[int] = []      # the OVERTAKE_COUNT highest first-send numbers answered
        self.timely_at = -1.0          # when a round sent once was last answered
        self.result_at = -1.0          # when any round was last answered
        self.probe_slot = -1           # the round resent before anything came back in this call
        self.sent_last = -1.0          # when anything was last sent
        self.tail_probes = 0           # tail loss probes sent since the last result
        self.probed = [False] * slots  # per slot: its open round was resent as a tail loss probe

    def opened(self, s: int, now: float) -> None:
        self.rto[s] = self.est.rto if self.retry.adaptive else self.retry.timeout
        self.retries[s], self.sent_at[s], self.first_sent[s], self.progress[s] = 0, now, now, now
        self.sent_last = now
        self.probed[s] = False
        self.seq += 1
        self.first_seq[s] = self.last_seq[s] = self.seq
        self.sends.append((self.seq, s))

    def overtaken(self, open_slots: set[int], answered: list[int], early: bool = False) -> list[int]:
        """The open rounds that OVERTAKE_COUNT rounds sent after their latest copy have overtaken
        (one round when `early`: the call's last rounds, or a tail loss probe answered), now that
        the rounds of the slots `answered` got their results; each copy once."""
        first_seq = self.first_seq
        passed = sorted(self.passed + [first_seq[s] for s in answered])[-OVERTAKE_COUNT:]
        self.passed = passed
        if not passed or (len(passed) < OVERTAKE_COUNT and not early):
            return []
        below = passed[-1] if early else passed[0]
        sends, last_seq, out = self.sends, self.last_seq, []
        while sends and sends[0][0] < below:
            seq, s = sends.popleft()
            if s in open_slots and last_seq[s] == seq:
                out.append(s)
        return out

    def answered(self, s: int, now: float) -> bool:
        """The round of `s` got its result; True when its round trip fed the RTO estimate (Karn:
        a retransmitted round's result is ambiguous)."""
        self.result_at = now
        self.tail_probes = 0
        if self.retries[s] == 0:
            self.timely_at = now
            if self.retry.adaptive:
                self.est.sample(now - self.sent_at[s])
                return True
        return False

    def probe_due(self) -> float:
        """When the next tail loss probe is due: PROBE_SRTTS smoothed round trips after the last
        send or result, doubled per probe already sent; never before the call's first result
        (then one round probes the job, `deferred`) and at most PROBES per silence."""
        srtt = self.est.srtt
        if self.result_at < 0 or self.tail_probes >= PROBES or srtt is None or not self.retry.adaptive:
            return float("inf")
        wait = max(PROBE_SRTTS * srtt, PROBE_MIN) * (2 ** self.tail_probes)
        return max(self.result_at, self.sent_last) + wait

    def probe(self, open_slots: set[int], now: float) -> int:
        """Time a tail loss probe: the open round sent last, resent (if it was lost with the
        rounds before it, its answer marks them overtaken). Returns its slot."""
        last_seq = self.last_seq
        s = max(open_slots, key=lambda s: last_seq[s])
        self.retransmitted(s, now, alive=True, fast=True)
        self.probed[s] = True
        self.tail_probes += 1
        return s

    def expiry(self, s: int) -> float:
        """When slot `s` needs the loop: its timer runs out, or its stream has gone `deadline`
        without progress (the call fails then, not at the next backed-off timer)."""
        return min(self.sent_at[s] + self.rto[s], self.progress[s] + self.retry.deadline + DEADLINE_SLACK)

    def next_expiry(self, open_slots: set[int]) -> float:
        """When the first open round needs the loop (RoundTimers.expiry)."""
        return min((self.expiry(s) for s in open_slots), default=time.monotonic())

    def expired(self, open_slots: set[int], now: float) -> list[int]:
        return [s for s in open_slots if now >= self.expiry(s)]

    def path_alive(self, s: int) -> bool:
        """Since the round of `s` was last sent, another round sent once was answered: the path
        and the switch turn rounds around in time, so this round's timeout is a loss (its packet,
        its result, or a peer's packet it waits for), not a queue or a switch that fell behind."""
        return self.timely_at > self.sent_at[s]

    def answered_since(self, s: int) -> bool:
        """Some round was answered since the round of `s` was last sent."""
        return self.result_at > self.sent_at[s]

    def deferred(self, s: int, now: float) -> None:
        """The timer of `s` ran out before anything came back in this call, and another round
        already probes the job: back the timer off as for a retransmission but send nothing (and,
        as for a resent round, take no RTT sample from its result: it waited for the peers, not
        for the path). Why: at the start of a call the workers do not start together, and the
        first to start would otherwise resend its whole first window, once per backoff level,
        while it waits for the last; a real loss shows once the job runs (overtaken rounds)."""
        self.sent_at[s] = now
        self.retries[s] += 1
        self.rto[s] = self.est.timed_out(self.rto[s]) if self.retry.adaptive else \
            min(self.rto[s] * self.retry.backoff, self.retry.max_timeout)

    def restart_deferred(self, open_slots: set[int], now: float) -> None:
        """The call's first results arrive: the rounds whose timers were deferred while nothing
        came back get a fresh timer from now (their packets reached the switch long ago; the
        peers' are arriving), instead of all expiring within the next moment."""
        rto = self.est.rto if self.retry.adaptive else self.retry.timeout
        for s in open_slots:
            if s != self.probe_slot and self.retries[s]:
                self.sent_at[s], self.rto[s] = now, rto

    def retransmitted(self, s: int, now: float, alive: bool, fast: bool = False) -> None:
        """Time the resent round of `s`. A `fast` retransmission (the round was overtaken: a loss)
        gets the current RTO. A timer that ran out backs this slot's timer off: on a path that is
        `alive` (other rounds come back in time) only this slot's, since the round most likely
        waits for a peer that fell behind (a loss would have been overtaken) and the other rounds
        need no longer timers; otherwise the shared RTO too (once per level), as TCP does when
        nothing comes back."""
        self.sent_at[s] = now
        self.sent_last = now
        self.retries[s] += 1
        self.seq += 1
        self.last_seq[s] = self.seq
        self.sends.append((self.seq, s))
        if fast and self.retry.adaptive:
            self.rto[s] = self.est.rto
        elif alive and self.retry.adaptive:
            self.rto[s] = min(self.rto[s] * self.retry.backoff, self.est.max_rto)
        elif self.retry.adaptive:
            self.rto[s] = self.est.timed_out(self.rto[s])
        else:
            self.rto[s] = min(self.rto[s] * self.retry.backoff, self.retry.max_timeout)


class UdpReducer(Reducer):
    """One worker's aggregation over UDP, to a p4reduce switch (or testbed.switch_model behind UDP).

    The socket is connected to the switch's aggregation address when there is a route to it, so
    the kernel delivers only datagrams from there (results come from the address the worker sends
    to, docs/protocol.md); otherwise every datagram's source is checked against it.

    `loop`: "native" (worker/native_loop.py: this class's loop in C) or "python" (this module);
    None: $P4REDUCE_WORKER_LOOP, else native when a C compiler can build it.
    """

    def __init__(self, job: JobParams, sock: socket.socket | None = None,
                 bind: tuple[str, int] = ("0.0.0.0", 0), retry: RetryPolicy | None = None,
                 window: CongestionWindow | None = None, loop: str | None = None):
        if not 0 <= job.slot_count <= C.SLOT_MAX + 1:   # 0: a job admitted without slots (rearm gives some)
            raise ValueError(f"slot_count must be 0..{C.SLOT_MAX + 1}, got {job.slot_count}")
        if not 0 <= job.rank < job.n_workers:
            raise ValueError(f"rank {job.rank} is outside 0..{job.n_workers - 1}")
        self.loop = native_loop.choose(loop)   # which implementation of aggregate() runs
        self.job = job
        self.rank = job.rank
        self.n_workers = job.n_workers
        self.lanes = job.lanes
        self.layout = Layout(job.lanes, job.subblock)
        self.retry = retry or RetryPolicy()
        self.bytes_sent = 0
        self._stats = StreamStats()
        self.native_call: Any = None     # the native loop's live counters while a call runs on it
        self._own_sock = sock is None
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind(bind)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
            except OSError:
                pass
        self.dest = (job.switch_ip, job.switch_port)
        try:
            sock.connect(self.dest)
            self._connected = True
        except OSError:  # no route from the bound address (yet): send each datagram explicitly
            self._connected = False
        sock.setblocking(False)
        self.sock = sock
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._last_ver = [1] * job.slot_count   # per slot, persists across calls (docs/protocol.md 7)
        # one RTO estimate and one window for all slots (same path, same switch queue), kept across
        # calls so the next tensor starts with what the last one measured
        self.rto_estimator = self.retry.estimator()
        self.window = window or CongestionWindow()

    @property
    def stats(self) -> StreamStats:
        """This worker's counters, cumulative; live during a call on either loop."""
        if self.native_call is not None:
            native_loop.read_stats(self.native_call, self._stats)
        return self._stats

    def rearm(self, job: JobParams) -> None:
        """The job as the controller re-armed it (its wire token, perhaps its slots) and every
        slot's next round as the first one (version 0), as on a job's first call: the switch's
        slots were just reset (the job returns from the host fallback, where ranks may have left
        the switch mid-call with different versions). Between calls only."""
        if (job.job_id, job.rank, job.n_workers) != (self.job.job_id, self.rank, self.n_workers):
            raise ValueError(f"rearm: {job.describe()} is not this reducer's job ({self.job.describe()})")
        if not 0 <= job.slot_count <= C.SLOT_MAX + 1:
            raise ValueError(f"slot_count must be 0..{C.SLOT_MAX + 1}, got {job.slot_count}")
        self.job = job
        self._last_ver[:] = [1] * job.slot_count

    @property
    def local_port(self) -> int:
        return self.sock.getsockname()[1]

    def close(self) -> None:
        if self._own_sock:
            self.sock.close()

    # ---- one aggregation ------------------------------------------------------------------
    def aggregate(self, source: BlockSource, out: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        """Stream `source` through the switch (worker/streams.py schedules the rounds and builds
        the packets); this loop sends, receives in batches and retransmits. Returns (sums, agreed
        exponents or None); the sums in `out` when given (Reducer.aggregate). With the native
        loop (worker/native_loop.py, the default) the same loop runs in C."""
        if self.job.slot_count == 0:
            raise AggregationError(f"{self.job.describe()}: the job holds no slots on the switch (its calls run on "
                                   "the host fallback until the controller gives it some)")
        if self.loop == "native":
            return native_loop.aggregate(self, source, out)
        win = StreamWindow(source, self.job.job_id, self.rank, self.job.slot_count, self.job.sparse,
                           self.layout, self._last_ver, wire_token=self.job.wire_token, out=out)
        if win.n_blocks == 0:
            return win.sums, win.exps
        timers = RoundTimers(win.S, self.retry, self.rto_estimator)
        self._drain()  # late results of earlier calls must not be taken for this call's rounds
        win.start()
        self._open_ready(win, timers, time.monotonic())
        describe = self.job.describe()
        poll, monotonic, stats, window, S = self._poll.poll, time.monotonic, self.stats, self.window, win.S
        first_sent = timers.first_sent
        # a lower bound of the first timer's expiry: opening and answering rounds only delay the
        # first expiry, so the timers are scanned only once it has passed
        deadline = timers.next_expiry(win.open)
        while win.active:
            now = monotonic()
            if now >= deadline:
                self._retransmit_expired(win, timers, now)
                if win.open and now >= timers.probe_due():
                    self._probe_tail(win, timers, now)
                self._open_ready(win, timers, now)
                deadline = min(timers.next_expiry(win.open), timers.probe_due())
                continue
            poll((deadline - now) * 1000.0)
            count = self._receive(win)
            if not count:
                continue
            stats.wakeups += 1
            now = monotonic()
            answers = win.take_results(count, describe)
            if answers:
                # one RTT sample per batch (the first round sent once: Karn), one window update
                newest = 0.0
                sampled = False
                if timers.result_at < 0 and stats.deferred:
                    timers.restart_deferred(win.open, now)
                for answer in answers:
                    s = answer.slot
                    if not sampled and timers.answered(s, now):
                        stats.rtt_samples += 1
                        sampled = True
                    if first_sent[s] > newest:
                        newest = first_sent[s]
                window.answered(newest, S, len(answers))
                if win.open:
                    self._retransmit_overtaken(win, timers, answers, now)
            stats.results += len(answers)
            stats.ignored += count - len(answers)
            if win.forged:
                stats.forged += win.forged
                win.forged = 0
            self._open_ready(win, timers, now)
            if answers:      # the probe is due PROBE_SRTTS after this batch if nothing else comes
                deadline = min(deadline, timers.probe_due())
        return win.sums, win.exps

    def aggregate_float(self, source: FloatSource) -> np.ndarray:
        """Reducer.aggregate_float; on the native loop the float32 input is quantized and the
        results dequantized inside the C loop (stochastic rounding's lanes still come from the
        source), on the Python loop as the reference does."""
        if self.loop == "native":
            return native_loop.aggregate_float(self, source)
        return super().aggregate_float(source)

    def _open_ready(self, win: StreamWindow, timers: RoundTimers, now: float) -> None:
        """Open the rounds the window allows, one encode for all, and send them."""
        rounds = win.to_open(self.window.limit(win.S))
        if not rounds:
            return
        win.open_rounds(rounds)
        frame, opened, send = win.frame, timers.opened, self._send
        for s, _b, _e in rounds:
            send(frame(s))
            opened(s, now)

    def _retransmit_overtaken(self, win: StreamWindow, timers: RoundTimers, answers: list[Answer],
                              now: float) -> None:
        """Fast retransmission, after TCP's: resend (flagged RETX) the open rounds that
        OVERTAKE_COUNT rounds sent after them have overtaken (`answers`: this batch's), without
        waiting for their timers. Rounds complete in the order the workers send them, so an
        overtaken round has lost a packet: ours, its result or a peer's (then this copy is a
        duplicate the switch ignores, and the peer, overtaken too, resends its own). A loss is
        not congestion: the window stays."""
        probed = timers.probed
        early = (len(win.open) <= OVERTAKE_COUNT and not win.ready) or any(probed[a.slot] for a in answers)
        overtaken = timers.overtaken(win.open, [a.slot for a in answers], early)
        for s in overtaken:
            win.mark_retransmission(s)
            self._send(win.frame(s))
            timers.retransmitted(s, now, alive=True, fast=True)
        self.stats.retransmissions += len(overtaken)
        self.stats.fast_retransmissions += len(overtaken)

    def _probe_tail(self, win: StreamWindow, timers: RoundTimers, now: float) -> None:
        """Nothing came back for a while: resend the newest open round (flagged RETX) so that its
        answer, or the lack of one, tells which rounds before it were lost (RACK-TLP)."""
        s = timers.probe(win.open, now)
        win.mark_retransmission(s)
        self._send(win.frame(s))
        self.stats.retransmissions += 1
        self.stats.tail_probes += 1

    def _retransmit_expired(self, win: StreamWindow, timers: RoundTimers, now: float) -> None:
        """Resend (flagged RETX) every open round whose timer ran out; fail a stream stuck too
        long. A timeout that looks like congestion halves the window (worker/window.py)."""
        for s in timers.expired(win.open, now):
            if now - timers.progress[s] > self.retry.deadline:
                self._fail(s, win.block[s], win.ver[s], timers.retries[s], now - timers.progress[s])
            alive = timers.path_alive(s)
            answered = timers.answered_since(s)
            self.window.timed_out(timers.sent_at[s], now, timely=alive, answered=answered)
            if timers.result_at < 0:        # nothing answered yet in this call: peers may not have started
                if timers.probe_slot < 0:
                    timers.probe_slot = s       # one round probes the job ...
                elif s != timers.probe_slot:
                    timers.deferred(s, now)     # ... the others wait for its answer, backing off
                    self.stats.deferred += 1
                    continue
            win.mark_retransmission(s)
            self.stats.retransmissions += 1
            self._send(win.frame(s))
            timers.retransmitted(s, now, alive)

    def _receive(self, win: StreamWindow) -> int:
        """Read the datagrams waiting on the socket into the window's ring (at most one ring's
        worth); returns how many."""
        if not self._connected:
            return self._receive_checked(win)
        recv_into, slots, lengths = self.sock.recv_into, win.ring_slots, win.ring_len
        count = 0
        for view in slots:
            try:
                lengths[count] = recv_into(view)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # e.g. ICMP port unreachable reported on the socket: like a loss
                self.stats.send_errors += 1
                break
            count += 1
        return count

    def _receive_checked(self, win: StreamWindow) -> int:
        """_receive for a socket the kernel does not filter (not connected): datagrams from any
        other source than the switch's aggregation address and port are dropped and counted."""
        recvfrom_into, slots, lengths, dest = self.sock.recvfrom_into, win.ring_slots, win.ring_len, self.dest
        count = 0
        for _ in range(len(slots)):
            try:
                n, source = recvfrom_into(slots[count])
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.stats.send_errors += 1
                break
            if source[0] != dest[0] or source[1] != dest[1]:
                self.stats.forged += 1
                self.stats.ignored += 1
                continue
            lengths[count] = n
            count += 1
        return count

    def _drain(self) -> None:
        while True:
            try:
                self.sock.recv(65536)
                self.stats.ignored += 1
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return

    def _send(self, data: memoryview) -> None:
        try:
            if self._connected:
                self.sock.send(data)
            else:
                self.sock.sendto(data, self.dest)
        except (BlockingIOError, InterruptedError):  # socket buffer full: the timeout will resend
            self.stats.send_errors += 1
        except OSError:
            self.stats.send_errors += 1
        self.stats.packets_sent += 1
        self.bytes_sent += len(data) + C.FRAME_HEADER_BYTES

    def _fail(self, s: int, b: int, v: int, retries: int, waited: float) -> None:
        offset = s * self.lanes if b < 0 else b * self.lanes
        what = "exponent pre-round" if b < 0 else f"block {b}"
        raise AggregationError(
            f"{self.job.describe()}: slot {s} ({what}, offset {offset}, ver {v}) got no result from the "
            f"switch at {self.dest[0]}:{self.dest[1]} for {waited:.1f}s despite {retries} retransmissions: "
            f"a peer of the job crashed or left, or the switch is gone")
