"""PacketOut/PacketIn through the CPU port with @controller_header metadata, and the ACL test
program's ternary/range/optional entries, priorities and const entries."""
import json
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from . import acl_program
from .p4rt_client import update, write_errors

ACL = 37375156
PUNT = 41936002
SET_PORT, TO_CPU, DROP = 23466264, 29491018, 25652968


def frame(dst="000000000002", etype="0800", payload=bytes(20)):
    return bytes.fromhex(dst + "0000000000aa" + etype) + payload


@pytest.fixture
def acl(harness):
    client = harness.client()
    client.set_pipeline(acl_program.p4info(), json.dumps(acl_program.bmv2_json()).encode())
    return client


def acl_entry(priority, dst=None, etype=None, port=None, action=SET_PORT, out_port=b"\x03"):
    entry = p4runtime_pb2.TableEntry(table_id=ACL, priority=priority)
    if dst is not None:
        fm = entry.match.add(field_id=1)
        fm.ternary.value, fm.ternary.mask = dst
    if etype is not None:
        fm = entry.match.add(field_id=2)
        fm.range.low, fm.range.high = etype
    if port is not None:
        entry.match.add(field_id=3).optional.value = port
    entry.action.action.action_id = action
    if action == SET_PORT:
        entry.action.action.params.add(param_id=1, value=out_port)
    return entry


def test_packet_in_carries_ingress_port_metadata(harness, acl):
    acl.write(update("INSERT", table_entry=acl_entry(10, etype=(b"\x09\x00", b"\x09\xff"), action=TO_CPU)))
    sent = harness.inject(5, frame(etype="0901"))
    assert sent == []  # nothing on front-panel ports
    message = acl.next_message("packet")
    assert message.packet.payload == frame(etype="0901")
    metadata = {m.metadata_id: m.value for m in message.packet.metadata}
    assert metadata == {1: b"\x05", 2: b"\x00"}


def test_packet_out_goes_to_the_port_in_its_metadata(harness, acl):
    harness.sent.clear()
    acl.packet_out(frame(), metadata=[(1, b"\x02"), (2, b"\x00")])
    deadline = time.time() + 5
    while not harness.sent and time.time() < deadline:
        time.sleep(0.01)
    assert harness.sent == [(2, frame())]


def test_packet_out_errors_come_back_on_the_stream(harness, acl):
    acl.packet_out(frame(), metadata=[(9, b"\x01")])
    error = acl.next_message("error")
    assert error.error.canonical_code == code_pb2.INVALID_ARGUMENT
    assert "metadata id 9" in error.error.message
    acl.packet_out(frame(), metadata=[(1, b"\x04\x00")])  # 1024 does not fit in 9 bits
    error = acl.next_message("error")
    assert error.error.canonical_code == code_pb2.OUT_OF_RANGE


def test_backup_gets_no_packet_in_and_cannot_send_packet_out(harness, acl):
    backup = harness.client(election_id=0)
    acl.write(update("INSERT", table_entry=acl_entry(10, action=TO_CPU)))
    harness.inject(1, frame())
    assert acl.next_message("packet").packet.payload == frame()
    backup.packet_out(frame(), metadata=[(1, b"\x02")])
    error = backup.next_message("error")
    assert error.error.canonical_code == code_pb2.PERMISSION_DENIED
    assert backup.incoming.empty()


