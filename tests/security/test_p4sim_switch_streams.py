"""p4sim-switch's StreamChannel limits against idle local clients (issue #24, point 2): a stream
that does not arbitrate within the arbitration timeout is closed; 8 idle streams from the
controller's own host cannot keep it from arbitrating (streams that have not arbitrated give
their place); arbitrated streams keep theirs. And the switch listens on loopback by default."""
import pathlib
import subprocess
import sys
import threading
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2_grpc

from p4reduce.mininet_topos.ports import free_port
from p4sim.runtime import P4RuntimeServer
from tests.p4sim.runtime.p4rt_client import RawClient, load_p4info

REPO = pathlib.Path(__file__).resolve().parents[2]
DEVICE = 1


@pytest.fixture
def make_server():
    servers = []

    def make(**kwargs):
        server = P4RuntimeServer("127.0.0.1:0", DEVICE, **kwargs)
        port = server.start()
        servers.append(server)
        return server, f"127.0.0.1:{port}"
    yield make
    for server in servers:
        server.stop(0.2)


class IdleStreams:
    """`n` StreamChannels from one channel that never send anything."""

    def __init__(self, address: str, n: int):
        self.stop = threading.Event()
        self.channel = grpc.insecure_channel(address)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.calls = [stub.StreamChannel(self._nothing()) for _ in range(n)]

    def _nothing(self):
        self.stop.wait(60)
        return
        yield

    def done(self) -> list:
        return [c for c in self.calls if c.done()]

    def close(self) -> None:
        self.stop.set()
        for call in self.calls:
            call.cancel()
        self.channel.close()


def _wait_open(server, n: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while len(server.service.stream_limits.streams) < n:
        assert time.monotonic() < deadline, f"{len(server.service.stream_limits.streams)} streams open, not {n}"
        time.sleep(0.02)


def test_eight_idle_streams_do_not_lock_out_a_client_that_arbitrates(make_server, reference_dir):
    server, address = make_server()
    idle = IdleStreams(address, 8)
    clients = []
    try:
        _wait_open(server, 8)
        controller = RawClient(address, device_id=DEVICE, arbitrate=False)
        clients.append(controller)
        controller.open_stream()
        answer = controller.arbitrate(10)
        assert not isinstance(answer, grpc.RpcError), answer
        assert answer.arbitration.status.code == code_pb2.OK            # primary
        # it took the place of one idle stream (the oldest the server saw), which was told why
        deadline = time.monotonic() + 5
        while not idle.done() and time.monotonic() < deadline:
            time.sleep(0.02)
        (evicted,) = idle.done()
        assert evicted.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert evicted.details() == ("StreamChannel closed: the stream had not sent a MasterArbitrationUpdate "
                                     "and its place was needed")
        # and it can program the switch
        controller.set_pipeline(load_p4info(reference_dir / "p4c-out" / "fwd_basic.p4info.txtpb"),
                                (reference_dir / "p4c-out" / "fwd_basic.json").read_bytes())
        assert server.device.pipeline is not None
    finally:
        idle.close()
        for c in clients:
            c.close()


def test_arbitrated_streams_keep_their_place(make_server):
    server, address = make_server()
    clients = [RawClient(address, device_id=DEVICE, election_id=i + 1) for i in range(8)]
    try:
        ninth = RawClient(address, device_id=DEVICE, arbitrate=False)
        clients.append(ninth)
        ninth.open_stream()
        answer = ninth.arbitrate(20)
        assert isinstance(answer, grpc.RpcError) and answer.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "already has 8 open streams" in answer.details()
        assert server.arbitration.primaries()[0].election_id == 8
    finally:
        for c in clients:
            c.close()


def test_a_stream_that_does_not_arbitrate_is_closed_after_the_timeout(make_server):
    server, address = make_server(arbitration_timeout=0.5)
    idle = IdleStreams(address, 3)
    arbitrated = RawClient(address, device_id=DEVICE, election_id=5)
    try:
        t0 = time.monotonic()
        while len(idle.done()) < 3 and time.monotonic() - t0 < 5:
            time.sleep(0.02)
        assert len(idle.done()) == 3 and time.monotonic() - t0 < 3
        for call in idle.calls:
            assert call.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert call.details() == "StreamChannel: no MasterArbitrationUpdate within 0.5 s of opening the stream"
        # the arbitrated stream outlives the timeout and stays primary
        time.sleep(0.7)
        assert arbitrated.incoming.empty()
        assert server.arbitration.primaries()[0].election_id == 5
        assert len(server.service.stream_limits.streams) == 1
    finally:
        idle.close()
        arbitrated.close()


def test_the_default_arbitration_timeout_is_a_few_seconds(make_server):
    server, _ = make_server()
    assert server.service.arbitration_timeout == 5.0


def test_p4sim_switch_listens_on_loopback_unless_told(tmp_path):
    """gRPC's default address is 127.0.0.1:9559 (simple_switch_grpc: 0.0.0.0:9559), and Thrift binds
    127.0.0.1 unless --thrift-ip says otherwise (BMv2: every interface)."""
    from p4sim.simple_switch import parse_args
    options, target = parse_args(["--no-p4"])
    assert target.grpc_server_addr == "127.0.0.1:9559" and options.thrift_ip == "127.0.0.1"
    assert P4RuntimeServer().address == "127.0.0.1:9559"
    thrift_port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "p4sim.simple_switch", "--no-p4", "--backend", "python",
                             "--thrift-port", str(thrift_port), "--", "--grpc-server-addr", f"127.0.0.1:{free_port()}",
                             "--arbitration-timeout", "2"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("Server listening on")
        listening = _listening_addresses(thrift_port)
        assert listening == {"127.0.0.1"}, listening
    finally:
        proc.terminate()
        proc.communicate(timeout=15)
    assert proc.returncode == 0


def _listening_addresses(port: int) -> set[str]:
    """Local IPv4 addresses with a socket listening on `port` (from /proc/net/tcp)."""
    out = set()
    for line in pathlib.Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            out.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
    return out
