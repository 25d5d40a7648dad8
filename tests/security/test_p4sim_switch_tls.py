"""p4sim-switch's P4Runtime server over TLS with simple_switch_grpc's options (issue #24, point
2): with --grpc-server-with-client-auth, a client without a certificate signed by the CA cannot
open a stream, read or write; the controller's certificate can. Certificates are made at test
time with the openssl command line (tests/security/certs.py)."""
import pathlib
import subprocess
import sys
import threading

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4reduce.mininet_topos.ports import free_port
from p4sim.runtime import P4RuntimeServer
from p4sim.runtime.tls import TlsConfigError, tls_options
from tests.p4sim.runtime.p4rt_client import load_p4info
from tests.security.certs import make_certificates

REPO = pathlib.Path(__file__).resolve().parents[2]
DEVICE = 1


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def fwd_basic(reference_dir):
    return (load_p4info(reference_dir / "p4c-out" / "fwd_basic.p4info.txtpb"),
            (reference_dir / "p4c-out" / "fwd_basic.json").read_bytes())


def credentials(certs, who: str | None, root: str = "ca") -> grpc.ChannelCredentials:
    """Client credentials trusting `root`; with the certificate `who` (None: no certificate)."""
    root_pem = (certs / f"{root}.pem").read_bytes()
    if who is None:
        return grpc.ssl_channel_credentials(root_certificates=root_pem)
    return grpc.ssl_channel_credentials(root_certificates=root_pem,
                                        private_key=(certs / f"{who}.key").read_bytes(),
                                        certificate_chain=(certs / f"{who}.pem").read_bytes())


@pytest.fixture
def tls_switch(certs):
    tls, warnings = tls_options(True, str(certs / "server.pem"), str(certs / "server.key"),
                                str(certs / "ca.pem"), True)
    assert warnings == []
    server = P4RuntimeServer("127.0.0.1:0", DEVICE, tls=tls)
    port = server.start()
    yield server, f"127.0.0.1:{port}"
    server.stop(0.2)


def _arbitration(election: int) -> p4runtime_pb2.StreamMessageRequest:
    request = p4runtime_pb2.StreamMessageRequest()
    request.arbitration.device_id = DEVICE
    request.arbitration.election_id.low = election
    return request


def _calls(stub, fwd_basic):
    """Every kind of access a client could try: (name, call)."""
    p4info, device_config = fwd_basic
    config = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=DEVICE, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    config.election_id.low = 99
    config.config.p4info.CopyFrom(p4info)
    config.config.p4_device_config = device_config
    write = p4runtime_pb2.WriteRequest(device_id=DEVICE)
    write.election_id.low = 99
    entity = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())
    return [
        ("Capabilities", lambda: stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)),
        ("StreamChannel", lambda: list(stub.StreamChannel(iter([_arbitration(99)]), timeout=5))),
        ("SetForwardingPipelineConfig", lambda: stub.SetForwardingPipelineConfig(config, timeout=5)),
        ("Write", lambda: stub.Write(write, timeout=5)),
        ("Read", lambda: list(stub.Read(p4runtime_pb2.ReadRequest(device_id=DEVICE, entities=[entity]),
                                        timeout=5))),
    ]


@pytest.mark.parametrize("who", ["no certificate", "rogue certificate", "plaintext"])
def test_a_client_without_the_cas_certificate_can_do_nothing(certs, tls_switch, fwd_basic, who):
    server, address = tls_switch
    if who == "plaintext":
        channel = grpc.insecure_channel(address)
    else:
        channel = grpc.secure_channel(address, credentials(certs, None if who == "no certificate" else "rogue"))
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    try:
        for name, call in _calls(stub, fwd_basic):
            with pytest.raises(grpc.RpcError) as info:
                call()
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE, name
    finally:
        channel.close()
    assert server.device.pipeline is None and server.arbitration.primaries() == []


