"""PyTorch DDP with the p4reduce comm hook: two processes (gloo for DDP's own setup), gradients
through testbed.switch_model over UDP; the result must match DDP's built-in allreduce closely."""
import socket
import sys

import needs
import numpy as np
import pytest

torch = needs.module("torch")
dist = needs.module("torch.distributed")

from testbed.fakeswitch import FakeSwitch  # noqa: E402

from p4reduce.mininet_topos.ports import free_port  # noqa: E402 - after the importorskip

CHILD = r"""
import sys, numpy as np, torch, torch.distributed as dist
rank, world, store_port, switch_port, my_port = map(int, sys.argv[1:6])
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.job import JobParams
from p4reduce.worker.streaming import RetryPolicy, UdpReducer
from p4reduce.worker.ddp_comm_hook import AsyncCommunicator, p4reduce_hook
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{store_port}", rank=rank, world_size=world)

def train(state):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if state is not None:
        ddp.register_comm_hook(state, p4reduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(5):
        x = torch.randn(16, 20, generator=g); y = torch.randint(0, 3, (16,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()

builtin = train(None)
red = UdpReducer(JobParams(4, rank, world, 8, "127.0.0.1", switch_port, lanes=256, subblock=16),  # FakeSwitch's
                 bind=("127.0.0.1", my_port),
                 retry=RetryPolicy(timeout=0.05, deadline=10))
state = AsyncCommunicator(Communicator(red))
hooked = train(state)
state.close()
np.save(sys.argv[6], np.stack([builtin, hooked]))
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_ddp_comm_hook_matches_builtin_allreduce(tmp_path):
    import subprocess
    ports = (free_port(kind=socket.SOCK_DGRAM), free_port(kind=socket.SOCK_DGRAM))
    store = free_port()
    with FakeSwitch() as sw:
        sw.add_job(4, 2, 8)
        for r in range(2):
            sw.add_worker(4, r, "127.0.0.1", ports[r])
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(r), "2", str(store), str(sw.addr[1]),
                                   str(ports[r]), str(tmp_path / f"r{r}.npy")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err[-2000:]
        assert sw.received > 0
    (b0, h0), (b1, h1) = np.load(tmp_path / "r0.npy"), np.load(tmp_path / "r1.npy")
    assert np.array_equal(h0, h1)                 # replicas identical through the switch
    assert np.array_equal(b0, b1)
    assert np.abs(h0 - b0).max() < 1e-5           # fixed point is that close to float32 allreduce
    assert np.abs(h0 - b0).max() > 0              # and it really was a different path
