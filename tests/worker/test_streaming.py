"""UDP streaming against testbed.switch_model served as a fake switch on 127.0.0.1: exact integer sums,
float error bounds, loss/duplicates/reordering, sparse skipping, dead peers and a vanished switch;
every test on both loops, native and Python."""
import os
import socket
import threading
import time
import types

import numpy as np
import pytest
from testbed.fakeswitch import FakeSwitch, Impairments
from testbed.loopback import loopback_reducers

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire
from p4reduce.worker import quantize as qz
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.job import JobParams
from p4reduce.worker.reducer import AggregationError
from p4reduce.worker.streaming import RetryPolicy, UdpReducer
from p4reduce.worker.streams import next_nonzero

FAST = RetryPolicy(timeout=0.02, backoff=2.0, max_timeout=0.2, deadline=2.0)

pytestmark = pytest.mark.usefixtures("both_worker_loops")   # every test on the C loop and the Python one


def _run(sw, n, slots, fns, sparse=False, job_id=7, retry=FAST, ranks=None):
    """Start n reducers registered with the fake switch; run fns[r](reducer) for ranks in ``ranks``."""
    reds = loopback_reducers(sw, job_id, n, slots, sparse=sparse, name="unit", retry=retry)
    assert {red.loop for red in reds} == {os.environ["P4REDUCE_WORKER_LOOP"]}
    out, errs = {}, {}

    def body(r):
        try:
            out[r] = fns(reds[r])
        except Exception as e:
            errs[r] = e
    threads = [threading.Thread(target=body, args=(r,)) for r in (ranks if ranks is not None else range(n))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    for red in reds:
        red.close()
    return out, errs, reds


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("impair", [Impairments(), Impairments(0.1, 0.1, 0.1, 0.1, seed=3)],
                         ids=["clean", "lossy"])
def test_int32_sums_are_exact(sparse, impair):
    n = 4
    rng = np.random.default_rng(1)
    xs = [rng.integers(-2**20, 2**20, size=(37, 101), dtype=np.int32) for _ in range(n)]
    if sparse:
        for x in xs:
            x[5:30] = 0
    with FakeSwitch(impair=impair) as sw:
        out, errs, reds = _run(sw, n, 16, lambda red: Communicator(red).allreduce(xs[red.rank]), sparse=sparse)
    assert not errs
    want = np.sum([x.astype(np.int64) for x in xs], axis=0)
    for r in range(n):
        assert out[r].dtype == np.int32 and np.array_equal(out[r], want)
    if impair.loss_up:
        assert sum(red.stats.retransmissions for red in reds) > 0


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_within_the_quantization_bound_and_same_on_every_worker(sparse):
    n = 3
    rng = np.random.default_rng(2)
    xs = [(rng.standard_normal(2000) * 10.0 ** rng.integers(-3, 3, 2000)).astype(np.float32) for _ in range(n)]
    with FakeSwitch(impair=Impairments(0.05, 0.05, 0.05, 0.05, seed=9)) as sw:
        out, errs, _ = _run(sw, n, 8, lambda red: Communicator(red).allreduce(xs[red.rank]), sparse=sparse)
    assert not errs
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    exps = np.max([qz.propose_exponents(x, C.LANES) for x in xs], axis=0)
    bound = qz.error_bound(exps, n, C.LANES, exact.size) + np.abs(exact) * 2.0**-23
    for r in range(n):
        assert np.array_equal(out[r], out[0])
        assert np.all(np.abs(out[r] - exact) <= bound)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("where", ["buffer", "in-place"])
@pytest.mark.parametrize("size", [C.LANES * 40, C.LANES * 40 - 5], ids=["whole-blocks", "padded"])
def test_int32_sums_into_a_callers_buffer_reused_across_calls(sparse, where, size):
    """out= receives exact sums, call after call, in a buffer the caller keeps or in the input
    itself; a sparse call leaves no stale value of the previous call in blocks zero everywhere."""
    n = 3

    def calls(red):
        buf = np.full(size, 12345, np.int32)      # stale values a sparse call must not leave
        got = []
        for call in range(3):
            x = np.random.default_rng(100 * call + red.rank).integers(-2**20, 2**20, size, dtype=np.int32)
            x[C.LANES * (5 + call):C.LANES * (25 + call)] = 0        # zero on every worker
            x[C.LANES * 30 + red.rank] = 0 if red.rank else 7          # zero here only on ranks 1, 2
            out = x if where == "in-place" else buf
            res = Communicator(red).allreduce(x, out=out)
            assert res is out or np.shares_memory(res, out)
            got.append(res.copy())
        return got

    with FakeSwitch() as sw:
        out, errs, _ = _run(sw, n, 8, calls, sparse=sparse)
    assert not errs
    for call in range(3):
        xs = []
        for r in range(n):
            x = np.random.default_rng(100 * call + r).integers(-2**20, 2**20, size, dtype=np.int32)
            x[C.LANES * (5 + call):C.LANES * (25 + call)] = 0
            x[C.LANES * 30 + r] = 0 if r else 7
            xs.append(x)
        want = np.sum([x.astype(np.int64) for x in xs], axis=0)
        for r in range(n):
            assert np.array_equal(out[r][call], want), (call, r)


def test_out_of_the_wrong_kind_is_refused_before_anything_is_sent():
    with FakeSwitch() as sw:
        reds = loopback_reducers(sw, 3, 1, 4, name="unit", retry=FAST)
        comm = Communicator(reds[0])
        x = np.arange(600, dtype=np.int32)
        with pytest.raises(ValueError, match="600 int32"):
            comm.allreduce(x, out=np.zeros(599, np.int32))
        with pytest.raises(ValueError, match="600 int32"):
            comm.allreduce(x, out=np.zeros(600, np.int64))
        with pytest.raises(ValueError, match="C-contiguous"):
            reds[0].sum_int32(x, out=np.zeros(1200, np.int32)[::2])
        assert reds[0].stats.packets_sent == 0
        y = comm.allreduce(x.reshape(20, 30), average=True, out=np.zeros((30, 20), np.int32))
        assert y.shape == (20, 30) and np.array_equal(y, x.reshape(20, 30))   # one worker: the mean is x
        f = np.linspace(-1, 1, 700, dtype=np.float32)
        fo = np.zeros(700, np.float32)
        assert comm.allreduce(f, out=fo) is not None and np.allclose(fo, f, atol=1e-6)
        for red in reds:
            red.close()


def test_sparse_mode_skips_blocks_that_are_zero_everywhere():
    n, slots = 4, 8
    size = C.LANES * 400
    xs = [np.zeros(size, np.int32) for _ in range(n)]
    xs[0][C.LANES * 5 + 3] = 1           # block 5: one non-zero sub-block, on one worker
    xs[3][C.LANES * 333] = 2             # block 333: another worker
    with FakeSwitch() as sw:
        out, errs, reds = _run(sw, n, slots, lambda red: red.sum_int32(xs[red.rank]), sparse=True)
    assert not errs
    assert out[1][C.LANES * 5 + 3] == 1 and out[1][C.LANES * 333] == 2 and np.count_nonzero(out[1]) == 2
    # one packet per stream to start, plus the two non-zero blocks: not 400 (a timer that runs
    # out on a loaded machine resends one of them; that is not a block sent)
    for red in reds:
        assert red.stats.packets_sent - red.stats.retransmissions <= slots + 2, red.stats
    # rank 0's one non-zero sub-block travels alone (16 lanes, not 256), once plus resends
    st = reds[0].stats
    lanes_bytes = reds[0].bytes_sent - st.packets_sent * (C.FRAME_HEADER_BYTES + C.HEADER_BYTES)
    assert 4 * C.SUBBLOCK <= lanes_bytes <= 4 * C.SUBBLOCK * (1 + st.retransmissions), st


def test_many_calls_of_different_sizes_keep_slot_versions_in_step():
    n = 2
    rng = np.random.default_rng(4)
    sizes = [1, 31, 32, 33, 500, 7, 4096]
    xs = {s: [rng.integers(-100, 100, s).astype(np.int32) for _ in range(n)] for s in sizes}

    def fn(red):
        return [red.sum_int32(xs[s][red.rank]) for s in sizes]
    with FakeSwitch(impair=Impairments(0.05, 0.05, 0.1, 0.1, seed=5)) as sw:
        out, errs, _ = _run(sw, n, 4, fn)
    assert not errs
    for i, s in enumerate(sizes):
        assert np.array_equal(out[0][i], xs[s][0] + xs[s][1])


def test_dead_peer_gives_a_clear_error_within_the_deadline():
    retry = RetryPolicy(timeout=0.02, max_timeout=0.1, deadline=1.0)
    t0 = time.monotonic()
    with FakeSwitch() as sw:
        out, errs, _ = _run(sw, 3, 4, lambda red: red.sum_int32(np.ones(1000, np.int32)), retry=retry,
                            ranks=[0, 1])  # rank 2 never shows up
    elapsed = time.monotonic() - t0
    assert set(errs) == {0, 1} and not out
    msg = str(errs[0])
    assert isinstance(errs[0], AggregationError)
    assert "job unit (id 7) rank 0: slot " in msg and "offset" in msg and "peer" in msg
    assert elapsed < 1.0 + 1.5


def test_switch_gone_gives_a_clear_error():
    retry = RetryPolicy(timeout=0.02, max_timeout=0.1, deadline=0.8)
    sw = FakeSwitch().start()
    sw.stop()  # nothing listens at its address any more
    red = UdpReducer(JobParams(1, 0, 1, 4, "127.0.0.1", sw.addr[1], name="gone", lanes=sw.layout.lanes,
                               subblock=sw.layout.subblock), bind=("127.0.0.1", 0), retry=retry)
    t0 = time.monotonic()
    with pytest.raises(AggregationError, match=r"job gone \(id 1\) rank 0: slot \d .*switch is gone"):
        red.sum_int32(np.ones(100, np.int32))
    assert time.monotonic() - t0 < 2.5
    red.close()


def test_mismatched_tensor_sizes_fail_instead_of_hanging():
    retry = RetryPolicy(timeout=0.02, max_timeout=0.1, deadline=1.0)
    with FakeSwitch() as sw:
        _out, errs, _ = _run(sw, 2, 4, lambda red: red.sum_int32(np.ones(32 * (3 + 10 * red.rank), np.int32)),
                            retry=retry)
    assert errs and all(isinstance(e, AggregationError) for e in errs.values())


def test_packets_follow_the_wire_format():
    """What a worker sends decodes with protocol.wire and matches section 7 of the protocol."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.settimeout(2)
    job = JobParams(9, 1, 2, 4, "127.0.0.1", sink.getsockname()[1], sparse=True, name="fmt", lanes=C.LANES,
                    subblock=C.SUBBLOCK)
    red = UdpReducer(job, bind=("127.0.0.1", 0), retry=RetryPolicy(timeout=0.3, deadline=0.2))
    L = C.LANES
    x = np.zeros(L * 10, np.int32)
    x[L * 6 + C.SUBBLOCK + 1] = -5                       # block 6 (stream 2), sub-block 1
    def expect_failure():
        with pytest.raises(AggregationError):
            red.sum_int32(x)
    t = threading.Thread(target=expect_failure)
    t.start()
    got, raw = {}, {}
    for _ in range(4):
        data = sink.recv(2048)
        h, lanes = wire.decode(data)
        got[h.slot] = (h, lanes)
        raw[h.slot] = data
    t.join()
    red.close()
    sink.close()
    for s in range(4):
        h, lanes = got[s]
        assert (h.msg_type, h.job_id, h.rank, h.ver, h.offset) == (C.MsgType.CONTRIB, 9, 1, 0, L * s)
    assert got[2][0].next_offset == L * 6 and got[2][0].bitmap == 0
    # the scapy layer (debugging, pcaps) dissects the same bytes
    from p4reduce.protocol.scapy_layer import P4Reduce
    pkt = P4Reduce(raw[2])
    assert (pkt.slot, pkt.next_offset, pkt.bitmap, pkt.job_id) == (2, L * 6, 0, 9)
    assert got[0][0].next_offset == C.NEXT_NONE and got[0][0].flags & C.Flags.EOT


def test_next_nonzero_per_stream():
    nz = np.array([0, 1, 0, 0, 1, 1, 0, 1], bool)  # 3 streams: 0->{0,3,6} 1->{1,4,7} 2->{2,5}
    first, after = next_nonzero(nz, 3)
    assert list(first) == [-1, 1, 5]
    assert list(after) == [-1, 4, 5, -1, 7, -1, -1, -1]


SLOW = 0.001  # seconds the slow fake switch spends on every packet


@pytest.mark.parametrize("adaptive", [True, False], ids=["adaptive", "fixed-control"])
def test_slow_switch_with_64_slots_needs_few_retransmissions(adaptive):
    """64 slots x 2 workers = 128 packets a window at 1 ms each: the switch needs ~130 ms to turn a
    window around, more than 6x the initial timeout. The adaptive timeout learns that during the
    first call and keeps it: the second call resends few packets. The control run with the old
    fixed timeout shows the scenario is hard: it resends more packets than it has blocks."""
    n, slots, rounds = 2, 64, 3
    blocks = slots * rounds
    retry = RetryPolicy(timeout=0.02, max_timeout=1.0, deadline=5.0, adaptive=adaptive)
    rng = np.random.default_rng(11)
    xs = [rng.integers(-2**30, 2**30, blocks * C.LANES, dtype=np.int32) for _ in range(n)]

    def two_calls(red):
        first = red.sum_int32(xs[red.rank])
        after_first = red.stats.retransmissions
        return first, red.sum_int32(xs[red.rank]), red.stats.retransmissions - after_first
    with FakeSwitch(service_time=SLOW) as sw:
        out, errs, reds = _run(sw, n, slots, two_calls, retry=retry)
    assert not errs
    want = (xs[0].astype(np.int64) + xs[1]).astype(np.int32)  # wraps like the switch's 32-bit adders
    for r in range(n):
        assert np.array_equal(out[r][0], want) and np.array_equal(out[r][1], want)
    second = [out[r][2] for r in range(n)]
    if adaptive:
        assert max(second) <= blocks // 2, second
        est = reds[0].rto_estimator
        assert est.srtt > 0.01 and est.rto >= est.srtt    # learned that the switch is slow
        assert reds[0].stats.rtt_samples > blocks // 2
        # and the window backed off from the 64 slots: fewer rounds queue at the slow switch
        assert all(red.window.decreases >= 1 and red.window.limit(slots) < slots for red in reds), \
            [(red.stats, red.window.describe()) for red in reds]
    else:
        assert min(second) > blocks, second


def test_the_window_grows_to_every_slot_on_a_fast_path():
    """A fast switch answers every round: the window leaves its initial size and opens all the
    job's slots (slow start, then capped by the slots), without a single retransmission."""
    n, slots = 2, 64
    rng = np.random.default_rng(13)
    xs = [rng.integers(-2**20, 2**20, slots * 6 * C.LANES, dtype=np.int32) for _ in range(n)]
    retry = RetryPolicy(timeout=0.5, min_timeout=0.2, max_timeout=1.0, deadline=5.0)
    with FakeSwitch() as sw:
        out, errs, reds = _run(sw, n, slots, lambda red: red.sum_int32(xs[red.rank]), retry=retry)
    assert not errs and all(np.array_equal(out[r], xs[0] + xs[1]) for r in range(n))
    for red in reds:
        assert red.window.cwnd == slots and red.window.decreases == 0
        # nothing is resent but, at most, a tail loss probe after a pause of the other thread
        assert red.stats.retransmissions == red.stats.tail_probes <= 4, red.stats


def _exact_sum_under_loss(n: int, slots: int, rounds: int, seed: int, impair: Impairments,
                          retry: RetryPolicy):
    """n workers sum random int32 tensors of `rounds` blocks per slot through a lossy fake switch;
    asserts every worker got the exact sum and returns the reducers."""
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-2**20, 2**20, slots * rounds * C.LANES, dtype=np.int32) for _ in range(n)]
    with FakeSwitch(impair=impair) as sw:
        out, errs, reds = _run(sw, n, slots, lambda red: red.sum_int32(xs[red.rank]), retry=retry)
    assert not errs
    want = np.sum([x.astype(np.int64) for x in xs], axis=0).astype(np.int32)
    assert all(np.array_equal(out[r], want) for r in range(n))
    return reds


