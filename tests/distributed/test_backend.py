"""The torch.distributed backend "p4reduce": processes that call only torch.distributed (plus
`import p4reduce.distributed`) against the real job API and a switch stand-in over UDP.

Checked: allreduce SUM/AVG of float32, float16, bfloat16 and int32, any shape, several tensors,
crosses the switch (the stand-in counts the packets; the group counts calls by path) and is exact
for int32 and within fixed point's bound for floats; every other collective, op and dtype gives
gloo's answer; Works wait and give futures; DDP trains to the same parameters as on gloo; the
job is created by rank 0 when absent; bad options and a missing controller are clear errors.
"""
import json
import os
import subprocess
import sys

import needs
import numpy as np
import pytest

torch = needs.module("torch")

from p4reduce.mininet_topos.ports import free_port  # noqa: E402 - after the importorskip

COLLECTIVES = r"""
import json, sys, torch, torch.distributed as dist
import p4reduce.distributed
rank, world, port, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dist.init_process_group("p4reduce", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
pg = dist.group.WORLD
res = {"backend": dist.get_backend()}
g = torch.Generator().manual_seed(100 + rank)
f32 = torch.randn(3, 1000, generator=g)
res["f32_in"] = f32.tolist(); t = f32.clone(); w = dist.all_reduce(t, async_op=True)
fut = w.get_future(); w.wait(); res["f32"] = t.tolist(); res["fut_is_tensor"] = fut.value()[0] is t
i32 = torch.randint(-2**20, 2**20, (5, 7), generator=g, dtype=torch.int32)
res["i32_in"] = i32.tolist(); t = i32.clone(); dist.all_reduce(t); res["i32"] = t.tolist()
t = i32.clone(); dist.all_reduce(t, op=dist.ReduceOp.AVG); res["i32_avg"] = t.tolist()
h = (torch.randn(300, generator=g) * 4).half(); res["f16_in"] = h.float().tolist()
t = h.clone(); dist.all_reduce(t); res["f16"] = t.float().tolist(); res["f16_dtype"] = str(t.dtype)
b = torch.randn(200, generator=g).bfloat16(); res["bf16_in"] = b.float().tolist()
t = b.clone(); dist.all_reduce(t, op=dist.ReduceOp.AVG); res["bf16_avg"] = t.float().tolist()
nc = torch.randn(20, 10, generator=g).t(); res["nc_in"] = nc.tolist()   # not contiguous
t = nc.clone().t().contiguous().t(); dist.all_reduce(t); res["nc"] = t.tolist()
switch_calls = pg.calls["switch"]
x = torch.tensor([float(rank + 1)]); dist.all_reduce(x, op=dist.ReduceOp.MAX); res["max"] = x.item()
x = torch.tensor([rank + 1.0], dtype=torch.float64); dist.all_reduce(x); res["f64"] = x.item()
x = torch.tensor([rank + 1.0], dtype=torch.float64); dist.all_reduce(x, op=dist.ReduceOp.AVG); res["f64_avg"] = x.item()
gathered = [torch.zeros(2) for _ in range(world)]; dist.all_gather(gathered, torch.full((2,), float(rank)))
res["all_gather"] = [v.tolist() for v in gathered]
o = torch.zeros(2 * world); dist.all_gather_into_tensor(o, torch.full((2,), float(rank))); res["agit"] = o.tolist()
bc = torch.tensor([rank * 10]); dist.broadcast(bc, 1); res["broadcast"] = bc.item()
rs = torch.zeros(1); dist.reduce_scatter_tensor(rs, torch.arange(world, dtype=torch.float32)); res["rs"] = rs.item()
a2a = torch.zeros(world); dist.all_to_all_single(a2a, torch.full((world,), float(rank))); res["a2a"] = a2a.tolist()
if rank == 0:
    dist.send(torch.tensor([42.0]), 1)
elif rank == 1:
    r = torch.zeros(1); dist.recv(r, 0); res["recv"] = r.item()
sub = dist.new_group([0, 1])          # a subgroup: gloo, the switch job is the world's
if rank in (0, 1):
    x = torch.tensor([float(rank + 1)]); dist.all_reduce(x, group=sub); res["sub"] = x.item()
dist.barrier()
res["switch_calls"] = switch_calls; res["gloo_calls"] = pg.calls["gloo"]; res["paths"] = dict(pg.agent.calls_by_path)
dist.destroy_process_group()
json.dump(res, open(out, "w"))
"""


