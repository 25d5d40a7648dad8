"""p4sim-switch on real veth interfaces: hosts in network namespaces created by the test, the
pipeline pushed over gRPC, real frames forwarded, multicast, sent to and from the controller --
with the native packet path (C port loop, generated C) and with the Python one."""
import json
import signal

import pytest
from p4.v1 import p4runtime_pb2
from runtime import acl_program
from runtime.p4rt_client import RawClient, load_p4info, update

from p4sim.ports import read_pcap

from .veth_topology import VethSwitch

pytestmark = pytest.mark.root

MARK = b"p4rt-veth-test"


@pytest.fixture(params=["native", "python"])
def topo(tmp_path, request):
    topology = VethSwitch(3, tmp_path, extra_args=("--log-console", "--backend", request.param))
    topology.backend = request.param
    yield topology
    topology.close()


@pytest.fixture
def client(topo):
    client = RawClient(topo.address, device_id=0, election_id=1)
    yield client
    client.close()


def push(client, root, name):
    client.set_pipeline(load_p4info(root / "p4c-out" / f"{name}.p4info.txtpb"),
                        (root / "p4c-out" / f"{name}.json").read_bytes())


def test_l2_forwarding_trace_pcap_and_clean_shutdown(topo, client, reference_dir):
    push(client, reference_dir, "fwd_basic")
    p4info = load_p4info(reference_dir / "p4c-out" / "fwd_basic.p4info.txtpb")
    table = p4info.tables[0]  # Ing.l2: hdr.eth.dst exact -> l2_forward(port)
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    entry.match.add(field_id=1).exact.value = b"\x02"
    entry.action.action.action_id = table.action_refs[0].id
    entry.action.action.params.add(param_id=1, value=b"\x02")
    client.write(update("INSERT", table_entry=entry))
    frame = bytes.fromhex("000000000002" "000000000001" "88b5") + MARK + bytes(30)
    at_h2 = topo.capture(2, MARK)
    at_h3 = topo.capture(3, MARK, seconds=2)
    topo.send(1, frame)
    assert topo.frames(at_h2) == [frame]
    assert topo.frames(at_h3) == []
    # clean shutdown on SIGTERM: exit 0, pcaps flushed, BMv2-like trace on the console
    assert topo.stop(signal.SIGTERM) == 0
    assert read_pcap(str(topo.pcap_dir / f"{topo.switch_ifaces[0]}_in.pcap")).count(frame) == 1
    assert read_pcap(str(topo.pcap_dir / f"{topo.switch_ifaces[1]}_out.pcap")).count(frame) == 1
    assert read_pcap(str(topo.pcap_dir / f"{topo.switch_ifaces[2]}_out.pcap")) == []
    log = topo.log_path.read_text()
    engine = "native backend (generated C)" if topo.backend == "native" else "Python engine"
    assert f"packets run on the {engine}" in log
    assert "Processing packet received on port 1" in log
    assert "Table 'Ing.l2': hit" in log
    assert "Traceback" not in log


def test_multicast_with_per_replica_rewrite(topo, client, reference_dir):
    push(client, reference_dir, "agg_mini")
    case = json.loads((reference_dir / "programs" / "agg_mini.case.json").read_text())
    expected = json.loads((reference_dir / "expected" / "agg_mini.json").read_text())
    p4info = load_p4info(reference_dir / "p4c-out" / "agg_mini.p4info.txtpb")
    rewrite = next(t for t in p4info.tables if t.preamble.name == "Egr.rewrite")
    to = next(a for a in p4info.actions if a.preamble.name == "Egr.to")
    updates = []
    for spec in case["entries"]:
        entry = p4runtime_pb2.TableEntry(table_id=rewrite.preamble.id)
        entry.match.add(field_id=1).exact.value = bytes([int(spec["match"]["sm.egress_rid"])])
        entry.action.action.action_id = to.preamble.id
        mac = bytes.fromhex(spec["params"]["mac"].replace(":", ""))
        entry.action.action.params.add(param_id=1, value=mac)
        updates.append(update("INSERT", table_entry=entry))
    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=1)
    for port, instance in case["multicast"][0]["replicas"]:
        group.replicas.add(egress_port=port, instance=instance)
    updates.append(update("INSERT", packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
        multicast_group_entry=group)))
    client.write(*updates)
    # packets 0..3 of the case: three workers (one retransmission) complete slot 0
    result_marker = bytes.fromhex("88bc00020103")
    captures = {host: topo.capture(host, result_marker, seconds=4, limit=1) for host in (1, 2, 3)}
    for port, packet in case["packets"][:4]:
        topo.send(port, bytes.fromhex(packet))
    want = {port: bytes.fromhex(data) for port, data in expected["packets"][3]["out"]}
    for host, capture in captures.items():
        assert topo.frames(capture) == [want[host]], f"host {host}"


def test_packet_in_and_packet_out(topo, client):
    client.set_pipeline(acl_program.p4info(), json.dumps(acl_program.bmv2_json()).encode())
    to_cpu = p4runtime_pb2.TableEntry(table_id=37375156, priority=10)
    fm = to_cpu.match.add(field_id=2)
    fm.range.low, fm.range.high = b"\x09\x00", b"\x09\xff"
    to_cpu.action.action.action_id = 29491018
    client.write(update("INSERT", table_entry=to_cpu))
    punt = bytes.fromhex("ffffffffffff" "000000000003" "0901") + MARK + bytes(30)
    topo.send(3, punt)
    message = client.next_message("packet", timeout=5)
    assert message.packet.payload == punt
    assert {m.metadata_id: m.value for m in message.packet.metadata}[1] == b"\x03"
    out = bytes.fromhex("000000000001" "0000000000cc" "88b5") + MARK + b"-out" + bytes(30)
    at_h1 = topo.capture(1, MARK + b"-out")
    client.packet_out(out, metadata=[(1, b"\x01"), (2, b"\x00")])
    assert topo.frames(at_h1) == [out]


def test_vlan_tags_survive_veth_offload(topo, client, reference_dir):
    """The kernel hands AF_PACKET readers VLAN tags out of band; the switch puts them back, so
    the parser sees the tag (and it is on the wire again on output)."""
    push(client, reference_dir, "parse_mix")
    case = json.loads((reference_dir / "programs" / "parse_mix.case.json").read_text())
    expected = json.loads((reference_dir / "expected" / "parse_mix.json").read_text())
    port, packet = case["packets"][5]
    packet = bytes.fromhex(packet)
    assert packet[12:14] == b"\x81\x00"
    (out_port, out), = expected["packets"][5]["out"]
    out = bytes.fromhex(out)
    tagged = out[:12] + packet[12:16] + out[12:]  # the reference capture lost the tag
    capture = topo.capture(out_port, packet[:12], limit=1)
    topo.send(port, packet)
    assert topo.frames(capture) == [tagged]