def test_isolated_losses_do_not_shrink_the_window():
    """Loss on a fast path: a round overtaken by a later one is resent at once, and a timeout that
    finds a later round already answered is a loss too, not congestion, so the window stays open
    (a loss near the tail of the tensor, with no later round, may still count as congestion
    once), and the sum is exact."""
    slots = 32
    reds = _exact_sum_under_loss(2, slots, 8, 14, Impairments(0.02, 0.02, seed=9),
                                 RetryPolicy(timeout=0.05, min_timeout=0.03, max_timeout=0.5, deadline=5.0))
    for red in reds:
        recovered = red.stats.fast_retransmissions + red.window.losses
        assert recovered > 2 * red.window.decreases, (red.stats, red.window.describe())
        assert red.window.limit(slots) >= slots // 2


def test_slow_and_lossy_switch_is_still_exact():
    n, slots, rounds = 2, 64, 2
    rng = np.random.default_rng(12)
    xs = [rng.integers(-2**20, 2**20, slots * rounds * C.LANES, dtype=np.int32) for _ in range(n)]
    with FakeSwitch(service_time=SLOW / 2, impair=Impairments(0.03, 0.03, seed=4)) as sw:
        out, errs, reds = _run(sw, n, slots, lambda red: red.sum_int32(xs[red.rank]),
                               retry=RetryPolicy(timeout=0.02, max_timeout=1.0, deadline=5.0))
    assert not errs
    assert all(np.array_equal(out[r], xs[0] + xs[1]) for r in range(n))
    assert sum(red.stats.retransmissions for red in reds) > 0


