"""A job API (the real controller's, bookkeeping mode) and a switch stand-in over UDP on loopback,
for process groups in child processes; the stand-in is told of each job once it runs, as the
controller tells a real switch."""
import threading
import time

import pytest
from testbed.fakeswitch import FakeSwitch

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import from_dict

TOPO = from_dict({
    "switches": {"s1": {"grpc_addr": "127.0.0.1:1", "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"}},
    "hosts": {"h1": {"ip": "127.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1}},
})


class Network:
    """The controller's address, the stand-in switch, and a thread that programs it."""

    def __init__(self, mgr, server, switch):
        self.mgr, self.server, self.switch = mgr, server, switch
        self.addr = server.address
        self._stop = threading.Event()
        self._done: set[int] = set()
        self.seen: dict[str, int] = {}     # job name -> its workers, as programmed
        self._thread = threading.Thread(target=self._program, daemon=True)
        self._thread.start()

    def _program(self):
        while not self._stop.is_set():
            for job in list(self.mgr.jobs.values()):
                if job.job_id in self._done or job.state != "running":
                    continue
                self.switch.add_job(job.job_id, job.workers, job.slots.count, sparse=job.mode == "sparse",
                                    wire_token=job.wire_token)
                for m in job.members.values():
                    self.switch.add_worker(job.job_id, m.rank, m.ip, m.udp_port)
                self._done.add(job.job_id)
                self.seen[job.name] = job.workers
            time.sleep(0.02)

    def env(self, **extra):
        # the stand-in runs in this (busy) test process: a stall of it is not a dead switch. A rank
        # that finished a switch call and went into a gloo collective cannot help its peers redo
        # that call (docs/distributed.md), so these tests give the switch 10 s, except where a
        # test freezes it on purpose
        return {"P4REDUCE_CONTROLLER": self.addr, "P4REDUCE_SWITCH": "{}:{}".format(*self.switch.addr),
                "P4REDUCE_BIND_IP": "127.0.0.1", "P4REDUCE_SWITCH_TIMEOUT": "10", **extra}

    def close(self):
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def network():
    mgr = JobManager(SlotPool(256), topology=TOPO, default_workers=4, default_lease_s=5.0, join_timeout_s=30.0)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    with FakeSwitch() as sw:
        net = Network(mgr, server, sw)
        yield net
        net.close()
    server.stop()
