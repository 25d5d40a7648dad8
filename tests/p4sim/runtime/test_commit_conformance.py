"""SetForwardingPipelineConfig COMMIT as the P4Runtime spec has it (issue #24, point 4): COMMIT
realizes the config saved by a previous VERIFY_AND_SAVE; a COMMIT that carries a config is
INVALID_ARGUMENT (saved or not, and nothing changes), one with nothing saved is NOT_FOUND."""
import grpc
import pytest
from p4.v1 import p4runtime_pb2

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def _p4info(client):
    return client.stub.GetForwardingPipelineConfig(
        Get(device_id=client.device_id, response_type=Get.P4INFO_AND_COOKIE)).config


def test_commit_with_an_inline_config_and_nothing_saved_is_invalid_argument(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(ref.p4info, ref.device_config, action=Set.COMMIT)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == ("SetForwardingPipelineConfig COMMIT: config must not be provided "
                                    "(COMMIT realizes the config saved by VERIFY_AND_SAVE)")
    assert harness.server.device.engine is None and harness.server.device.pipeline is None


def test_commit_with_an_inline_config_does_not_replace_the_saved_one(harness, reference):
    saved, other = reference("agg_mini"), reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(saved.p4info, saved.device_config, action=Set.VERIFY_AND_SAVE, cookie=7)
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(other.p4info, other.device_config, action=Set.COMMIT, cookie=8)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert harness.server.device.engine is None
    # a config with only a cookie (or an empty one) is a config too
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(None, None, action=Set.COMMIT, cookie=9)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # the saved config is still there, and a COMMIT without a config realizes it
    client.set_pipeline(None, None, action=Set.COMMIT)
    config = _p4info(client)
    assert config.p4info == saved.p4info and config.cookie.cookie == 7


def test_commit_with_nothing_saved_is_not_found(harness, reference):
    client = harness.client()
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(None, None, action=Set.COMMIT)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert info.value.details() == "SetForwardingPipelineConfig COMMIT: no config was saved by VERIFY_AND_SAVE"
    # a saved config is realized once: a second COMMIT finds nothing
    ref = reference("fwd_basic")
    client.set_pipeline(ref.p4info, ref.device_config, action=Set.VERIFY_AND_SAVE)
    client.set_pipeline(None, None, action=Set.COMMIT)
    with pytest.raises(grpc.RpcError) as info:
        client.set_pipeline(None, None, action=Set.COMMIT)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