def test_karn_no_rtt_samples_from_retransmitted_rounds():
    """A switch that ignores every first copy answers only retransmissions, within about a
    millisecond of the resend: sampling those would shrink the timeout below the real round trip.
    Karn's rule takes no sample and the timeout stays backed off."""
    retry = RetryPolicy(timeout=0.03, min_timeout=0.01, max_timeout=0.2, deadline=5.0)
    x = np.arange(8 * C.LANES, dtype=np.int32)
    with FakeSwitch() as sw:
        receive = sw.model.receive

        def only_retransmissions(ip, port, data, *a, **k):
            if not data[1] & C.Flags.RETX:
                return types.SimpleNamespace(deliveries=[])
            return receive(ip, port, data, *a, **k)
        sw.model.receive = only_retransmissions
        out, errs, reds = _run(sw, 1, 4, lambda red: red.sum_int32(x), retry=retry)
    assert not errs and np.array_equal(out[0], x)
    red = reds[0]
    assert red.stats.retransmissions >= 8 and red.stats.rtt_samples == 0
    assert red.rto_estimator.srtt is None and red.rto_estimator.rto >= 0.06



def _exact_sum_losing_first_copies(slots: int, per_slot: int, seed: int, offsets: set[int]):
    """Two workers sum `slots * per_slot` blocks through a fake switch that drops the first copy
    of rank 0's contribution at each of `offsets`, under timers of seconds (so a timeout would
    show); asserts every drop happened and both got the exact sum; returns the reducers."""
    n = 2
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-2**20, 2**20, slots * per_slot * C.LANES, dtype=np.int32) for _ in range(n)]
    retry = RetryPolicy(timeout=3.0, min_timeout=3.0, max_timeout=6.0, deadline=20.0)
    dropped: set[int] = set()
    with FakeSwitch() as sw:
        receive = sw.model.receive

        def lose_first_copies(ip, port, data, *a, **k):
            hdr = wire.unpack_header(data)
            if hdr[3] == 0 and hdr[7] in offsets and hdr[7] not in dropped:
                dropped.add(hdr[7])
                return types.SimpleNamespace(deliveries=[])
            return receive(ip, port, data, *a, **k)
        sw.model.receive = lose_first_copies
        out, errs, reds = _run(sw, n, slots, lambda red: red.sum_int32(xs[red.rank]), retry=retry)
    assert not errs and dropped == offsets
    assert all(np.array_equal(out[r], xs[0] + xs[1]) for r in range(n))
    return reds


