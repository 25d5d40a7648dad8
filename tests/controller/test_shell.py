"""The shell and the inspection CLI on the real p4reduce program (p4sim's P4Runtime server on
loopback): lanes shown signed by reg() as by slot(), the old sbK_lJ spelling, every documented
command defined, register/counter/table names in help_p4reduce(), `registers` with no name lists
them, --switch NAME from a topology description (default: the aggregating switch), and an error
that says what to start when nothing answers."""
import io
import json
import subprocess
import sys

import pytest

from p4reduce.controller import cli
from p4reduce.controller.connection import SwitchConnection
from p4reduce.controller.inspection import SwitchInspector
from p4reduce.controller.registers import open_register_access
from p4reduce.controller.shell import COMMAND_NAMES, COMMANDS, ShellCommands
from p4reduce.mininet_topos.ports import free_port
from p4reduce.protocol import p4names

LANE = p4names.lane_register(0, 3)


@pytest.fixture
def p4reduce_switch(p4rt_server, p4reduce_build):
    """p4reduce running on a p4sim P4Runtime server, lane sb0.l3 of slot 2 ver 1 holding -5 and
    slot 2's count 3; yields (address, primary connection)."""
    _, addr = p4rt_server
    p4info, bmv2 = p4reduce_build
    conn = SwitchConnection(addr, election_id=10).connect(timeout=5)
    conn.ensure_pipeline(p4info, bmv2)
    regs = open_register_access(conn)
    i = p4names.register_index(0, 2, 1)
    regs.write(LANE, i, -5 & 0xFFFFFFFF)
    regs.write(p4names.COUNT, i, 3)
    yield addr, conn
    conn.close()


@pytest.fixture
def shell(p4reduce_switch):
    addr, _ = p4reduce_switch
    reader = SwitchConnection(addr).connect(timeout=5, arbitrate=False)
    reader.fetch_pipeline()
    out = io.StringIO()
    yield ShellCommands(SwitchInspector(reader, open_register_access(reader)), out=out, switch="s1").namespace(), out
    reader.close()


def test_lanes_are_signed_in_reg_as_in_slot(shell):
    cmds, out = shell
    i = p4names.register_index(0, 2, 1)
    cmds["reg"]("sb0.l3", i)
    cmds["reg"]("sb0_l3", i)              # the spelling of the registers before the P4 restructure
    cmds["slot"](2, ver=1)
    text = out.getvalue().splitlines()
    assert text[0] == f"{LANE} (size {text[0].split('size ')[1].split(',')[0]}, bit<32>, shown signed: int32 lanes)"
    assert text[1] == f"  [{i}] -5" and text[2] == text[0] and text[3] == f"  [{i}] -5"
    sb0 = next(line for line in text if line.strip().startswith("sb0"))
    assert sb0.split()[1:5] == ["0", "0", "0", "-5"]
    assert "count=3" in out.getvalue()


def test_registers_lists_them_and_every_documented_command_is_defined(shell):
    cmds, out = shell
    assert set(cmds) == set(COMMAND_NAMES)
    for usage, _ in COMMANDS:            # the help's commands are all callable
        if usage:
            assert usage.split("(")[0] in cmds, usage
    cmds["registers"]()
    listing = out.getvalue()
    assert f"{p4names.COUNT} " in listing and f"{p4names.SEEN} " in listing
    assert "ReduceIngress.lane_adders.sb{0.." in listing and "lane registers" in listing
    out.truncate(0), out.seek(0)
    cmds["slots"]()
    assert out.getvalue().startswith("slot map (")


def test_help_lists_commands_registers_counters_and_tables(shell):
    cmds, out = shell
    cmds["help_p4reduce"]()
    text = out.getvalue()
    assert text.startswith("p4reduce commands on switch s1 (read-only):")
    for name in ("registers()", "reg(", "slot(", "counters()", "entries()", "groups()", "jobs()"):
        assert name in text
    for name in (p4names.COUNT, p4names.MAX_EXP, p4names.DROP_REASONS, p4names.AGG_EVENTS, p4names.JOBS,
                 p4names.WORKERS):
        assert name in text, name
    assert "UNKNOWN_JOB" in text and "RESULT_MULTICAST" in text      # counter cells by name


