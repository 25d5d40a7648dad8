"""Convergence at reduced size: digits split over 4 workers through the simulated switch, and a
short run through testbed.switch_model over UDP."""
import threading

import numpy as np
import pytest
from testbed.fakeswitch import FakeSwitch
from testbed.loopback import loopback_reducers
from testbed.training.simulate import run_simulated

from lab.training.data import load_digits_split
from lab.training.loop import TrainConfig, train_worker
from lab.training.models import MLP, LogisticRegression
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import COMPRESSORS
from p4reduce.worker.streaming import RetryPolicy


@pytest.fixture(scope="module")
def split():
    return load_digits_split()


@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_gradients_match_finite_differences(model, split):
    m = (LogisticRegression if model == "logreg" else MLP)(64, 10)
    p = m.init(1).astype(np.float64) + np.random.default_rng(0).standard_normal(m.size) * 0.05
    x, y = split.x_train[:20].astype(np.float64), split.y_train[:20]
    _, g = m.loss_and_grad(p, x, y)
    for i in np.random.default_rng(1).choice(m.size, 8, replace=False):
        d = np.zeros_like(p)
        d[i] = 1e-5
        num = (m.loss_and_grad(p + d, x, y)[0] - m.loss_and_grad(p - d, x, y)[0]) / 2e-5
        assert abs(num - g[i]) < 1e-4 + 1e-3 * abs(num)


@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_fixed_point_within_one_point_of_float32(model, split):
    cfg = TrainConfig(model=model, epochs=8)
    ref = run_simulated("float32", cfg, 4, split)
    fp = run_simulated("fixedpoint", cfg, 4, split)
    assert ref["final_acc"] > 0.9
    assert abs(fp["final_acc"] - ref["final_acc"]) <= 0.01
    assert fp["replicas_identical"]


@pytest.mark.parametrize("name", sorted(set(COMPRESSORS) - {"fixedpoint"}))
def test_every_compressor_trains_logreg(name, split):
    r = run_simulated(name, TrainConfig(model="logreg", epochs=6), 4, split)
    assert r["replicas_identical"], "workers diverged: the aggregate differed between ranks"
    assert r["final_acc"] > 0.85, r["final_acc"]
    h = r["history"]
    assert h.train_loss[-1] < 0.6 * h.train_loss[0]


def test_compressed_methods_send_fewer_bytes(split):
    cfg = TrainConfig(model="mlp", epochs=1)   # 4810 parameters: 19 packets of the default layout
    fp = run_simulated("fixedpoint", cfg, 4, split)["bytes_per_worker"]
    for name in ("terngrad", "topk", "randomk"):
        assert run_simulated(name, cfg, 4, split)["bytes_per_worker"] < 0.35 * fp


def test_training_through_udp_matches_the_simulated_switch(split):
    """The same run over UDP (testbed.switch_model as the switch) gives bit-identical parameters."""
    n, cfg = 2, TrainConfig(model="logreg", epochs=2)
    sim = run_simulated("fixedpoint", cfg, n, split, sparse=False)["history"].params
    with FakeSwitch() as sw:
        reds = loopback_reducers(sw, 3, n, 16, retry=RetryPolicy(timeout=0.05, deadline=5))
        out = {}

        def body(r):
            comm = Communicator(reds[r])
            out[r] = train_worker(r, n, split, cfg, lambda g, key: comm.allreduce(g, average=True, key=key)).params
        ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        for red in reds:
            red.close()
    assert np.array_equal(out[0], out[1])
    assert np.array_equal(out[0], sim)


def test_networked_runner_counts_real_packets_and_matches_the_simulation():
    """testbed.training.networked (used by the experiment's --through) over testbed.switch_model."""
    from testbed.training.networked import run_networked
    split = load_digits_split(limit=400)
    cfg = TrainConfig(model="logreg", epochs=1)
    net = run_networked("topk", cfg, 2, split, switch="model", slots=8)
    sim = run_simulated("topk", cfg, 2, split)
    assert net["replicas_identical"]
    assert np.array_equal(net["history"].params, sim["history"].params)
    assert net["bytes_per_worker"] > 0
    with pytest.raises(ValueError, match="float32 cannot go through a switch"):
        run_networked("float32", cfg, 2, split, switch="model")
