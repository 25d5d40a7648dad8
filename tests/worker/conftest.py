"""Fixtures for the worker tests: the P4 program on p4sim's engine, served over UDP on loopback;
the real job API in bookkeeping mode (no switch) on loopback."""
import pytest

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import from_dict
from p4reduce.p4src.build import ProgramBuildError, compile_program

TOPO = from_dict({
    "switches": {"s1": {"grpc_addr": "127.0.0.1:1", "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"}},
    "hosts": {"h1": {"ip": "127.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1}},
})


@pytest.fixture
def controller():
    mgr = JobManager(SlotPool(256), topology=TOPO, default_workers=4, default_lease_s=5.0, join_timeout_s=30.0)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    yield server.address, mgr
    server.stop()



@pytest.fixture(scope="session")
def p4reduce_json(tmp_path_factory):
    """p4src/p4reduce.p4 compiled by p4sim-compile (the JSON's path); a program that does not
    compile fails the tests."""
    try:
        return str(compile_program(tmp_path_factory.mktemp("p4reduce")).json_path)
    except ProgramBuildError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile with p4sim-compile: {str(e)[:300]}")
