"""The controller's side of an authenticated P4Runtime channel (issue #24, point 2): `controller
serve --tls-ca --tls-cert --tls-key` against p4sim-switch started with simple_switch_grpc's TLS
options and client authentication, with the certificates `make run` makes (mininet_topos/certs.py,
0600 files); a client without the controller's key cannot arbitrate, read or write; the
inspection tools connect with what the topology description names."""
import json
import stat
import subprocess
import sys
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4reduce.controller.connection import SwitchConnection, TlsClient
from p4reduce.controller.errors import SwitchError
from p4reduce.mininet_topos.certs import make_run_certificates
from p4reduce.mininet_topos.ports import free_port
from p4reduce.mininet_topos.target import SwitchCommand, find_target
from p4reduce.p4src.build import ProgramBuildError, compile_program
from p4reduce.protocol.job_api import JobApiClient, JobApiError


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    try:
        built = compile_program(tmp_path_factory.mktemp("p4reduce-build"))
    except ProgramBuildError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile:\n{str(e)[-3000:]}")
    return built.p4info_path, built.json_path


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    try:
        return make_run_certificates(tmp_path_factory.mktemp("run"))
    except RuntimeError as e:
        pytest.skip(str(e))


def test_run_certificates_are_private(certs):
    directory = certs.ca.parent
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = sorted(p.name for p in directory.iterdir())
    assert files == ["ca.pem", "controller.key", "controller.pem", "switch.key", "switch.pem"]   # no CA key
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in directory.iterdir())
    text = subprocess.run(["openssl", "x509", "-in", str(certs.switch_cert), "-noout", "-ext", "subjectAltName"],
                          capture_output=True, text=True).stdout
    assert "IP Address:127.0.0.1" in text


def test_switch_command_carries_the_tls_options(certs):
    argv = SwitchCommand(ports=[], device_id=0, grpc_addr="127.0.0.1:1", thrift_port=2, log_file="x",
                         extra=certs.switch_args()).argv(["p4sim-switch"])
    after = argv[argv.index("--") + 1:]
    for flag in ("--grpc-server-ssl", "--grpc-server-with-client-auth"):
        assert flag in after
    assert after[after.index("--grpc-server-cacert") + 1] == str(certs.ca)


@pytest.fixture
def tls_switch(certs, tmp_path):
    port = free_port()
    argv = SwitchCommand(ports=[], device_id=0, grpc_addr=f"127.0.0.1:{port}", thrift_port=free_port(),
                         log_file=str(tmp_path / "s1.log"), cpu_port=None,
                         extra=certs.switch_args()).argv(find_target("p4sim"))
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def _wait_health(api, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return JobApiClient(api, timeout=1).health()
        except JobApiError:
            assert proc.poll() is None, proc.communicate(timeout=5)[0][-3000:]
            assert time.monotonic() < deadline, "the controller did not answer"
            time.sleep(0.2)


def test_serve_over_tls_and_nobody_else_gets_in(tls_switch, certs, build, tmp_path):
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps({
        "switches": [{"name": "s1", "grpc_addr": tls_switch, "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe",
                      "aggregate": True}],
        "hosts": [{"name": "h1", "ip": "10.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1}],
        "p4runtime_tls": certs.describe()}))
    api = f"127.0.0.1:{free_port()}"
    p4info, bmv2 = build
    base = [sys.executable, "-m", "p4reduce.controller", "serve", "--topology", str(topo), "--p4info", str(p4info),
            "--bmv2-json", str(bmv2), "--api-addr", api, "--state-file", "", "--wait", "20"]
    proc = subprocess.Popen(base + certs.controller_args(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        health = _wait_health(api, proc)
        assert health["switches"][0]["primary"] is True
        JobApiClient(api).create("j", 1)
        # a local process without the controller's key: in clear, with no certificate, with its own CA's
        stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(tls_switch))
        with pytest.raises(grpc.RpcError):
            stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        no_cert = TlsClient(str(certs.ca))
        for tls in (None, no_cert):
            conn = SwitchConnection(tls_switch, 0, 99, tls=tls)
            with pytest.raises(SwitchError):
                conn.connect(3)
            conn.close()
        # the inspection tools read the description's p4runtime_tls, and read the job's entry
        out = subprocess.run([sys.executable, "-m", "p4reduce.controller", "jobs", "--topology", str(topo),
                              "--json"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert [j["name"] for j in json.loads(out.stdout)] == ["j"]
        assert _wait_health(api, proc)["switches"][0]["primary"] is True     # nobody displaced it
    finally:
        proc.terminate()
        log, _ = proc.communicate(timeout=30)
    assert "P4Runtime over TLS" in log and "Traceback" not in log, log[-3000:]


def test_serve_without_the_client_key_is_refused(tls_switch, certs, build, tmp_path):
    """The controller's own options: a CA alone is not enough for a switch that wants client
    certificates; the error names the switch and says so in one line."""
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps({"switches": {"s1": {"grpc_addr": tls_switch, "ip": "10.0.0.254",
                                                    "mac": "00:00:00:00:01:fe"}}, "hosts": {}}))
    p4info, bmv2 = build
    out = subprocess.run([sys.executable, "-m", "p4reduce.controller", "serve", "--topology", str(topo),
                          "--p4info", str(p4info), "--bmv2-json", str(bmv2), "--api-addr", f"127.0.0.1:{free_port()}",
                          "--state-file", "", "--wait", "3", "--tls-ca", str(certs.ca)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "s1" in out.stderr.splitlines()[-1] and "TLS handshake failed" in out.stderr, out.stderr
    out = subprocess.run([sys.executable, "-m", "p4reduce.controller", "serve", "--topology", str(topo),
                          "--tls-cert", str(certs.client_cert)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "--tls-ca" in out.stderr, out.stderr