def _run(script, world, env, tmp_path, extra_args=(), timeout=180):
    """The ranks' (exit code, stdout, stderr), each rank a process running `script`. A rank still
    running at timeout - 20 s prints every thread's stack and exits (faulthandler); SIGUSR1 prints
    them at any time (`kill -USR1 PID` on a rank that seems stuck)."""
    port = free_port()
    script = (f"import faulthandler, signal; faulthandler.dump_traceback_later({timeout - 20}, exit=True); "
              "faulthandler.register(signal.SIGUSR1, all_threads=True)\n" + script)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(r), str(world), str(port),
                               str(tmp_path / f"r{r}.json"), *extra_args],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            outs += [(q.returncode, *q.communicate()) for q in procs[len(outs):]]   # the rest, killed
            _fail_with_every_rank(outs, f"the ranks did not finish in {timeout} s")
        outs.append((p.returncode, out, err))
    return outs


def _fail_with_every_rank(outs, why, tail=4000):
    """Fail naming every rank's exit code and the tail of its stderr (one rank stuck in a
    collective is explained by where the others are)."""
    pytest.fail(f"{why}; every rank's exit code and stderr:\n" + "\n".join(
        f"--- rank {r} (exit {code}):\n{err[-tail:]}" for r, (code, _out, err) in enumerate(outs)))


def _all_ranks_succeeded(outs):
    if any(code != 0 for code, _out, _err in outs):
        _fail_with_every_rank(outs, "rank(s) " + ", ".join(str(r) for r, (code, _o, _e) in enumerate(outs)
                                                            if code != 0) + " failed")


