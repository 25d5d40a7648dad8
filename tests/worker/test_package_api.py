"""The Python API of the README (p4reduce.worker: create_job / init / allreduce / shutdown,
register_compressor, the lazily imported names) against the real job API and a fake switch."""
import subprocess
import sys

import numpy as np
import pytest
import torch
from testbed.fakeswitch import FakeSwitch

from p4reduce import worker
from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import from_dict
from p4reduce.protocol.job_api import JobApiClient, JobApiError
from p4reduce.worker.compressors import COMPRESSORS, FixedPoint

TOPO = from_dict({
    "switches": {"s1": {"grpc_addr": "127.0.0.1:1", "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"}},
    "hosts": {"h1": {"ip": "127.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1}},
})


@pytest.fixture
def controller():
    mgr = JobManager(SlotPool(256), topology=TOPO, default_lease_s=5.0, join_timeout_s=30.0)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    yield server.address
    server.stop()


def test_create_join_allreduce_numpy_and_torch(controller):
    job = worker.create_job(controller, "api", workers=1, mode="dense")
    assert job["name"] == "api" and job["workers"] == 1 and job["credential"]
    with pytest.raises(JobApiError, match="exists"):
        worker.create_job(controller, "api", workers=2)
    with FakeSwitch() as sw:
        sw.add_job(job["job_id"], 1, job["slots"]["count"], wire_token=job["wire_token"])
        agent = worker.init(controller, "api", credential=job["credential"], switch_addr=sw.addr, bind_ip="127.0.0.1")
        try:
            sw.add_worker(job["job_id"], 0, "127.0.0.1", agent.sock.getsockname()[1])
            ints = np.arange(-500, 500, dtype=np.int32)
            assert np.array_equal(worker.allreduce(ints), ints)
            t = torch.linspace(-1, 1, 3000).reshape(30, 100)
            out = worker.allreduce(t, average=True)
            assert isinstance(out, torch.Tensor) and out.shape == t.shape and out.dtype == torch.float32
            assert float((out - t).abs().max()) < 1e-6
            assert worker.allreduce_async(ints).result(timeout=30).tolist() == ints.tolist()
            buf = np.zeros_like(ints)
            assert worker.allreduce(ints, out=buf) is buf and np.array_equal(buf, ints)   # into the caller's buffer
            tout = torch.zeros_like(t)
            assert worker.allreduce(t, out=tout) is tout and float((tout - t).abs().max()) < 1e-6
            with pytest.raises(ValueError, match="out must be a numpy array of 1000 int32"):
                worker.allreduce(ints, out=np.zeros(999, np.int32))
            with pytest.raises(ValueError, match="CPU torch tensor"):
                worker.allreduce(t, out=np.zeros(3000, np.float32))
        finally:
            worker.shutdown()
    assert JobApiClient(controller).jobs() == []          # the only worker left: the job ended


def test_register_compressor_and_lazy_names():
    worker.register_compressor("api-test-fp", lambda seed, rank, **kw: FixedPoint())
    try:
        assert COMPRESSORS["api-test-fp"][1] is False
        with pytest.raises(ValueError, match="must be a new, non-empty name"):
            worker.register_compressor("topk", lambda seed, rank: FixedPoint())
        with pytest.raises(TypeError, match="factory must be callable"):
            worker.register_compressor("api-test-2", "not callable")
    finally:
        COMPRESSORS.pop("api-test-fp", None)
    assert worker.Agent.__name__ == "Agent" and callable(worker.ddp_hook) and callable(worker.init_process_group)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        worker.nope  # noqa: B018
    code = "import sys, p4reduce; print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"
