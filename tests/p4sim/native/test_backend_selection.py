"""Choosing the backend: the backend= argument, $P4SIM_BACKEND, the default (native when a C
compiler is there), and the fallback to the Python engine with one log line saying why."""
import logging

import pytest
from engine.bmv2 import SM, C, E, F, P, Program, extract, wrap

from p4sim.engine import EngineError, ProgramError, PythonSwitch, Switch
from p4sim.engine.native import backend
from p4sim.engine.native.switch import NativeSwitch


def l2():
    p = Program()
    p.header("h", [("a", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.run("ingress", "fwd", [P("assign", SM("egress_spec"), C(2))])
    return p.build()


def wide_division():
    """Dividing 128-bit values: the Python engine does it (infinite precision), the C generator
    does not (yet), so this program falls back."""
    p = Program()
    p.header("h", [("a", 128), ("b", 128)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.run("ingress", "div", [P("assign", SM("egress_spec"), C(2)),
                             P("assign", F("h", "a"), wrap(E("/", F("h", "a"), F("h", "b")), 128))])
    return p.build()


def test_backend_argument_and_environment(monkeypatch):
    monkeypatch.delenv(backend.ENV, raising=False)
    assert isinstance(Switch(l2(), backend="python"), PythonSwitch)
    assert isinstance(Switch(l2(), backend="native"), NativeSwitch)
    assert isinstance(Switch(l2()), NativeSwitch)  # gcc is installed by `make setup`
    monkeypatch.setenv(backend.ENV, "python")
    assert isinstance(Switch(l2()), PythonSwitch)
    with pytest.raises(EngineError, match="backend must be"):
        Switch(l2(), backend="fpga")
    monkeypatch.setenv(backend.ENV, "fast")
    with pytest.raises(EngineError, match="P4SIM_BACKEND='fast'"):
        Switch(l2())


def test_no_compiler_means_python_with_one_notice(monkeypatch, caplog):
    monkeypatch.delenv(backend.ENV, raising=False)
    monkeypatch.setattr(backend.toolchain, "compiler", lambda: None)
    monkeypatch.setattr(backend, "_noticed", set())
    with caplog.at_level(logging.WARNING, logger="p4sim.engine"):
        assert isinstance(Switch(l2()), PythonSwitch)
        assert isinstance(Switch(l2()), PythonSwitch)
    notices = [r for r in caplog.records if "no C compiler" in r.getMessage()]
    assert len(notices) == 1


def test_unsupported_program_falls_back_with_one_line_saying_why(caplog):
    with caplog.at_level(logging.WARNING, logger="p4sim.engine"):
        sw = Switch(wide_division(), backend="native")
    assert isinstance(sw, PythonSwitch)
    lines = [r.getMessage() for r in caplog.records if r.name == "p4sim.engine"]
    assert len(lines) == 1 and "division of values wider than 64 bits" in lines[0], lines
    assert backend.fallbacks[-1].endswith("division of values wider than 64 bits (/)")
    [(port, out)] = sw.process(1, (100).to_bytes(16, "big") + (7).to_bytes(16, "big"))
    assert (port, int.from_bytes(out[:16], "big")) == (2, 14)  # the answer is still right


def test_a_bad_program_is_the_python_engines_error_not_a_fallback(caplog):
    bad = l2()
    bad["deparsers"][0]["order"] = ["nosuch"]
    with caplog.at_level(logging.WARNING, logger="p4sim.engine"), pytest.raises(ProgramError) as native:
        Switch(bad, backend="native")
    with pytest.raises(ProgramError) as python:
        Switch(bad, backend="python")
    assert str(native.value) == str(python.value)
    assert not [r for r in caplog.records if "falls back" in r.getMessage() or "runs on the Python" in r.getMessage()]
