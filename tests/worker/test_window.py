"""The congestion window (worker/window.py): which timeouts shrink it and which do not."""
import math

import pytest

from p4reduce.worker.window import CongestionWindow


def _opened(slots: int = 64) -> CongestionWindow:
    """A window that grew to all of `slots` (slow start on answered rounds)."""
    w = CongestionWindow()
    for i in range(slots):
        w.answered(sent_at=float(i), slots=slots)
    assert w.limit(slots) == slots
    return w


def test_late_results_are_congestion_and_halve_once_per_window():
    w = _opened()
    # results still come back (answered=True) but none in time and none newer: a queue
    assert w.timed_out(sent_at=100.0, now=101.0, timely=False, answered=True) is True
    assert w.limit(64) == 32 and w.decreases == 1
    # a round sent before that decrease times out too: same window of data, no second halving
    assert w.timed_out(sent_at=100.5, now=101.2, timely=False, answered=True) is False
    assert w.limit(64) == 32 and w.decreases == 1
    # a round sent after it: the queue is still there, halve again (never below the minimum)
    assert w.timed_out(sent_at=101.5, now=102.0, timely=False, answered=True) is True
    assert w.limit(64) == w.minimum and w.ssthresh == w.minimum


def test_a_round_answered_in_time_since_makes_a_timeout_a_loss():
    w = _opened()
    assert w.timed_out(sent_at=100.0, now=101.0, timely=True, answered=True) is False
    assert w.limit(64) == 64 and (w.losses, w.decreases) == (1, 0)


def test_a_newer_round_answered_makes_a_timeout_a_loss():
    w = _opened()
    w.answered(sent_at=200.0, slots=64)
    assert w.timed_out(sent_at=150.0, now=201.0, timely=False, answered=True) is False
    assert w.limit(64) == 64 and w.losses == 1


def test_nothing_answered_since_is_a_stall_not_congestion():
    """A job waiting for a peer (not started yet, or retransmitting) answers nothing at all: the
    timers back off, the window stays, so windows of different workers do not drift apart."""
    w = _opened()
    for k in range(10):
        assert w.timed_out(sent_at=100.0 + k, now=110.0 + k, timely=False, answered=False) is False
    assert w.limit(64) == 64 and (w.stalls, w.decreases) == (10, 0)
    assert w.ssthresh == math.inf


def test_growth_is_slow_start_then_additive():
    w = CongestionWindow(initial=16, minimum=16)
    w.answered(sent_at=1.0, slots=64, rounds=8)
    assert w.cwnd == 24                     # slow start: one round per answered round
    w.timed_out(sent_at=2.0, now=3.0, timely=False, answered=True)
    assert w.cwnd == 16 == w.ssthresh       # halved (not below the minimum 16)
    w.answered(sent_at=4.0, slots=64, rounds=16)
    assert w.cwnd == pytest.approx(17.0)    # additive: one round per window of answered rounds


def test_bad_window_parameters_are_named():
    with pytest.raises(ValueError, match="minimum window"):
        CongestionWindow(initial=1, minimum=0)
    with pytest.raises(ValueError, match="initial window"):
        CongestionWindow(initial=4, minimum=8)
    with pytest.raises(ValueError, match="maximum window"):
        CongestionWindow(initial=8, minimum=8, maximum=4)