def test_cli_registers_signed_and_listed(p4reduce_switch, capsys):
    addr, _ = p4reduce_switch
    i = p4names.register_index(0, 2, 1)
    assert cli.main(["registers", "sb0.l3", "--index", str(i), "--json", "--grpc-addr", addr]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["values"] == {str(i): -5} and data["signed"] and data["type"] == "bit<32>"
    assert cli.main(["registers", "--json", "--grpc-addr", addr]) == 0
    names = {r["register"] for r in json.loads(capsys.readouterr().out)}
    assert {p4names.COUNT, LANE} <= names


def _description(path, switches):
    path.write_text(json.dumps({"version": 1, "topology": "two-tier", "switches": switches, "hosts": []}))
    return str(path)


def test_switch_by_name_from_the_topology_description(p4reduce_switch, tmp_path, capsys):
    addr, _ = p4reduce_switch
    dead = f"127.0.0.1:{free_port(1)}"
    topo = _description(tmp_path / "topology.json", [
        {"name": "leaf1", "grpc_addr": dead, "device_id": 1, "role": "leaf"},
        {"name": "spine", "grpc_addr": addr, "device_id": 0, "role": "spine", "aggregate": True}])
    # no --switch: the aggregating switch (spine), not the first one
    assert cli.main(["registers", "count", "--index", str(p4names.register_index(0, 2, 1)), "--topology", topo]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("] 3")
    assert cli.main(["registers", "count", "--index", "0", "--switch", "spine", "--topology", topo]) == 0
    capsys.readouterr()
    # a named switch that is not up: says which, from where, and what to start
    assert cli.main(["jobs", "--switch", "leaf1", "--topology", topo, "--wait", "0.3"]) == 1
    err = capsys.readouterr().err
    assert err.count(dead) == 1, err
    assert f"nothing answers P4Runtime at switch leaf1 at {dead} (from {topo}) within 0.3 s" in err
    assert "`make run`" in err and "--switch NAME" in err
    assert cli.main(["jobs", "--switch", "leaf9", "--topology", topo]) == 1
    assert "--switch leaf9: no such switch in" in capsys.readouterr().err
    assert cli.main(["jobs", "--switch", "s1", "--topology", str(tmp_path / "none.json")]) == 1
    assert "no topology description at" in capsys.readouterr().err
    args = cli.build_parser().parse_args(["slots", "--switch", "leaf1", "--topology", topo, "--thrift-port", "9999"])
    target = cli.resolve_target(args)
    assert (target.name, target.grpc_addr, target.device_id, target.thrift_port) == ("leaf1", dead, 1, 9999)


def test_a_descriptions_tls_is_for_its_own_switches_only(p4reduce_switch, tmp_path, capsys, monkeypatch):
    """A `make run` description (with its TLS files) in run/ must not turn a switch named by
    address alone into a TLS one: that switch, in clear, answers; the description's own switch is
    reached with the description's TLS."""
    addr, _ = p4reduce_switch
    run = tmp_path / "run"
    run.mkdir()
    (run / "topology.json").write_text(json.dumps({
        "version": 1, "topology": "star", "hosts": [],
        "switches": [{"name": "s1", "grpc_addr": "127.0.0.1:9", "device_id": 0, "aggregate": True}],
        "p4runtime_tls": {"ca": "run/tls/ca.pem", "cert": "run/tls/controller.pem", "key": "run/tls/controller.key"}}))
    monkeypatch.chdir(tmp_path)
    i = str(p4names.register_index(0, 2, 1))
    assert cli.main(["registers", "count", "--index", i, "--grpc-addr", addr]) == 0, capsys.readouterr().err
    capsys.readouterr()
    described = cli.resolve_target(cli.build_parser().parse_args(["slots"]))
    assert described.name == "s1" and described.tls is not None and described.tls.ca == "run/tls/ca.pem"
    by_address = cli.resolve_target(cli.build_parser().parse_args(["slots", "--grpc-addr", addr]))
    assert by_address.tls is None
    moved = cli.resolve_target(cli.build_parser().parse_args(["slots", "--switch", "s1", "--grpc-addr", addr]))
    assert moved.tls is None           # the description's switch, told to look elsewhere: as told


def test_unreachable_default_address_says_what_to_start(tmp_path):
    port = free_port(1)
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "slots", "--grpc-addr", f"127.0.0.1:{port}",
                           "--wait", "0.3"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count(f"127.0.0.1:{port}") == 1
    assert "is the network up? Start it with `make run`" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "jobs", "--api-addr", f"127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1 and "no controller answers at --api-addr" in proc.stderr


def test_interactive_shell_registers_and_help(p4reduce_switch, tmp_path):
    addr, _ = p4reduce_switch
    topo = _description(tmp_path / "topology.json", [
        {"name": "spine", "grpc_addr": addr, "device_id": 0, "aggregate": True}])
    script = "\n".join(["registers", "help_p4reduce()", f'reg("sb0_l3", {p4names.register_index(0, 2, 1)})',
                        "exit", ""])
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "shell", "--switch", "spine",
                           "--topology", topo], input=script, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"p4reduce shell on spine ({addr})" in out
    assert "NameError" not in out and "Traceback" not in out
    assert "registers (index = 2 * slot + ver):" in out            # bare `registers` (autocall)
    assert f"p4reduce commands on switch spine ({addr}) (read-only):" in out
    assert f"[{p4names.register_index(0, 2, 1)}] -5" in out
