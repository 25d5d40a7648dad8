"""How many rounds a worker keeps in flight: AIMD on timeouts, after TCP's congestion window.

Why: every open round occupies a slot copy in the switch and a place in its queue. A fixed window
of all the job's slots floods a slow target (a loaded software switch takes longer to turn the
window around than the retransmission timeout, so every round is resent and the resends load it
further), while a small fixed window leaves a fast one idle. So the window adapts:

* it starts at ``initial`` and grows by one round per answered round while below ``ssthresh``
  (slow start: doubling per round trip), then by one round per window of answered rounds
  (additive increase), never beyond the job's slots;
* a timeout that looks like congestion halves it (multiplicative decrease), at most once per
  window of data: only a round sent after the last decrease can trigger the next one;
* a timeout of a round when a round sent *after* it has already been answered, or a round sent
  once has been answered in time since it was sent, is a loss, not congestion: the path
  delivers, this one packet (or a peer's, or its result) was lost. It is retransmitted without
  shrinking the window, so random loss does not starve a fast path (the switch answers rounds in
  the order it receives them, so this evidence is reliable);
* a timeout when nothing at all came back since the round was sent is a stall, not congestion:
  the job waits for a peer (one that has not started yet, or is retransmitting after its own
  timeout) or the switch is gone. The timer backs off (worker/rto.py), the window stays: a
  halved window after every stall is what let workers' windows drift apart, each worker holding
  rounds its peers did not open, until the job crawled one round at a time.

So the window shrinks only when results come back late: a queue (a slow switch or a full link)
that takes longer to turn the window around than the timer allows.

Which rounds to open within the window is worker/streams.py's concern (it keeps every worker of a
job free of deadlock whatever their windows are).
"""
from __future__ import annotations

import math


class CongestionWindow:
    """The number of rounds in flight allowed now; persists across a worker's calls."""

    def __init__(self, initial: int = 16, minimum: int = 16, maximum: int | None = None):
        if minimum < 1:
            raise ValueError(f"the minimum window must be at least 1, got {minimum}")
        if initial < minimum:
            raise ValueError(f"the initial window ({initial}) is below the minimum ({minimum})")
        if maximum is not None and maximum < minimum:
            raise ValueError(f"the maximum window ({maximum}) is below the minimum ({minimum})")
        self.minimum = minimum
        self.maximum = maximum
        self.cwnd = float(initial)
        self.ssthresh = math.inf
        self.decreases = 0          # congestion timeouts that halved the window
        self.losses = 0             # timeouts taken for isolated losses (window kept)
        self.stalls = 0             # timeouts while nothing came back at all (window kept)
        self._decreased_at = -math.inf
        self._newest_answered = -math.inf   # send time of the newest round answered so far

    def limit(self, slots: int) -> int:
        """Rounds that may be in flight on a job with `slots` slots."""
        cap = slots if self.maximum is None else min(slots, self.maximum)
        return max(self.minimum, min(cap, int(self.cwnd)))

    def answered(self, sent_at: float, slots: int, rounds: int = 1) -> None:
        """`rounds` rounds got their results, the newest of them first sent at `sent_at`."""
        if sent_at > self._newest_answered:
            self._newest_answered = sent_at
        cap = slots if self.maximum is None else min(slots, self.maximum)
        if self.cwnd >= cap:
            self.cwnd = float(cap)
            return
        if self.cwnd < self.ssthresh:
            self.cwnd = min(self.cwnd + rounds, max(self.ssthresh, self.cwnd), float(cap))
        else:
            self.cwnd = min(self.cwnd + rounds / self.cwnd, float(cap))

    def timed_out(self, sent_at: float, now: float, timely: bool = False, answered: bool = True) -> bool:
        """The round last sent at `sent_at` got no result in time. `timely`: a round sent once was
        answered since `sent_at`; `answered`: any round was. Returns True when this is taken as
        congestion (the window was halved), False for an isolated loss, a stall or a timeout of
        the window that was already halved."""
        if timely or self._newest_answered > sent_at:
            self.losses += 1
            return False
        if not answered:
            self.stalls += 1
            return False
        if sent_at < self._decreased_at:
            return False
        self.ssthresh = max(float(self.minimum), self.cwnd / 2)
        self.cwnd = self.ssthresh
        self._decreased_at = now
        self.decreases += 1
        return True

    def state(self) -> tuple[float, float]:
        """(when the window was last halved, send time of the newest round answered): with the
        public fields, what a loop running elsewhere (worker/native_loop.py) starts from and
        hands back through :meth:`restore`."""
        return self._decreased_at, self._newest_answered

    def restore(self, decreased_at: float, newest_answered: float) -> None:
        self._decreased_at, self._newest_answered = decreased_at, newest_answered

    def describe(self) -> str:
        return (f"window {self.cwnd:.1f} rounds, ssthresh {self.ssthresh:.1f}, "
                f"{self.decreases} decreases, {self.losses} isolated losses, {self.stalls} stalls")
