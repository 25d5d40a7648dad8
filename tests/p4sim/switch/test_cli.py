"""p4sim-switch command line: bad arguments get a clear error naming the argument (no
traceback); a good command line serves P4Runtime and stops cleanly on SIGTERM/SIGINT."""
import signal
import subprocess
import sys

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .veth_topology import REPO, free_port

PYTHON = sys.executable


def switch(*args, timeout=30):
    return subprocess.run([PYTHON, "-m", "p4sim.simple_switch", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("args, words", [
    (["--no-p4", "-i", "1veth0"], ["-i", "1veth0", "PORT@IFACE"]),
    (["--no-p4", "-i", "x@veth0"], ["-i", "'x'"]),
    (["--no-p4", "-i", "600@veth0"], ["-i", "600"]),
    (["--no-p4", "-i", "1@a", "-i", "1@b"], ["port 1", "'a'"]),
    (["--no-p4", "-i", "1@a", "-i", "2@a"], ["interface 'a'"]),
    (["--no-p4", "--device-id", "abc"], ["--device-id", "abc"]),
    (["--no-p4", "-L", "loud"], ["-L/--log-level", "loud"]),
    (["--no-p4", "--bogus"], ["--bogus"]),
    ([], ["--no-p4"]),
    (["--no-p4", "/nonexistent.json"], ["--no-p4", "/nonexistent.json"]),
    (["/nonexistent.json"], ["/nonexistent.json", "does not exist"]),
    (["--no-p4", "--", "--grpc-server-addr", "nohost"], ["--grpc-server-addr", "HOST:PORT"]),
    (["--no-p4", "--", "--cpu-port", "9999"], ["--cpu-port", "9999"]),
    (["--no-p4", "--", "--unknown-target-flag"], ["--unknown-target-flag"]),
    (["--no-p4", "-i", "5@a", "--", "--cpu-port", "5"], ["CPU port"]),
    (["--no-p4", "--backend", "fpga"], ["--backend", "fpga", "native", "python"]),
])
def test_bad_arguments_are_reported_by_name(args, words, capsys):
    from p4sim.simple_switch import main
    assert main(args) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("p4sim-switch: error:")
    for word in words:
        assert word in stderr, (word, stderr)


def test_bad_arguments_from_the_real_command_exit_2_without_traceback():
    result = switch("--no-p4", "-i", "1veth0")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "1veth0" in result.stderr


def test_missing_interface_is_reported_without_traceback():
    result = switch("--no-p4", "-i", "1@p4rtnosuchif0", "--", "--grpc-server-addr",
                    f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "p4rtnosuchif0" in result.stderr and "does not exist" in result.stderr


def test_bad_json_program_is_reported_without_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"pipelines\": 3")
    result = switch(str(bad), "--", "--grpc-server-addr", f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "bad.json" in result.stderr


def start(*args):
    port = free_port()
    if "--thrift-port" not in args:
        args += ("--thrift-port", str(free_port()))
    process = subprocess.Popen([PYTHON, "-m", "p4sim.simple_switch", *args, "--", "--grpc-server-addr",
                                f"127.0.0.1:{port}"], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.strip() == f"Server listening on 127.0.0.1:{port}", (line, process.stderr.read() if process.poll() is not None else "")
    return process, port


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_p4runtime_then_stops_cleanly_on_signal(sig):
    process, port = start("--no-p4", "--device-id", "3")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
            with pytest.raises(grpc.RpcError) as info:
                stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=3))
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        process.send_signal(sig)
        assert process.wait(15) == 0
        assert "Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_address_in_use_is_reported(tmp_path):
    process, port = start("--no-p4")
    try:
        result = switch("--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{port}")
        assert result.returncode == 1
        assert "Traceback" not in result.stderr and f"127.0.0.1:{port}" in result.stderr
    finally:
        process.terminate()
        process.wait(15)


def test_positional_json_program_is_loaded(reference_dir):
    process, _port = start(str(reference_dir / "p4c-out" / "fwd_basic.json"))
    try:
        process.terminate()
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize("level, traced", [(None, True), ("info", False)])
def test_log_file_gets_the_per_packet_trace(tmp_path, level, traced):
    import json
    import time

    from runtime import acl_program
    from runtime.p4rt_client import RawClient
    log_file = tmp_path / "logs" / "s1.log"
    args = ["--no-p4", "--log-file", str(log_file), "--thrift-port", str(free_port())] + \
        (["-L", level] if level else [])
    port = free_port()
    process = subprocess.Popen([PYTHON, "-m", "p4sim.simple_switch", *args, "--", "--grpc-server-addr",
                                f"127.0.0.1:{port}", "--cpu-port", "64"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("Server listening")
        client = RawClient(f"127.0.0.1:{port}", device_id=0, election_id=1)
        client.set_pipeline(acl_program.p4info(), json.dumps(acl_program.bmv2_json()).encode())
        client.packet_out(bytes(20), metadata=[(1, b"\x02")])
        time.sleep(0.5)
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    text = log_file.read_text()
    assert ("Processing packet received on port 64" in text) == traced
    if traced:
        assert "[bmv2] [T]" in text and "Transmitting packet" in text


def test_unwritable_log_file_is_reported_without_traceback():
    result = switch("--no-p4", "--log-file", "/proc/p4sim-no-such-dir/s1.log", "--",
                    "--grpc-server-addr", f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "/proc/p4sim-no-such-dir" in result.stderr


def test_simple_switch_grpc_command_lines_parse(tmp_path):
    """The forms Mininet nodes and the P4 tutorials use for simple_switch_grpc."""
    from p4sim.simple_switch import parse_args
    program = tmp_path / "prog.json"
    program.write_text("{}")
    options, target = parse_args(["-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "1",
                                  "--thrift-port", "9091", "--log-file", "logs/s1.log",
                                  f"--pcap={tmp_path}", "--no-p4", "--", "--grpc-server-addr",
                                  "0.0.0.0:50051", "--cpu-port", "255"])
    assert options.ports == {1: "s1-eth1", 2: "s1-eth2"} and options.device_id == 1
    assert options.pcap == str(tmp_path) and options.thrift_port == 9091 and options.no_p4
    assert (target.grpc_server_addr, target.cpu_port, target.drop_port) == ("0.0.0.0:50051", 255, 511)
    options, target = parse_args(["--log-console", "-L", "info", "--pcap", str(program)])
    assert options.program == str(program) and options.pcap == "."  # bare --pcap before the JSON
    assert target.grpc_server_addr == "127.0.0.1:9559" and target.cpu_port is None   # loopback unless told
    options, _ = parse_args(["--pcap", str(tmp_path), str(program)])
    assert options.pcap == str(tmp_path) and options.program == str(program)
    assert parse_args(["--backend", "python", "--no-p4"])[0].backend == "python"
    assert parse_args(["--no-p4"])[0].backend is None  # the engine's default: native when gcc is there
