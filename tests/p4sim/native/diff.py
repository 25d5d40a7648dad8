"""Run the same program and packets on both engines and compare what they do."""
from p4sim.engine import PythonSwitch
from p4sim.engine.native.switch import NativeSwitch


def pair(program, setup=None):
    """(python switch, native switch) with the same control-plane state."""
    switches = (PythonSwitch(program), NativeSwitch(program))
    if setup is not None:
        for sw in switches:
            setup(sw)
    return switches


def same_outputs(switches, packets):
    """Every packet through both switches; asserts equal outputs; -> the outputs."""
    py, nat = switches
    outs = []
    for port, frame in packets:
        want = py.process(port, frame)
        got = nat.process(port, frame)
        assert got == want, f"port {port} frame {frame.hex()}: native {got} != python {want}"
        outs.append(got)
    return outs
