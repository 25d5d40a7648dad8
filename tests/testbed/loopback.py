"""One reducer per rank, registered on a loopback switch (FakeSwitch or P4SimUdpSwitch).

Tests, the training experiment and benchmarks all run a whole job inside one process; this is the
one place that wires its ranks to the switch.
"""
from __future__ import annotations

from typing import Any, Protocol

from p4reduce.protocol.wire import Layout
from p4reduce.worker.job import JobParams
from p4reduce.worker.streaming import RetryPolicy, UdpReducer

LOOPBACK_WIRE_TOKEN = 0x5EC0_0001   # the wire token of loopback jobs: packets carry one, as on a real switch


class LoopbackSwitch(Protocol):
    """What a loopback switch offers (testbed.fakeswitch.FakeSwitch, testbed.p4sim_udp.P4SimUdpSwitch)."""

    addr: Any           # its UDP socket's (host, port)
    layout: Layout      # the packet layout of its program: the job's

    def add_job(self, job_id: int, n_workers: int, slot_count: int, sparse: bool = False,
                slot_base: int = 0, wire_token: int = 0) -> None: ...

    def add_worker(self, job_id: int, rank: int, ip: str, port: int, /) -> None: ...


def loopback_reducers(switch: LoopbackSwitch, job_id: int, n_workers: int, slots: int, *, sparse: bool = False,
                      name: str = "loopback", retry: RetryPolicy | None = None,
                      wire_token: int = LOOPBACK_WIRE_TOKEN) -> list[UdpReducer]:
    """Create the job on `switch` and one UdpReducer per rank bound to 127.0.0.1 (caller closes them)."""
    switch.add_job(job_id, n_workers, slots, sparse=sparse, wire_token=wire_token)
    reducers = []
    for rank in range(n_workers):
        job = JobParams(job_id, rank, n_workers, slots, "127.0.0.1", switch.addr[1], sparse=sparse, name=name,
                        lanes=switch.layout.lanes, subblock=switch.layout.subblock, wire_token=wire_token)
        reducer = UdpReducer(job, bind=("127.0.0.1", 0), retry=retry)
        switch.add_worker(job_id, rank, "127.0.0.1", reducer.local_port)
        reducers.append(reducer)
    return reducers
