"""Workers through the real P4 program (p4src/p4reduce.p4 on p4sim's engine) over UDP: integer
sums bit-exact, float within the bound, sparse skipping, loss recovery, the switch's counters."""
import threading

import numpy as np
import pytest
from testbed.loopback import loopback_reducers
from testbed.p4sim_udp import P4SimUdpSwitch

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.worker import quantize as qz
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.streaming import RetryPolicy

# Both signs: BMv2 reads an int<32> register cell as its unsigned pattern (see
# ../shared/p4-reference agg_mini), so the program must convert stored partial sums explicitly;
# negative data is what catches it.
SIGNS = [pytest.param(True, id="signed"), pytest.param(False, id="nonnegative")]


def _through_p4sim(bmv2, n, slots, fn, sparse=False, drop_every=0):
    sw = P4SimUdpSwitch(bmv2, drop_every=drop_every)
    reds = loopback_reducers(sw, 3, n, slots, sparse=sparse, name="p4", retry=RetryPolicy(timeout=0.1, deadline=10))
    sw.start()
    out, errs = {}, {}

    def body(r):
        try:
            out[r] = fn(reds[r])
        except Exception as e:
            errs[r] = e
    ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    sw.stop()
    for red in reds:
        red.close()
    assert not errs, errs
    assert sw.wrong_port == 0
    return out, sw, reds


@pytest.mark.parametrize("signed", SIGNS)
@pytest.mark.parametrize("sparse", [False, True])
def test_int32_bit_exact_through_the_p4_program(p4reduce_json, sparse, signed):
    n = 4
    rng = np.random.default_rng(0)
    xs = [rng.integers(-2**24 if signed else 0, 2**24, 32 * 40 + 5, dtype=np.int32) for _ in range(n)]
    if sparse:
        for x in xs:
            x[32 * 3:32 * 35] = 0
    out, _sw, reds = _through_p4sim(p4reduce_json, n, 8, lambda red: red.sum_int32(xs[red.rank]), sparse)
    want = np.sum([x.astype(np.int64) for x in xs], axis=0)
    for r in range(n):
        assert np.array_equal(out[r], want)
    if sparse:  # blocks 3..34 are zero everywhere: never sent
        assert reds[0].stats.packets_sent < 41 - 20


@pytest.mark.parametrize("signed", SIGNS)
def test_float32_and_loss_through_the_p4_program(p4reduce_json, signed):
    n = 3
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(32 * 30).astype(np.float32) for _ in range(n)]
    if not signed:
        xs = [np.abs(x) for x in xs]
    out, sw, reds = _through_p4sim(p4reduce_json, n, 4, lambda red: Communicator(red).allreduce(xs[red.rank]),
                                   drop_every=7)
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    exps = np.max([qz.propose_exponents(x, C.LANES) for x in xs], axis=0)
    bound = qz.error_bound(exps, n, C.LANES, exact.size) + np.abs(exact) * 2.0**-23
    for r in range(n):
        assert np.array_equal(out[r], out[0]) and np.all(np.abs(out[r] - exact) <= bound)
    assert sum(red.stats.retransmissions for red in reds) > 0
    # the switch saw the retransmissions: duplicates of counted packets or unicast result resends
    assert sw.counter(N.AGG_EVENTS, C.AggEvent.RESULT_UNICAST) + \
        sw.counter(N.DROP_REASONS, C.DropReason.DUPLICATE_PENDING) > 0


def test_training_through_the_p4_program_matches_the_simulation(p4reduce_json):
    """Digits logreg, 2 workers, 1 epoch through the P4 program: bit-identical to the simulated switch."""
    from testbed.training.simulate import run_simulated

    from lab.training.data import load_digits_split
    from lab.training.loop import TrainConfig, train_worker
    split = load_digits_split(limit=600)
    cfg = TrainConfig(model="logreg", epochs=1)
    sim = run_simulated("fixedpoint", cfg, 2, split, sparse=False)["history"].params
    out, _, _ = _through_p4sim(
        p4reduce_json, 2, 16,
        lambda red: train_worker(red.rank, 2, split, cfg,
                                 lambda g, key: Communicator(red).allreduce(g, average=True, key=key)).params)
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], sim)
