"""SetForwardingPipelineConfig / GetForwardingPipelineConfig / Capabilities over raw protos."""
import grpc
import pytest
from p4.v1 import p4runtime_pb2

from .p4rt_client import update

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def get_config(client, response_type):
    return client.stub.GetForwardingPipelineConfig(
        Get(device_id=client.device_id, response_type=response_type)).config


def test_capabilities_reports_api_version(harness):
    client = harness.client(arbitrate=False)
    response = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert response.p4runtime_api_version.startswith("1.")


def test_reads_and_writes_before_a_pipeline_fail_with_failed_precondition(harness, reference):
    client = harness.client()
    with pytest.raises(grpc.RpcError) as info:
        get_config(client, Get.ALL)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as info:
        client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    ref = reference("fwd_basic")
    entry = p4runtime_pb2.TableEntry(table_id=ref.p4info.tables[0].preamble.id)
    with pytest.raises(grpc.RpcError) as info:
        client.write(update("INSERT", table_entry=entry))
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_verify_and_commit_then_get_each_response_type(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config, cookie=0xC0FFEE)
    full = get_config(client, Get.ALL)
    assert full.p4info == ref.p4info
    assert full.p4_device_config == ref.device_config
    assert full.cookie.cookie == 0xC0FFEE
    cookie_only = get_config(client, Get.COOKIE_ONLY)
    assert cookie_only.cookie.cookie == 0xC0FFEE
    assert not cookie_only.HasField("p4info") and cookie_only.p4_device_config == b""
    p4info_only = get_config(client, Get.P4INFO_AND_COOKIE)
    assert p4info_only.p4info == ref.p4info and p4info_only.p4_device_config == b""
    device_only = get_config(client, Get.DEVICE_CONFIG_AND_COOKIE)
    assert device_only.p4_device_config == ref.device_config and not device_only.HasField("p4info")


def test_verify_does_not_commit(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config, action=Set.VERIFY)
    with pytest.raises(grpc.RpcError) as info:
        get_config(client, Get.ALL)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert harness.server.device.engine is None


def test_commit_without_saved_config_fails_and_verify_and_save_then_commit_works(harness, reference):
    ref = reference("agg_mini")
    client = harness.client()
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(None, None, action=Set.COMMIT)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND        # the P4Runtime spec's code
    client.set_pipeline(ref.p4info, ref.device_config, action=Set.VERIFY_AND_SAVE)
    assert harness.server.device.engine is None
    client.set_pipeline(None, None, action=Set.COMMIT)
    assert get_config(client, Get.P4INFO_AND_COOKIE).p4info == ref.p4info


def test_bad_device_config_is_invalid_argument_naming_the_problem(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(ref.p4info, b"{not json")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "p4_device_config" in info.value.details()


def test_p4info_object_missing_from_json_is_invalid_argument(harness, reference):
    ref = reference("fwd_basic")
    other = reference("agg_mini")
    client = harness.client()
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(other.p4info, ref.device_config)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Egr.rewrite" in info.value.details() or "Ing." in info.value.details()


def test_reconcile_and_commit_keeps_entries(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    table = ref.p4info.tables[0]  # Ing.l2, exact on hdr.eth.dst
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    entry.match.add(field_id=1).exact.value = b"\x02"
    entry.action.action.action_id = table.action_refs[0].id
    entry.action.action.params.add(param_id=1, value=b"\x02")
    client.write(update("INSERT", table_entry=entry))
    old_engine = harness.server.device.engine
    client.set_pipeline(ref.p4info, ref.device_config, action=Set.RECONCILE_AND_COMMIT)
    assert harness.server.device.engine is not old_engine
    read = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=table.preamble.id)))
    assert [e.table_entry for e in read] == [entry]
    # and the new engine forwards with it: dst 00:00:00:00:00:02 goes to port 2
    frame = bytes.fromhex("000000000002" "000000000099" "0800") + bytes(30)
    assert [port for port, _ in harness.inject(1, frame)] == [2]
    # a plain VERIFY_AND_COMMIT starts from an empty state
    client.set_pipeline(ref.p4info, ref.device_config)
    assert client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=table.preamble.id))) == []


def test_wrong_device_id_is_not_found(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.device_id = 99
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(ref.p4info, ref.device_config)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_reconcile_keeps_register_and_counter_state(harness, reference):
    ref = reference("agg_mini")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    engine = harness.server.device.engine
    engine.register_write("Ing.r3", 5, 0xFFFFFFF0)
    client.set_pipeline(ref.p4info, ref.device_config, action=Set.RECONCILE_AND_COMMIT)
    assert harness.server.device.engine is not engine
    assert harness.server.device.engine.register_read("Ing.r3", 5) == 0xFFFFFFF0
    fwd = reference("fwd_basic")
    client.set_pipeline(fwd.p4info, fwd.device_config)
    non_ip = bytes.fromhex("ffffffffffff000000000000080600000000000000000000000000000000000000000000000000000000")
    harness.inject(1, non_ip)
    client.set_pipeline(fwd.p4info, fwd.device_config, action=Set.RECONCILE_AND_COMMIT)
    assert harness.server.device.engine.counter_read("Ing.drops", 0)[0] == 1
    client.set_pipeline(fwd.p4info, fwd.device_config)  # a plain commit starts afresh
    assert harness.server.device.engine.counter_read("Ing.drops", 0)[0] == 0