def test_an_overtaken_round_is_resent_before_its_timer():
    """The switch drops the first copy of one contribution of rank 0. With timers of seconds,
    only fast retransmission can recover it early: rank 0 (whose packet was lost) sees later
    rounds answered and resends at once (rank 1, waiting for it, does too unless rank 0's copy
    completed the round before rank 1 read the overtaking results); no timer expires."""
    slots = 16
    reds = _exact_sum_losing_first_copies(slots, 8, 21, {5 * C.LANES})
    assert reds[0].stats.fast_retransmissions >= 1, reds[0].stats
    for red in reds:
        st, w = red.stats, red.window
        assert st.retransmissions == st.fast_retransmissions + st.tail_probes, st   # none by a timer
        assert (w.losses, w.stalls, w.decreases) == (0, 0, 0) and w.limit(slots) == slots, w.describe()


def test_random_loss_on_four_workers_keeps_windows_open():
    """5% loss each way on four workers: most losses are recovered by fast retransmission, no
    window collapses to its floor (the windows of workers that wait on each other would drift
    apart and the job would crawl), and the sums are exact."""
    slots = 32
    reds = _exact_sum_under_loss(4, slots, 48, 22, Impairments(0.05, 0.05, seed=23),
                                 RetryPolicy(timeout=0.05, min_timeout=0.02, max_timeout=0.5, deadline=10.0))
    fast = sum(red.stats.fast_retransmissions for red in reds)
    timed = sum(red.stats.retransmissions for red in reds) - fast
    assert fast > timed, [red.stats for red in reds]
    # a timeout at the tail may still halve a window once; it grows back and never collapses
    for red in reds:
        assert red.stats.fast_retransmissions > 10 * red.window.decreases, (red.stats, red.window.describe())
        assert red.window.limit(slots) >= slots // 2, red.window.describe()


