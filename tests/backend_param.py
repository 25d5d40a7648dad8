"""Run a test directory against both engine backends (imported by tests/{engine,runtime,dataplane}/
conftest.py): every test runs once with P4SIM_BACKEND=python and once with P4SIM_BACKEND=native,
so `Switch(...)` and everything built on it (the P4Runtime server, the fabric) use that engine.

A native run fails if any program in it fell back to the Python engine: "passes on the native
backend" must mean the native backend ran it.  Without a C compiler the native runs skip, except
in CI, where `make setup` installs gcc and a missing one is a failure.
"""

import needs
import pytest

from p4sim.engine.native import backend, toolchain

BACKENDS = ("python", "native")


@pytest.fixture(autouse=True, params=BACKENDS)
def engine_backend(request, monkeypatch):
    if request.param == "native" and toolchain.compiler() is None:
        needs.missing("no C compiler (gcc) for the native backend (`make setup` installs it)")
    monkeypatch.setenv(backend.ENV, request.param)
    seen = len(backend.fallbacks)
    yield request.param
    if request.param == "native":
        fell_back = backend.fallbacks[seen:]
        assert not fell_back, f"the native backend fell back to the Python engine: {fell_back}"
