"""p4runtime-shell's interactive mode (python -m p4runtime_sh, IPython prompt) against a running
p4sim-switch: push the pipeline, insert, read back, see a write error, read counters."""
import subprocess
import sys

from .veth_topology import REPO, free_port

SCRIPT = """\
te = table_entry["Ing.l2"](action="Ing.l2_forward")
te.match["hdr.eth.dst"] = "00:00:00:00:00:02"
te.action["port"] = "2"
te.insert()
print("READBACK", [e.msg().match[0].exact.value for e in table_entry["Ing.l2"].read()])
te.insert()
print("COUNTERS", len(list(counter_entry["Ing.drops"].read())))
table_entry["Ing.routes"](is_default=True).read(lambda e: print("DEFAULT", e.msg().action.action.action_id))
"""


def test_interactive_shell_session(reference_dir):
    port = free_port()
    switch = subprocess.Popen([sys.executable, "-m", "p4sim.simple_switch", "--no-p4", "--thrift-port",
                               str(free_port()), "--",
                               "--grpc-server-addr", f"127.0.0.1:{port}", "--cpu-port", "64"],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert switch.stdout.readline().startswith("Server listening")
        config = (f"{reference_dir}/p4c-out/fwd_basic.p4info.txtpb,"
                  f"{reference_dir}/p4c-out/fwd_basic.json")
        shell = subprocess.run(
            [sys.executable, "-m", "p4runtime_sh", "--grpc-addr", f"127.0.0.1:{port}",
             "--device-id", "0", "--election-id", "0,1", "--config", config],
            input=SCRIPT + "exit\n", capture_output=True, text=True, timeout=120)
        out = shell.stdout + shell.stderr
        assert "READBACK [b'\\x02']" in out, out
        assert "ALREADY_EXISTS" in out and "Ing.l2" in out
        assert "COUNTERS 4" in out
        assert "DEFAULT 25353717" in out  # Ing.no_route in the P4Info
    finally:
        switch.terminate()
        assert switch.wait(15) == 0
