"""issue 27's end point, in Mininet: a plain DDP script whose only p4reduce lines are
`import p4reduce.distributed` and the backend's name trains on the four hosts with replicas
identical and parameters matching the same script on gloo within 1e-3 relative, its allreduces
absorbed by the P4 switch (its agg_events counter)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from p4reduce.mininet_topos.runcli import torchrun_env

from .conftest import REPO

pytestmark = pytest.mark.root


def _absorbed(session) -> int:
    out = subprocess.run([sys.executable, "-m", "p4reduce.controller", "counters", "ReduceIngress.agg_events",
                          "--json", "--topology", str(session.description_path)],
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stderr
    cells = json.loads(out.stdout)[0]["cells"]
    return next(c["packets"] for c in cells if c["label"] == "ABSORBED" or c["index"] == 0)


def _train(session, backend, out_dir):
    hosts = session.network.hosts
    env = torchrun_env(hosts, port=29511, gloo_interface=backend == "gloo")   # p4reduce finds its own
    procs = [h.popen([sys.executable, str(REPO / "tests" / "e2e" / "plain_ddp.py"), backend,
                      str(out_dir / f"{h.name}.npy")], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, cwd=str(REPO),
                     env={**os.environ, **env[h.name], "P4REDUCE_CONTROLLER": session.api_addr})
             for h in hosts]
    try:
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
    finally:       # a failed rank leaves its peers waiting: stop them (our own processes, by PID)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [np.load(out_dir / f"{h.name}.npy") for h in hosts]


def test_a_plain_ddp_script_trains_through_the_switch_as_on_gloo(session_factory, tmp_path):
    session = session_factory(workers=4)
    session.create_job("default", 4, "dense")
    before = _absorbed(session)
    p4 = _train(session, "p4reduce", tmp_path)
    absorbed = _absorbed(session) - before
    (tmp_path / "gloo").mkdir()
    gloo = _train(session, "gloo", tmp_path / "gloo")
    assert all(np.array_equal(p4[0], p) for p in p4[1:])            # replicas identical
    assert all(np.array_equal(gloo[0], p) for p in gloo[1:])
    rel = np.abs(p4[0] - gloo[0]).max() / np.abs(gloo[0]).max()
    assert 0 < rel < 1e-3, rel
    # 20 steps x 19,210 gradients x 4 workers in 256-lane packets, at the least
    assert absorbed >= 20 * (19210 // 256) * 4, absorbed