@pytest.mark.slow
def test_allreduce_crosses_the_switch_and_every_other_collective_works(network, tmp_path):
    world = 3
    outs = _run(COLLECTIVES, world, network.env(P4REDUCE_JOB="coll"), tmp_path, timeout=120)
    _all_ranks_succeeded(outs)
    res = [json.load(open(tmp_path / f"r{r}.json")) for r in range(world)]
    assert network.switch.received > 0                  # packets really went to the switch
    assert network.seen["coll"] == world                 # created by rank 0 for the group's size

    def inputs(key, dtype=np.float64):
        return np.array([r[key] for r in res], dtype=dtype)

    f32 = inputs("f32_in").sum(0)
    i32 = inputs("i32_in", np.int64).sum(0)
    for r in res:
        assert r["backend"] == "p4reduce"
        assert r["switch_calls"] == 6 and r["fut_is_tensor"]
        assert r["paths"] == {"switch": 6, "fallback": 0}
        assert np.abs(np.array(r["f32"]) - f32).max() < 1e-4
        assert np.array_equal(np.array(r["i32"]), i32)                         # exact
        assert np.array_equal(np.array(r["i32_avg"]), i32 // world)            # floor, as the agent's
        assert r["f16_dtype"] == "torch.float16"
        assert np.abs(np.array(r["f16"]) - inputs("f16_in").sum(0)).max() < 0.02   # half's own rounding
        assert np.abs(np.array(r["bf16_avg"]) - inputs("bf16_in").mean(0)).max() < 0.02
        assert np.abs(np.array(r["nc"]) - inputs("nc_in").sum(0)).max() < 1e-4
        # everything else: gloo's answers
        assert r["max"] == world and r["f64"] == sum(range(1, world + 1))
        assert r["f64_avg"] == pytest.approx(sum(range(1, world + 1)) / world)
        assert r["gloo_calls"] == 3
        assert r["all_gather"] == [[float(k)] * 2 for k in range(world)]
        assert r["agit"] == [float(k) for k in range(world) for _ in range(2)]
        assert r["broadcast"] == 10
        assert r["a2a"] == [float(k) for k in range(world)]
    assert [r["rs"] for r in res] == [float(world * k) for k in range(world)]
    assert res[1]["recv"] == 42.0
    assert res[0]["sub"] == res[1]["sub"] == 3.0 and "sub" not in res[2]
    assert res[0]["f32"] == res[1]["f32"] == res[2]["f32"]     # every rank the same result


BACK_TO_BACK = r"""
import os, sys, torch, torch.distributed as dist
import p4reduce.distributed
rank, world, port, out, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})   # every rank on one CPU: gloo's threads get preempted
dist.init_process_group("p4reduce", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
for i in range(n):
    x = torch.tensor([float(rank + i)]); dist.all_reduce(x, op=dist.ReduceOp.MAX)     # the group's own allreduce
    g = [torch.zeros(2) for _ in range(world)]; dist.all_gather(g, torch.full((2,), float(rank)))
    b = torch.tensor([rank]); dist.broadcast(b, 1)
    if i % 50 == 0:
        dist.barrier()
    assert x.item() == world - 1 + i and b.item() == 1 and g[world - 1][0].item() == world - 1
dist.destroy_process_group()
open(out, "w").write("ok")
"""


@pytest.mark.slow
def test_collectives_back_to_back_on_one_cpu_never_deadlock_with_gloos_worker_threads(network, tmp_path):
    """gloo's worker thread drops a finished collective's tensors under its queue's lock, and
    dropping a tensor that has a Python object takes the GIL. The collectives the group leaves to
    gloo must reach gloo's queue without holding the GIL: torch's binding for a Python
    ProcessGroup subclass calls the base method with the GIL held (a deadlock within a few hundred
    collectives with every rank on one CPU; CI's all_gather and broadcast hangs)."""
    world = 3
    outs = _run(BACK_TO_BACK, world, network.env(P4REDUCE_JOB="b2b"), tmp_path, extra_args=("1500",), timeout=120)
    _all_ranks_succeeded(outs)
    assert all((tmp_path / f"r{r}.json").read_text() == "ok" for r in range(world))


DDP = r"""
import json, sys, torch, torch.distributed as dist
backend = sys.argv[5]
if backend == "p4reduce":
    import p4reduce.distributed
rank, world, port, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(1)
dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(20, 256), torch.nn.ReLU(), torch.nn.Linear(256, 3))
ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.01)   # several buckets after step 1
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for step in range(8):
    x = torch.randn(16, 20, generator=g); y = torch.randint(0, 3, (16,), generator=g)
    opt.zero_grad(); torch.nn.functional.cross_entropy(ddp(x), y).backward(); opt.step()
params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
calls = dict(dist.group.WORLD.calls) if backend == "p4reduce" else {}
dist.destroy_process_group()
json.dump({"params": params.tolist(), "calls": calls}, open(out, "w"))
"""


@pytest.mark.slow
def test_ddp_trains_to_gloos_parameters_with_its_buckets_through_the_switch(network, tmp_path):
    world = 2
    got = {}
    for backend in ("gloo", "p4reduce"):
        (tmp_path / backend).mkdir()
        outs = _run(DDP, world, network.env(P4REDUCE_JOB="ddp"), tmp_path / backend, extra_args=(backend,))
        _all_ranks_succeeded(outs)
        got[backend] = [json.load(open(tmp_path / backend / f"r{r}.json")) for r in range(world)]
    p4, gl = (np.array([r["params"] for r in got[b]]) for b in ("p4reduce", "gloo"))
    assert np.array_equal(p4[0], p4[1])                 # replicas identical
    rel = np.abs(p4[0] - gl[0]).max() / np.abs(gl[0]).max()
    assert rel < 1e-3 and rel > 0                        # gloo's parameters, through another path
    calls = got["p4reduce"][0]["calls"]
    assert calls["switch"] >= 8                          # every step's gradient buckets crossed the switch


def test_options_and_setup_errors_are_clear(network, tmp_path):
    from p4reduce.distributed import Options
    with pytest.raises(ValueError, match="P4REDUCE_SLOTS='many'"):
        Options().resolved({"P4REDUCE_SLOTS": "many"})
    with pytest.raises(ValueError, match="mode='ring'"):
        Options(mode="ring").resolved({})
    with pytest.raises(ValueError, match="switch='nohost'"):
        Options(switch="nohost").resolved({})
    with pytest.raises(ValueError, match="P4REDUCE_SWITCH_TIMEOUT='soon'"):
        Options().resolved({"P4REDUCE_SWITCH_TIMEOUT": "soon"})
    with pytest.raises(ValueError, match="switch_timeout_s=0.1"):
        Options(switch_timeout_s=0.1).resolved({})
    assert Options().resolved({"P4REDUCE_SWITCH_TIMEOUT": "4"}).switch_timeout_s == 4.0
    o = Options().resolved({"P4REDUCE_JOB": "j9", "P4REDUCE_SLOTS": "8"})
    assert (o.controller, o.job, o.slots, o.compressor) == ("127.0.0.1:8090", "j9", 8, "fixedpoint")
    script = ("import sys, torch.distributed as dist, p4reduce.distributed\n"
              "dist.init_process_group('p4reduce', init_method='tcp://127.0.0.1:%d', rank=0, world_size=1)\n")
    port = free_port()
    res = subprocess.run([sys.executable, "-c", script % port], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "P4REDUCE_CONTROLLER": "127.0.0.1:1"})
    assert res.returncode != 0
    assert "p4reduce: rank 0:" in res.stderr and "127.0.0.1:1" in res.stderr
    # a job of another size: named, with what to do
    from p4reduce.protocol.job_api import JobApiClient
    JobApiClient(network.addr).create("four", 4, "dense")
    res = subprocess.run([sys.executable, "-c", script % free_port()], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **network.env(P4REDUCE_JOB="four")})
    assert res.returncode != 0 and "job 'four' has 4 workers, the group has 1" in res.stderr


