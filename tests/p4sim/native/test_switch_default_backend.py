"""`p4sim-switch PROGRAM.json` with no --backend runs every program of the project on the native
backend: p4src/p4reduce.p4 (32 and 256 lanes), examples/p4, tests/p4sim/engine/programs and the shared
reference set (p4sim-compile's JSON and real p4c's).  The switch says at every pipeline load what
runs the packets; a fallback to the Python engine (with its reason) fails the test."""
import json
import os
import subprocess
import sys
import time

import pytest

from p4sim.compiler import compile_file

from . import fuzz
from .fuzz import REPO

LOADED = "Pipeline loaded: packets run on the "
PROGRAMS = [*fuzz.program_names(), "p4reduce (256 lanes)"]


def bmv2_json(name):
    if name == "p4reduce (256 lanes)":
        return compile_file(str(REPO / "p4reduce" / "p4src" / "p4reduce.p4"), defines=("LANES=256", "SUBBLOCK=16")).bmv2
    return fuzz.load(name)[0]


def start_and_read_until_listening(argv, env, timeout=120):
    """The switch's stdout lines up to its first "Pipeline loaded" (then SIGTERM, exit status checked)."""
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(LOADED) or time.monotonic() > deadline:
                break
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (lines, err[-3000:])
    return lines, err


@pytest.mark.parametrize("name", PROGRAMS)
def test_p4sim_switch_runs_the_program_on_the_native_backend_by_default(name, tmp_path):
    path = tmp_path / "program.json"
    path.write_text(json.dumps(bmv2_json(name)))
    env = {k: v for k, v in os.environ.items() if k != "P4SIM_BACKEND"}
    lines, err = start_and_read_until_listening(
        [sys.executable, "-m", "p4sim.simple_switch", str(path), "--thrift-port", "0",
         "--", "--grpc-server-addr", "127.0.0.1:0"], env)
    said = [line[len(LOADED):] for line in lines if line.startswith(LOADED)]
    assert said == ["native backend (generated C)"], (lines, err[-2000:])
    assert lines[0].startswith("Server listening on "), lines  # first, as simple_switch_grpc's
    assert "runs on the Python engine" not in err
