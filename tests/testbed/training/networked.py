"""Run the data-parallel demo with N worker threads talking UDP to a switch on loopback: the
reference model (testbed.switch_model via testbed.fakeswitch) or the real P4 program on p4sim's engine
(testbed.p4sim_udp). Same training code and compressors as the simulation; bytes are counted from
the packets actually sent."""
from __future__ import annotations

import tempfile
import threading
import time

import numpy as np

from lab.training.data import Split, load_digits_split
from lab.training.loop import History, TrainConfig, train_worker
from p4reduce.p4src.build import compile_program
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import make_compressor
from p4reduce.worker.memory import ErrorFeedback, NoMemory
from p4reduce.worker.streaming import RetryPolicy
from testbed.fakeswitch import FakeSwitch
from testbed.loopback import loopback_reducers
from testbed.p4sim_udp import P4SimUdpSwitch
from testbed.training.simulate import DEFAULT_OPTIONS


def make_switch(kind: str) -> FakeSwitch | P4SimUdpSwitch:
    """A started loopback switch: "model" (testbed.switch_model) or "p4sim" (p4src/p4reduce.p4)."""
    if kind == "model":
        return FakeSwitch()
    if kind == "p4sim":
        with tempfile.TemporaryDirectory(prefix="p4reduce-") as out:
            return P4SimUdpSwitch(str(compile_program(out).json_path))
    raise ValueError(f"unknown switch {kind!r}: choose model or p4sim")


def run_networked(compressor: str, cfg: TrainConfig, n_workers: int = 4, split: Split | None = None,
                  switch: str = "p4sim", sparse: bool = True, slots: int = 64, **options) -> dict:
    """Like :func:`testbed.training.simulate.run_simulated`, through a switch over UDP."""
    if compressor == "float32":
        raise ValueError("float32 cannot go through a switch (that is what the compressors are for)")
    split = split or load_digits_split(seed=cfg.seed)
    opts = {**DEFAULT_OPTIONS.get(compressor, {}), **options}
    sw = make_switch(switch)
    reds = loopback_reducers(sw, 1, n_workers, slots, sparse=sparse, name="train",
                             retry=RetryPolicy(timeout=0.2, deadline=30))
    sw.start()
    hists: dict[int, History] = {}
    errors: list = []

    def body(r):
        try:
            comp, ef = make_compressor(compressor, seed=cfg.seed, rank=r, **opts)
            comm = Communicator(reds[r], comp, ErrorFeedback() if ef else NoMemory())
            hists[r] = train_worker(r, n_workers, split, cfg, lambda g, key: comm.allreduce(g, average=True, key=key))
        except Exception as e:
            errors.append(e)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=body, args=(r,)) for r in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    sw.stop()
    for red in reds:
        red.close()
    if errors:
        raise errors[0]
    first = hists[0].params
    same = first is not None and all(h.params is not None and np.array_equal(h.params, first) for h in hists.values())
    return {"compressor": compressor, "model": cfg.model, "history": hists[0],
            "bytes_per_worker": sum(red.bytes_sent for red in reds) / n_workers, "seconds": seconds,
            "replicas_identical": same, "final_acc": hists[0].final_acc,
            "retransmissions": sum(red.stats.retransmissions for red in reds)}