@pytest.mark.slow
def test_a_switch_frozen_mid_job_moves_the_group_to_the_fallback_with_the_same_answers(network, tmp_path):
    """The switch answers nothing for 4 s after its 20th packet (mid-job: a whole run sends about
    40) and loses what queued meanwhile: every rank moves to the host fallback within the job's
    switch calls, and ends with every answer right (gloo's collectives interleaved), none hangs."""
    network.switch.stall = (20, 4.0)
    world = 3
    outs = _run(COLLECTIVES, world, network.env(P4REDUCE_JOB="frozen", P4REDUCE_SWITCH_TIMEOUT="1.5"), tmp_path,
                timeout=150)
    _all_ranks_succeeded(outs)
    res = [json.load(open(tmp_path / f"r{r}.json")) for r in range(world)]
    assert network.switch.received == 20             # nothing reached the switch after it froze
    f32 = np.array([r["f32_in"] for r in res]).sum(0)
    for r in res:
        assert np.abs(np.array(r["f32"]) - f32).max() < 1e-4
        assert np.array_equal(np.array(r["i32"]), np.array([q["i32_in"] for q in res], dtype=np.int64).sum(0))
        assert np.abs(np.array(r["nc"]) - np.array([q["nc_in"] for q in res]).sum(0)).max() < 1e-4
        assert r["max"] == world and r["a2a"] == [float(k) for k in range(world)]
        assert r["paths"]["fallback"] >= 1 and sum(r["paths"].values()) == 6, r["paths"]

