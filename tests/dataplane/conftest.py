"""Fixtures for the data-plane tests: p4src/p4reduce.p4 compiled by p4sim-compile and loaded into
p4sim's in-process engine, once per packet layout. Every data-plane test runs at each layout of
LAYOUTS: the default, SwitchML's 256 lanes (16 sub-blocks, the most a bitmap names), a single
sub-block, and one-lane sub-blocks. test_p4_program.py adds the widest packets a 1500-byte MTU
carries, and tests/p4sim/compiler/test_p4src.py compiles every supported SUBBLOCK and NUM_SUBBLOCKS."""
import json

import pytest
from backend_param import engine_backend  # noqa: F401 - every test on both backends (tests/backend_param.py)
from testbed.fabric import Fabric

from p4reduce.p4src.build import compile_program
from p4reduce.protocol.wire import Layout

LAYOUTS = [Layout(32, 8), Layout(256, 16), Layout(16, 16), Layout(12, 1)]


@pytest.fixture(scope="session", params=LAYOUTS, ids=[f"{lay.lanes}x{lay.subblock}" for lay in LAYOUTS])
def layout(request):
    return request.param


@pytest.fixture(scope="session")
def compiled(tmp_path_factory, layout):
    defines = (f"LANES={layout.lanes}", f"SUBBLOCK={layout.subblock}")
    json_path, _ = compile_program(tmp_path_factory.mktemp(f"p4reduce-{layout.lanes}x{layout.subblock}"),
                                   defines)
    return json_path


@pytest.fixture(scope="session")
def program(compiled):
    """The BMv2 JSON, parsed once per layout (a switch per test loads faster from it)."""
    return json.loads(compiled.read_text())


@pytest.fixture
def fabric(program, layout):
    from p4sim.engine import Switch
    return Fabric(Switch(program), layout=layout)
