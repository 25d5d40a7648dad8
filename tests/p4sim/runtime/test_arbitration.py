"""Client arbitration: primary/backup by election id, announcements, PERMISSION_DENIED."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .p4rt_client import update


def l2_insert(ref, dst):
    table = ref.p4info.tables[0]  # Ing.l2
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    entry.match.add(field_id=1).exact.value = dst
    entry.action.action.action_id = table.action_refs[0].id
    entry.action.action.params.add(param_id=1, value=b"\x02")
    return update("INSERT", table_entry=entry)


def election(message):
    arb = message.arbitration
    return (arb.election_id.high << 64) | arb.election_id.low


def test_first_client_is_primary_second_lower_is_backup(harness, reference):
    ref = reference("fwd_basic")
    primary = harness.client(election_id=10)
    backup = harness.client(election_id=5)
    # the backup's answer names the primary's election id
    # (the primary got OK when it arbitrated; RawClient keeps that reply out of the queue)
    primary.set_pipeline(ref.p4info, ref.device_config)
    primary.write(l2_insert(ref, b"\x01"))
    with pytest.raises(grpc.RpcError) as info:
        backup.write(l2_insert(ref, b"\x02"))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as info:
        backup.set_pipeline(ref.p4info, ref.device_config)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # backups may read
    assert len(backup.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 1


def test_arbitration_replies_and_takeover(harness, reference):
    first = harness.client(arbitrate=False)
    first.open_stream()
    reply = first.arbitrate(10)
    assert reply.arbitration.status.code == code_pb2.OK and election(reply) == 10
    second = harness.client(arbitrate=False)
    second.open_stream()
    reply = second.arbitrate(5)
    assert reply.arbitration.status.code == code_pb2.ALREADY_EXISTS and election(reply) == 10
    # a higher election id takes over; everybody hears about it
    third = harness.client(arbitrate=False)
    third.open_stream()
    reply = third.arbitrate(20)
    assert reply.arbitration.status.code == code_pb2.OK and election(reply) == 20
    demoted = first.next_message("arbitration")
    assert demoted.arbitration.status.code == code_pb2.ALREADY_EXISTS and election(demoted) == 20
    ref = reference("fwd_basic")
    with pytest.raises(grpc.RpcError) as info:
        first.set_pipeline(ref.p4info, ref.device_config)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    third.set_pipeline(ref.p4info, ref.device_config)
    # the primary leaves: the highest remaining client becomes primary
    third.close()
    promoted = first.next_message("arbitration")
    assert promoted.arbitration.status.code == code_pb2.OK and election(promoted) == 10
    first.write(l2_insert(ref, b"\x03"))


def test_write_without_any_stream_is_permission_denied(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client(arbitrate=False, election_id=1)
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(ref.p4info, ref.device_config)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "primary" in info.value.details()


def test_duplicate_election_id_and_wrong_device_end_the_stream(harness):
    harness.client(election_id=7)
    clash = harness.client(arbitrate=False)
    clash.open_stream()
    result = clash.arbitrate(7)
    assert isinstance(result, grpc.RpcError)
    assert result.code() == grpc.StatusCode.INVALID_ARGUMENT
    stranger = harness.client(arbitrate=False)
    stranger.open_stream()
    result = stranger.arbitrate(9, device_id=42)
    assert isinstance(result, grpc.RpcError)
    assert result.code() == grpc.StatusCode.NOT_FOUND


def test_p4runtime_shell_backup_session_cannot_write(harness, reference):
    """p4runtime-shell with a lower election id than a connected primary is read-only."""
    import p4runtime_sh.shell as sh
    ref = reference("fwd_basic")
    primary = harness.client(election_id=100)
    primary.set_pipeline(ref.p4info, ref.device_config)
    sh.setup(device_id=primary.device_id, grpc_addr=harness.address, election_id=(0, 3),
             verbose=False)
    try:
        entry = sh.TableEntry("Ing.l2")(action="Ing.l2_forward")
        entry.match["hdr.eth.dst"] = "00:00:00:00:00:09"
        entry.action["port"] = "1"
        with pytest.raises(grpc.RpcError) as info:
            entry.insert()
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert list(sh.TableEntry("Ing.l2").read()) == []
    finally:
        sh.teardown()