def test_a_round_counts_as_overtaken_after_three_later_rounds():
    """RoundTimers.overtaken: rounds answered out of order by one or two later rounds are not
    resent (peers may open rounds in another order); the third later answer marks the round,
    once per copy, and a resent copy needs three rounds sent after it again."""
    from p4reduce.worker.streaming import OVERTAKE_COUNT, RoundTimers
    assert OVERTAKE_COUNT == 3
    timers = RoundTimers(8, RetryPolicy(), RetryPolicy().estimator())
    for s in range(6):
        timers.opened(s, now=float(s))
    open_slots = set(range(6))
    for s, expect in ((1, []), (2, []), (3, [0])):
        open_slots.discard(s)
        assert timers.overtaken(open_slots, [s]) == expect
    assert timers.overtaken(open_slots, []) == []          # slot 0 marked once
    timers.retransmitted(0, now=7.0, alive=True, fast=True)
    for s in (4, 5):                                        # sent before slot 0's new copy
        open_slots.discard(s)
        assert timers.overtaken(open_slots, [s]) == []
    for s in (6, 7, 1):
        timers.opened(s, now=8.0)
        open_slots.add(s)
    for s, expect in ((6, []), (7, []), (1, [0])):
        open_slots.discard(s)
        assert timers.overtaken(open_slots, [s]) == expect


