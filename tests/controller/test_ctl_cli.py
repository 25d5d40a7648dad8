"""The non-interactive CLI and the shell's commands against a live p4sim switch (loopback gRPC)."""
import io
import json
import subprocess
import sys

import pytest

from p4reduce.controller.cli import main
from p4reduce.controller.connection import SwitchConnection
from p4reduce.controller.entities import multicast_group, table_entry
from p4reduce.controller.inspection import SwitchInspector
from p4reduce.controller.registers import open_register_access
from p4reduce.controller.shell import ShellCommands


@pytest.fixture
def agg_switch(p4rt_server, reference_dir):
    """agg_mini running with a few known values; yields (address, primary connection)."""
    _, addr = p4rt_server
    out = reference_dir / "p4c-out"
    conn = SwitchConnection(addr, election_id=10).connect(timeout=5)
    conn.ensure_pipeline(out / "agg_mini.p4info.txtpb", out / "agg_mini.json")
    regs = open_register_access(conn)
    regs.write_many("Ing.r1", {4: 123, 5: -1 & 0xFFFFFFFF})
    regs.write("Ing.seen", 4, 0b101)
    conn.insert(table_entry(conn.index, "Egr.rewrite", {"sm.egress_rid": 2}, "Egr.to", {"mac": "00:00:00:00:00:02"}))
    conn.insert(multicast_group(1, [(1, 0), (2, 1), (3, 2)]))
    yield addr, conn
    conn.close()


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_registers_command(agg_switch, capsys):
    addr, _ = agg_switch
    rc, out, _ = run(capsys, "registers", "Ing.r1", "--index", "4", "--grpc-addr", addr)
    assert rc == 0 and out.splitlines() == ["Ing.r1 (size 16, int<32>)", "  [4] 123"]
    rc, out, _ = run(capsys, "registers", "r1", "--range", "3:6", "--json", "--grpc-addr", addr)
    data = json.loads(out)
    assert data["values"] == {"3": 0, "4": 123, "5": -1} and data["bitwidth"] == 32
    rc, out, err = run(capsys, "registers", "r1", "--index", "99", "--grpc-addr", addr)
    assert rc == 1 and "index 99 is outside 0..15" in err and "Traceback" not in err
    rc, out, err = run(capsys, "registers", "nope", "--grpc-addr", addr)
    assert rc == 1 and "no register named 'nope'" in err and "Ing.r1" in err


def test_entries_groups_counters_commands(agg_switch, capsys):
    addr, _ = agg_switch
    rc, out, _ = run(capsys, "entries", "--grpc-addr", addr)
    assert rc == 0 and out.strip() == "Egr.rewrite: sm.egress_rid=2 -> Egr.to(mac=00:00:00:00:00:02)"
    rc, out, _ = run(capsys, "groups", "--json", "--grpc-addr", addr)
    assert json.loads(out) == [{"group": 1, "replicas": [{"port": 1, "instance": 0}, {"port": 2, "instance": 1},
                                                          {"port": 3, "instance": 2}]}]
    rc, out, _ = run(capsys, "counters", "--grpc-addr", addr)
    assert rc == 0 and out.strip() == "no counters"  # agg_mini has none


def test_cli_entry_point_and_unreachable_switch(agg_switch):
    addr, _ = agg_switch
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "registers", "Ing.seen", "--index", "4",
                           "--grpc-addr", addr], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.splitlines()[1] == "  [4] 5"
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "jobs", "--grpc-addr", "127.0.0.1:1", "--wait", "0.5"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "nothing answers P4Runtime at 127.0.0.1:1 within 0.5 s" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "registers", "x", "--range", "5:2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "need 0 <= START < STOP" in proc.stderr


def test_shell_commands_print_and_report_errors(agg_switch):
    addr, _conn = agg_switch
    out = io.StringIO()
    reader = SwitchConnection(addr).connect(timeout=5, arbitrate=False)
    reader.fetch_pipeline()
    cmds = ShellCommands(SwitchInspector(reader, open_register_access(reader)), out=out).namespace()
    cmds["reg"]("r1", range(4, 6))
    cmds["groups"]()
    cmds["reg"]("r1", 77)
    cmds["entries"]("rewrite")
    assert out.getvalue().splitlines() == [
        "Ing.r1 (size 16, int<32>)", "  [4] 123", "  [5] -1",
        "group 1: port 1 rid 0, port 2 rid 1, port 3 rid 2",
        "error: register Ing.r1: index 77 is outside 0..15",
        "Egr.rewrite: sm.egress_rid=2 -> Egr.to(mac=00:00:00:00:00:02)"]
    reader.close()


def test_interactive_shell_has_p4runtime_shell_and_project_commands(agg_switch):
    addr, _ = agg_switch
    script = "\n".join([
        "groups()",
        'reg("Ing.r1", 4)',
        "print(sorted(t.name for t in tables))",  # p4runtime-shell's own objects are there
        "print('READ', len(list(table_entry['Egr.rewrite'].read())))",
        'reg("nope")',
        "exit", ""])
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "shell", "--grpc-addr", addr],
                          input=script, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "p4reduce shell" in out
    assert "group 1: port 1 rid 0, port 2 rid 1, port 3 rid 2" in out
    assert "Ing.r1 (size 16, int<32>)\n  [4] 123" in out
    assert "['Egr.rewrite']" in out
    assert "READ 1" in out
    assert "error: no register named 'nope'" in out
