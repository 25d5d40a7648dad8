"""Adaptive retransmission timeout for a worker's slots, after TCP (RFC 6298 + Karn's algorithm).

Why: a fixed timeout is wrong for every switch but one. A slow software switch under load needs
far longer than 50 ms to turn a window of 64 slots around, so a fixed 50 ms fires on every round
and the retransmissions load the switch further (congestion collapse); a hardware switch answers
in microseconds, so a fixed 50 ms makes every real loss cost 50 ms.

One estimator serves all slots of a worker (they share the path to the switch and its queue).
Round-trip samples update a smoothed RTT and its mean deviation::

    first sample R:  SRTT = R,  RTTVAR = R / 2
    later samples:   RTTVAR = (1 - beta) RTTVAR + beta |SRTT - R|,  SRTT = (1 - alpha) SRTT + alpha R
    RTO = clamp(max(SRTT + max(G, K * RTTVAR), SRTT_FACTOR * SRTT), min_rto, max_rto)

with alpha = 1/8, beta = 1/4, K = 4, and the RTO never below ``SRTT_FACTOR`` smoothed RTTs.
Why the floor: a worker takes one sample per batch of results, and samples of one batch are
alike, so RTTVAR underestimates how much round trips vary (queueing at the switch, peers opening
a round a little later); SRTT + 4 RTTVAR then sits a hair above SRTT and a few percent of rounds
time out spuriously. Losses do not wait for the timer (worker/streaming.py resends a round as
soon as a later one overtakes it), so a conservative timer costs little.

Karn's rule is the caller's part: a round that was retransmitted gives no sample (its result may
answer either copy). A timeout backs the RTO off (:meth:`RtoEstimator.timed_out`) when nothing
came back in time (on a live path the caller backs off only that round's timer); the backed-off value is
kept for new rounds until a valid sample arrives, so a path slower than the current estimate
cannot starve the estimator of samples.
"""
from __future__ import annotations

ALPHA = 1 / 8
BETA = 1 / 4
K = 4
SRTT_FACTOR = 2   # the RTO is at least this many smoothed RTTs


class RtoEstimator:
    """SRTT/RTTVAR estimator giving the timeout for a newly sent round; all times in seconds."""

    def __init__(self, initial: float, min_rto: float, max_rto: float, backoff: float = 2.0,
                 granularity: float = 0.001):
        if not 0 < min_rto <= max_rto:
            raise ValueError(f"need 0 < min_timeout <= max_timeout, got {min_rto} and {max_rto}")
        if initial <= 0:
            raise ValueError(f"the initial timeout must be positive, got {initial}")
        if backoff < 1:
            raise ValueError(f"backoff must be at least 1, got {backoff}")
        self.min_rto, self.max_rto = float(min_rto), float(max_rto)
        self.backoff = float(backoff)
        self.granularity = float(granularity)
        self.srtt: float | None = None      # None until the first sample
        self.rttvar: float | None = None
        self.samples = 0
        self._rto = self._clamp(initial)

    def _clamp(self, t: float) -> float:
        return min(max(t, self.min_rto), self.max_rto)

    @property
    def rto(self) -> float:
        """Timeout for a round sent now."""
        return self._rto

    def sample(self, rtt: float) -> None:
        """Feed the round-trip time of a round that was sent exactly once (Karn's rule)."""
        if rtt < 0:
            return
        if self.srtt is None or self.rttvar is None:
            srtt, rttvar = rtt, rtt / 2
        else:
            rttvar = (1 - BETA) * self.rttvar + BETA * abs(self.srtt - rtt)
            srtt = (1 - ALPHA) * self.srtt + ALPHA * rtt
        self.srtt, self.rttvar = srtt, rttvar
        self.samples += 1
        self._rto = self._clamp(max(srtt + max(self.granularity, K * rttvar), SRTT_FACTOR * srtt))

    def timed_out(self, fired: float) -> float:
        """A timer of ``fired`` seconds expired: return that timer's backed-off value and keep at
        least that much for new rounds. Many slots timing out together at the same level back the
        shared RTO off once, not once per slot."""
        backed = self._clamp(fired * self.backoff)
        self._rto = max(self._rto, backed)
        return backed

    def state(self) -> tuple[float | None, float | None, int, float]:
        """(srtt, rttvar, samples, rto): what a loop running elsewhere (worker/native_loop.py)
        starts from and hands back through :meth:`restore`."""
        return self.srtt, self.rttvar, self.samples, self._rto

    def restore(self, srtt: float | None, rttvar: float | None, samples: int, rto: float) -> None:
        self.srtt, self.rttvar, self.samples, self._rto = srtt, rttvar, samples, rto

    def describe(self) -> str:
        if self.srtt is None or self.rttvar is None:
            return f"rto {self._rto * 1e3:.1f} ms (no samples yet)"
        return (f"rto {self._rto * 1e3:.1f} ms, srtt {self.srtt * 1e3:.1f} ms, "
                f"rttvar {self.rttvar * 1e3:.1f} ms, {self.samples} samples")