def test_the_controllers_certificate_opens_a_stream_writes_and_reads(certs, tls_switch, fwd_basic):
    server, address = tls_switch
    channel = grpc.secure_channel(address, credentials(certs, "client"))
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    try:
        assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5).p4runtime_api_version
        done = threading.Event()
        stream = stub.StreamChannel(_until(done, [_arbitration(10)]))
        answer = next(stream)
        assert answer.arbitration.status.code == code_pb2.OK
        p4info, device_config = fwd_basic
        config = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=DEVICE, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        config.election_id.low = 10
        config.config.p4info.CopyFrom(p4info)
        config.config.p4_device_config = device_config
        stub.SetForwardingPipelineConfig(config, timeout=10)
        table = p4info.tables[0]
        entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
        entry.match.add(field_id=1).exact.value = b"\x02"
        entry.action.action.action_id = table.action_refs[0].id
        entry.action.action.params.add(param_id=1, value=b"\x02")
        write = p4runtime_pb2.WriteRequest(device_id=DEVICE)
        write.election_id.low = 10
        write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(entry)
        stub.Write(write, timeout=5)
        read = list(stub.Read(p4runtime_pb2.ReadRequest(device_id=DEVICE, entities=[
            p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=table.preamble.id))]), timeout=5))
        assert [e.table_entry for r in read for e in r.entities] == [entry]
        stream.cancel()
    finally:
        done.set()
        channel.close()


def _until(done, first):
    """A request iterator: the given requests, then nothing until `done` is set."""
    yield from first
    done.wait(30)


def test_tls_options_are_checked_as_simple_switch_grpc_does(certs, tmp_path):
    cert, key, ca = str(certs / "server.pem"), str(certs / "server.key"), str(certs / "ca.pem")
    assert tls_options(False, cert, key, ca, False)[0] is None
    assert tls_options(False, cert, key, ca, True)[1] == [
        "TLS is off (no --grpc-server-ssl): the given certificate and key files are ignored",
        "TLS is off (no --grpc-server-ssl): --grpc-server-with-client-auth has no effect"]
    cases = [
        ((True, None, key, ca, False), "--grpc-server-ssl needs --grpc-server-cert (the server's certificate)"),
        ((True, cert, None, ca, False), "--grpc-server-ssl needs --grpc-server-key (the server's private key)"),
        ((True, cert, key, None, True), "--grpc-server-with-client-auth needs --grpc-server-cacert (the CA "
                                        "that signs client certificates)"),
        ((True, str(tmp_path / "nope.pem"), key, ca, False),
         f"--grpc-server-cert {tmp_path / 'nope.pem'}: cannot open (No such file or directory)"),
        ((True, cert, cert, ca, False), f"--grpc-server-key {cert}: no PEM PRIVATE KEY in the file"),
        ((True, cert, key, str(tmp_path), False), f"--grpc-server-cacert {tmp_path}: not a regular file"),
    ]
    for args, message in cases:
        with pytest.raises(TlsConfigError) as info:
            tls_options(*args)
        assert str(info.value) == message


def _switch(*target_args: str, timeout: float = 20.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "p4sim.simple_switch", "--no-p4", "--backend", "python",
                             "--thrift-port", str(free_port()), "--", *target_args],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_p4sim_switch_takes_simple_switch_grpcs_tls_options(certs):
    port = free_port()
    proc = _switch("--grpc-server-addr", f"127.0.0.1:{port}", "--grpc-server-ssl",
                   "--grpc-server-cert", str(certs / "server.pem"), "--grpc-server-key", str(certs / "server.key"),
                   "--grpc-server-cacert", str(certs / "ca.pem"), "--grpc-server-with-client-auth")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"Server listening on 127.0.0.1:{port}"
        good = grpc.secure_channel(f"127.0.0.1:{port}", credentials(certs, "client"))
        assert p4runtime_pb2_grpc.P4RuntimeStub(good).Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
        good.close()
        for creds in (credentials(certs, None), credentials(certs, "rogue")):
            bad = grpc.secure_channel(f"127.0.0.1:{port}", creds)
            with pytest.raises(grpc.RpcError) as info:
                p4runtime_pb2_grpc.P4RuntimeStub(bad).Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            bad.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0 and "Traceback" not in err


def test_p4sim_switch_refuses_incomplete_tls_options(certs):
    proc = _switch("--grpc-server-addr", f"127.0.0.1:{free_port()}", "--grpc-server-ssl",
                   "--grpc-server-cert", str(certs / "server.pem"))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.splitlines()[0] == ("p4sim-switch: error: --grpc-server-ssl needs --grpc-server-key "
                                   "(the server's private key)")
    proc = _switch("--grpc-server-addr", f"127.0.0.1:{free_port()}", "--grpc-server-ssl",
                   "--grpc-server-cert", str(certs / "server.pem"), "--grpc-server-key", str(certs / "server.key"),
                   "--grpc-server-with-client-auth")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "needs --grpc-server-cacert" in err.splitlines()[0]
