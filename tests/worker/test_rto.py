"""The adaptive retransmission timeout (worker/rto.py): RFC 6298 smoothing, clamping, backoff."""
import pytest

from p4reduce.worker.rto import SRTT_FACTOR, RtoEstimator
from p4reduce.worker.streaming import RetryPolicy


def test_first_sample_sets_srtt_and_half_rttvar():
    est = RtoEstimator(initial=0.05, min_rto=0.001, max_rto=5.0)
    assert est.rto == 0.05 and est.srtt is None
    est.sample(0.1)
    assert est.srtt == pytest.approx(0.1) and est.rttvar == pytest.approx(0.05)
    assert est.rto == pytest.approx(0.1 + 4 * 0.05)


def test_samples_converge_to_the_round_trip_and_follow_a_change():
    est = RtoEstimator(initial=0.05, min_rto=0.001, max_rto=5.0, granularity=0.001)
    for _ in range(60):
        est.sample(0.01)
    assert est.srtt == pytest.approx(0.01, rel=1e-6)
    # variance gone: SRTT + G would be 11 ms, but the RTO stays at SRTT_FACTOR smoothed RTTs
    assert est.rto == pytest.approx(SRTT_FACTOR * 0.01, rel=1e-3)
    for _ in range(60):                 # the switch got slow: 20x the round trip
        est.sample(0.2)
    assert est.srtt == pytest.approx(0.2, rel=0.01)
    assert SRTT_FACTOR * 0.2 * 0.99 < est.rto < SRTT_FACTOR * 0.2 + 0.05


def test_rto_is_never_below_srtt_factor_smoothed_round_trips():
    """Samples of one batch are alike, so RTTVAR alone underestimates the jitter: whatever the
    samples, the RTO covers SRTT_FACTOR smoothed round trips (within the clamp)."""
    est = RtoEstimator(initial=0.05, min_rto=0.001, max_rto=5.0)
    for i in range(500):
        est.sample(0.030 + 0.0001 * (i % 3))
        assert est.srtt is not None and est.rto >= SRTT_FACTOR * est.srtt
    assert est.rto == pytest.approx(SRTT_FACTOR * est.srtt, rel=0.02)


def test_rttvar_tracks_jitter():
    est = RtoEstimator(initial=0.05, min_rto=0.001, max_rto=5.0)
    for i in range(200):
        est.sample(0.1 if i % 2 else 0.2)
    # alternating samples: the RTO covers the slow ones with room to spare
    assert est.rto > 0.2 + 0.05 and 0.14 < est.srtt < 0.16


def test_rto_is_clamped_to_min_and_max():
    est = RtoEstimator(initial=0.05, min_rto=0.01, max_rto=0.5)
    for _ in range(50):
        est.sample(1e-6)
    assert est.rto == 0.01
    for _ in range(50):
        est.sample(10.0)
    assert est.rto == 0.5
    assert RtoEstimator(initial=0.001, min_rto=0.01, max_rto=0.5).rto == 0.01


def test_backoff_doubles_and_is_clamped():
    est = RtoEstimator(initial=0.02, min_rto=0.01, max_rto=0.1, backoff=2.0)
    assert est.timed_out(0.02) == pytest.approx(0.04) and est.rto == pytest.approx(0.04)
    assert est.timed_out(0.04) == pytest.approx(0.08) and est.rto == pytest.approx(0.08)
    assert est.timed_out(0.08) == pytest.approx(0.1) and est.rto == pytest.approx(0.1)
    assert est.timed_out(0.1) == pytest.approx(0.1)


def test_many_slots_timing_out_together_back_off_once():
    est = RtoEstimator(initial=0.02, min_rto=0.01, max_rto=10.0)
    for _ in range(64):
        assert est.timed_out(0.02) == pytest.approx(0.04)
    assert est.rto == pytest.approx(0.04)


def test_backed_off_rto_is_kept_until_a_valid_sample():
    est = RtoEstimator(initial=0.02, min_rto=0.01, max_rto=10.0)
    est.sample(0.02)
    est.timed_out(est.rto)
    backed = est.rto
    assert backed == pytest.approx(2 * (0.02 + 4 * 0.01))
    est.sample(0.02)  # a round sent once came back: the estimate, not the backoff, rules again
    assert est.rto < backed


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="min_timeout <= max_timeout"):
        RtoEstimator(initial=0.05, min_rto=1.0, max_rto=0.5)
    with pytest.raises(ValueError, match="initial timeout"):
        RtoEstimator(initial=0, min_rto=0.01, max_rto=0.5)
    with pytest.raises(ValueError, match="backoff"):
        RtoEstimator(initial=0.05, min_rto=0.01, max_rto=0.5, backoff=0.5)


def test_retry_policy_builds_its_estimator():
    est = RetryPolicy(timeout=0.05, min_timeout=0.01, max_timeout=1.0, backoff=3.0).estimator()
    assert (est.rto, est.min_rto, est.max_rto, est.backoff) == (0.05, 0.01, 1.0, 3.0)
    # an initial timeout below the minimum is what the user asked for: the floor follows it
    assert RetryPolicy(timeout=0.005).estimator().rto == 0.005
