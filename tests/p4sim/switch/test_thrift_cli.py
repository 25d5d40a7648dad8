"""simple_switch_CLI (BMv2's Thrift CLI) against p4sim-switch: registers and counters."""
import pathlib
import socket
import subprocess
import sys

from .veth_topology import REPO, free_port

PYTHON = sys.executable


def test_simple_switch_cli_reads_and_writes_registers(reference_dir):
    thrift_port, grpc_port = free_port(), free_port()
    switch = subprocess.Popen(
        [PYTHON, "-m", "p4sim.simple_switch", str(reference_dir / "p4c-out" / "agg_mini.json"),
         "--thrift-port", str(thrift_port), "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert switch.stdout.readline().startswith("Server listening")
        commands = "register_write Ing.r0 3 77\nregister_read Ing.r0 3\nregister_read Ing.cnt\n"
        cli_path = pathlib.Path(sys.executable).parent / "simple_switch_CLI"
        cli = subprocess.run([str(cli_path), "--thrift-port", str(thrift_port)],
                             input=commands, capture_output=True, text=True, timeout=60)
        assert "Ing.r0[3]= 77" in cli.stdout, cli.stdout + cli.stderr
        assert "Ing.cnt= " + ", ".join(["0"] * 16) in cli.stdout
    finally:
        switch.terminate()
        assert switch.wait(15) == 0


def test_taken_thrift_port_is_an_error_when_asked_for():
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([PYTHON, "-m", "p4sim.simple_switch", "--no-p4", "--thrift-port", str(port),
                                 "--", "--grpc-server-addr", f"127.0.0.1:{free_port()}"],
                                cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert f"--thrift-port {port}" in result.stderr and "Traceback" not in result.stderr