def test_a_worker_that_starts_first_probes_with_one_round():
    """Rank 1 starts its call 0.3 s after rank 0. Until anything comes back, rank 0 resends one
    probe round per backoff level instead of its whole window (the others' timers back off
    without sending), and the sums are exact."""
    n, slots = 2, 16
    rng = np.random.default_rng(24)
    xs = [rng.integers(-2**20, 2**20, slots * 4 * C.LANES, dtype=np.int32) for _ in range(n)]

    def late_start(red):
        if red.rank == 1:
            time.sleep(0.3)
        return red.sum_int32(xs[red.rank])
    with FakeSwitch() as sw:
        out, errs, reds = _run(sw, n, slots, late_start, retry=FAST)
    assert not errs and all(np.array_equal(out[r], xs[0] + xs[1]) for r in range(n))
    early = reds[0].stats
    assert early.deferred >= slots, early          # every other slot timed out at least once
    assert 1 <= early.retransmissions <= 6, early   # one probe per backoff level (20 ms .. 200 ms)


@pytest.mark.parametrize("lost", [1, 4], ids=["last-round", "last-four-rounds"])
def test_losses_at_the_end_of_a_call_are_recovered_by_a_tail_probe(lost):
    """The switch drops the first copy of rank 0's last `lost` contributions: no later round can
    overtake them. With timers of seconds, only the tail loss probe recovers them early: after a
    short silence the newest open round is resent, its answer marks the rounds before it, and no
    retransmission timer ever runs out (the window counts no timeout of any kind)."""
    slots, per_slot = 8, 6
    blocks = slots * per_slot
    reds = _exact_sum_losing_first_copies(slots, per_slot, 31, {(blocks - 1 - k) * C.LANES for k in range(lost)})
    assert reds[0].stats.tail_probes >= 1, reds[0].stats
    for red in reds:
        w = red.window
        assert (w.losses, w.stalls, w.decreases) == (0, 0, 0), (red.stats, w.describe())