def test_ternary_range_optional_and_priorities(harness, acl):
    acl.write(
        update("INSERT", table_entry=acl_entry(1, out_port=b"\x01")),  # catch-all
        update("INSERT", table_entry=acl_entry(5, dst=(b"\x02", b"\xff"), out_port=b"\x02")),
        update("INSERT", table_entry=acl_entry(7, etype=(b"\x08\x00", b"\x08\x06"), out_port=b"\x03")),
        update("INSERT", table_entry=acl_entry(9, port=b"\x04", out_port=b"\x04")),
    )
    assert [p for p, _ in harness.inject(1, frame(dst="000000000077", etype="0900"))] == [1]
    assert [p for p, _ in harness.inject(1, frame(dst="000000000002", etype="0900"))] == [2]
    assert [p for p, _ in harness.inject(1, frame(dst="000000000002", etype="0806"))] == [3]
    assert [p for p, _ in harness.inject(4, frame(dst="000000000002", etype="0806"))] == [4]
    # same key, different priority: a different entry; same key and priority: ALREADY_EXISTS
    acl.write(update("INSERT", table_entry=acl_entry(2, out_port=b"\x01")))
    with pytest.raises(grpc.RpcError) as info:
        acl.write(update("INSERT", table_entry=acl_entry(2, out_port=b"\x01")),
                  update("INSERT", table_entry=acl_entry(0, dst=(b"\x01", b"\x01"))),
                  update("INSERT", table_entry=acl_entry(3, dst=(b"\x03", b"\x01"))),
                  update("INSERT", table_entry=acl_entry(3, etype=(b"\x09", b"\x08"))))
    codes = [(code, message) for _, code, message in write_errors(info.value)]
    assert codes[0][0] == code_pb2.ALREADY_EXISTS
    assert codes[1][0] == code_pb2.INVALID_ARGUMENT and "priority" in codes[1][1]
    assert codes[2][0] == code_pb2.INVALID_ARGUMENT and "mask" in codes[2][1]
    assert codes[3][0] == code_pb2.INVALID_ARGUMENT and "low" in codes[3][1]
    read = acl.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ACL)))
    assert sorted(e.table_entry.priority for e in read) == [1, 2, 5, 7, 9]
    nine = next(e.table_entry for e in read if e.table_entry.priority == 9)
    assert nine == acl_entry(9, port=b"\x04", out_port=b"\x04")
    # read filtered by priority
    read = acl.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ACL, priority=5)))
    assert [e.table_entry for e in read] == [acl_entry(5, dst=(b"\x02", b"\xff"), out_port=b"\x02")]


def test_const_entries_are_readable_and_not_writable(harness, acl):
    read = acl.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=PUNT)))
    (entry,) = [e.table_entry for e in read]
    assert entry.is_const
    assert entry.match[0].exact.value == b"\x88\xcc"
    assert entry.action.action.action_id == TO_CPU
    new = p4runtime_pb2.TableEntry(table_id=PUNT)
    new.match.add(field_id=1).exact.value = b"\x08\x06"
    new.action.action.action_id = TO_CPU
    with pytest.raises(grpc.RpcError) as info:
        acl.write(update("INSERT", table_entry=new))
    ((_, code, message),) = write_errors(info.value)
    assert code == code_pb2.PERMISSION_DENIED and "MyIngress.punt" in message
    # and the const entry works: LLDP goes to the controller
    harness.inject(3, frame(etype="88cc"))
    message = acl.next_message("packet")
    assert {m.metadata_id: m.value for m in message.packet.metadata}[1] == b"\x03"


def test_packet_out_without_cpu_port_is_failed_precondition():
    from p4sim.runtime import P4RuntimeServer
    server = P4RuntimeServer("127.0.0.1:0", 1, cpu_port=None)
    server.start()
    try:
        from p4sim.runtime.errors import P4RuntimeError
        server.device.load_json(acl_program.bmv2_json())
        with pytest.raises(P4RuntimeError) as info:
            server.packet_path.packet_out(p4runtime_pb2.PacketOut(payload=b"x"))
        assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "cpu-port" in info.value.message
    finally:
        server.stop(0)


def test_p4runtime_shell_packet_out_and_packet_in(harness, tmp_path):
    from types import SimpleNamespace

    from .shell_fixture import shell_session
    json_path, p4info_path = acl_program.write_files(tmp_path)
    program = SimpleNamespace(p4info_path=p4info_path, json_path=json_path)
    with shell_session(harness, program) as sh:
        entry = sh.TableEntry("MyIngress.acl")(action="MyIngress.to_cpu")
        entry.match["hdr.ethernet.etype"] = "0x0900..0x09ff"
        entry.priority = 10
        entry.insert()
        sniffer = sh.PacketIn()
        harness.sent.clear()
        sh.PacketOut(frame(), egress_port="3").send()
        deadline = time.time() + 5
        while (3, frame()) not in harness.sent and time.time() < deadline:
            time.sleep(0.01)
        assert harness.sent == [(3, frame())]
        harness.inject(4, frame(etype="0905"))
        got = list(sniffer.sniff(timeout=2))
        assert len(got) == 1
        assert got[0].packet.payload == frame(etype="0905")
        assert {m.metadata_id: m.value for m in got[0].packet.metadata}[1] == b"\x04"


def test_full_table_is_resource_exhausted(harness, acl):
    updates = [update("INSERT", table_entry=acl_entry(i + 1, port=bytes([i]))) for i in range(64)]
    acl.write(*updates)
    with pytest.raises(grpc.RpcError) as info:
        acl.write(update("INSERT", table_entry=acl_entry(100, dst=(b"\x01", b"\x01"))))
    ((_, code, message),) = write_errors(info.value)
    assert code == code_pb2.RESOURCE_EXHAUSTED and "MyIngress.acl" in message and "64" in message
