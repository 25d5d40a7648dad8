"""Fixtures: a p4sim P4Runtime server on loopback (in-process, real gRPC) and compiled programs."""
import pytest

from p4reduce.p4src.build import ProgramBuildError, compile_program


@pytest.fixture
def p4rt_server():
    """A fresh p4sim P4Runtime server on 127.0.0.1 (ephemeral port); yields (server, 'host:port')."""
    from p4sim.runtime import P4RuntimeServer
    server = P4RuntimeServer("127.0.0.1:0")
    port = server.start()
    yield server, f"127.0.0.1:{port}"
    server.stop(grace=0.2)


@pytest.fixture(scope="session")
def p4reduce_build(tmp_path_factory):
    """p4src/p4reduce.p4 compiled by p4sim-compile: (p4info path, json path)."""
    try:
        built = compile_program(tmp_path_factory.mktemp("p4reduce-build"))
    except ProgramBuildError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile:\n{str(e)[-3000:]}")
    return built.p4info_path, built.json_path
