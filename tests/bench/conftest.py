"""Fixtures for the benchmark harness's tests."""
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def p4reduce_program(tmp_path_factory):
    """p4src/p4reduce.p4 compiled by p4sim-compile into a temporary directory (JSON + P4Info)."""
    out = tmp_path_factory.mktemp("p4reduce-build")
    json_path = out / "p4reduce.json"
    proc = subprocess.run([sys.executable, "-m", "p4reduce.p4sim.compile", "--p4v", "16",
                           "--p4runtime-files", str(out / "p4reduce.p4info.txtpb"),
                           "-o", str(json_path), str(REPO / "p4src" / "p4reduce.p4")],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0 and json_path.is_file(), f"p4sim-compile failed:\n{proc.stderr[-3000:]}"
    return json_path