def test_tail_probe_timing_and_early_overtaking():
    """RoundTimers: no probe before the call's first result; then PROBE_SRTTS smoothed round trips
    (at least PROBE_MIN) after the last send or result, doubled per probe, at most PROBES per
    silence, rearmed by a result. A probe resends the newest open round, and its answer (or, with
    `early`, any later round's) overtakes the rounds sent before it at once."""
    from p4reduce.worker.streaming import PROBE_MIN, PROBE_SRTTS, PROBES, RoundTimers
    retry = RetryPolicy()
    est = retry.estimator()
    timers = RoundTimers(8, retry, est)
    for s in range(5):
        timers.opened(s, now=1.0 + s / 1000)
    open_slots = set(range(5))
    assert timers.probe_due() == float("inf")                 # nothing answered yet
    est.sample(0.010)
    timers.answered(4, now=1.02)
    open_slots.discard(4)
    assert timers.probe_due() == pytest.approx(1.02 + max(PROBE_SRTTS * est.srtt, PROBE_MIN))
    assert timers.overtaken(open_slots, [4]) == []            # one later answer is not enough ...
    assert timers.probe(open_slots, now=1.05) == 3            # the newest open round is the probe
    assert timers.probe_due() == pytest.approx(1.05 + 2 * max(PROBE_SRTTS * est.srtt, PROBE_MIN))
    for k in range(1, PROBES):
        timers.probe(open_slots, now=1.1 + k)
    assert timers.probe_due() == float("inf")                 # PROBES per silence
    open_slots.discard(3)
    assert sorted(timers.overtaken(open_slots, [3], early=True)) == [0, 1, 2]   # ... a probe's is
    timers.answered(3, now=1.3)
    assert timers.probe_due() < float("inf")                  # a result rearms the probe


def test_a_silent_switch_fails_the_call_at_the_deadline_not_at_the_next_backed_off_timer():
    """With timers backing off to 1 s, a switch gone silent fails the call `deadline` after the
    last progress (the host fallback's detection time), on both loops alike: the loop wakes for the
    deadline itself, not only for the next retransmission."""
    retry = RetryPolicy(timeout=0.05, backoff=2.0, max_timeout=1.0, deadline=1.0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))               # a switch that reads nothing and answers nothing
    red = UdpReducer(JobParams(1, 0, 1, 4, "127.0.0.1", sock.getsockname()[1], name="silent", lanes=C.LANES,
                               subblock=C.SUBBLOCK), bind=("127.0.0.1", 0), retry=retry)
    assert red.loop == os.environ["P4REDUCE_WORKER_LOOP"]
    t0 = time.monotonic()
    with pytest.raises(AggregationError, match="got no result"):
        red.sum_int32(np.ones(100, np.int32))
    took = time.monotonic() - t0
    red.close()
    sock.close()
    # timers 0.05, 0.1, 0.2, 0.4, 0.8 s: the next retransmission after 1.0 s would be at 1.55 s
    assert 1.0 <= took < 1.3, took
