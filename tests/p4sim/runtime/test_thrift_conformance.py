"""The Thrift register service checks context ids and stores values as BMv2's simple_switch does
(issue #24, point 4; behavioral-model: Switch::register_write looks its context up with a checked
access, Register::export_bytes masks the value with 2^width - 1)."""
import logging

import pytest
from bm_runtime.standard import Standard
from bm_runtime.standard.ttypes import BmCounterValue, InvalidRegisterOperation, RegisterOperationErrorCode
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport

from p4reduce.mininet_topos.ports import free_port
from p4sim.runtime.thrift_service import ThriftServer


@pytest.fixture
def thrift(harness, reference):
    ref = reference("agg_mini")         # registers Ing.cnt: 16 x bit<8>, Ing.r0..r7: 16 x bit<32>
    harness.client().set_pipeline(ref.p4info, ref.device_config)
    server = ThriftServer(harness.server.device, free_port(), host="127.0.0.1")
    server.start()
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", server.port))
    protocol = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport), "standard")
    client = Standard.Client(protocol)
    transport.open()
    yield client
    transport.close()
    server.stop()


@pytest.mark.parametrize("cxt_id", [1, 5, -1, 2**31 - 1])
def test_an_unknown_context_id_is_an_application_error_and_changes_nothing(harness, thrift, cxt_id, caplog):
    engine = harness.server.device.engine
    calls = [
        lambda: thrift.bm_register_write(cxt_id, "Ing.cnt", 3, 7),
        lambda: thrift.bm_register_write_range(cxt_id, "Ing.cnt", 0, 4, 9),
        lambda: thrift.bm_register_reset(cxt_id, "Ing.r0"),
        lambda: thrift.bm_register_read(cxt_id, "Ing.cnt", 3),
        lambda: thrift.bm_register_read_all(cxt_id, "Ing.cnt"),
        lambda: thrift.bm_counter_read(cxt_id, "Ing.nope", 0),
        lambda: thrift.bm_counter_write(cxt_id, "Ing.nope", 0, BmCounterValue(bytes=1, packets=1)),
        lambda: thrift.bm_counter_reset_all(cxt_id, "Ing.nope"),
        lambda: thrift.bm_mt_get_num_entries(cxt_id, "Ing.nope"),
    ]
    engine.register_write("Ing.r0", 2, 1234)
    with caplog.at_level(logging.INFO):
        for call in calls:
            with pytest.raises(TApplicationException) as info:
                call()
            assert info.value.type == TApplicationException.UNKNOWN
            assert info.value.message == f"unknown context id {cxt_id} (this switch has one context, 0)"
    assert engine.register_read("Ing.cnt") == [0] * 16
    assert engine.register_read("Ing.r0", 2) == 1234
    # the connection still serves context 0; the log has one line per refusal, no traceback
    thrift.bm_register_write(0, "Ing.cnt", 3, 7)
    assert thrift.bm_register_read(0, "Ing.cnt", 3) == 7
    assert not [r for r in caplog.records if r.exc_info]
    assert sum("unknown context id" in r.getMessage() for r in caplog.records) == len(calls)


def test_negative_and_too_wide_values_are_masked_to_the_register_width(harness, thrift):
    thrift.bm_register_write(0, "Ing.cnt", 0, -5)
    thrift.bm_register_write(0, "Ing.cnt", 1, 300)
    thrift.bm_register_write(0, "Ing.cnt", 2, -1)
    thrift.bm_register_write(0, "Ing.r0", 0, -5)
    thrift.bm_register_write(0, "Ing.r0", 1, 2**40 + 3)
    thrift.bm_register_write(0, "Ing.r0", 2, -(2**63))
    thrift.bm_register_write_range(0, "Ing.r1", 0, 3, -2)
    assert thrift.bm_register_read_all(0, "Ing.cnt")[:3] == [251, 44, 255]
    assert thrift.bm_register_read_all(0, "Ing.r0")[:3] == [2**32 - 5, 3, 0]
    assert thrift.bm_register_read_all(0, "Ing.r1")[:4] == [2**32 - 2] * 3 + [0]
    # the engine holds the same bit patterns
    engine = harness.server.device.engine
    assert engine.register_read("Ing.cnt", 0) == 251 and engine.register_read("Ing.r0", 0) == 2**32 - 5


def test_negative_indexes_are_invalid_index(harness, thrift):
    for call in (lambda: thrift.bm_register_write(0, "Ing.cnt", -1, 1),
                 lambda: thrift.bm_register_read(0, "Ing.cnt", -3),
                 lambda: thrift.bm_register_write_range(0, "Ing.cnt", -2, 3, 1),
                 lambda: thrift.bm_register_write_range(0, "Ing.cnt", 5, 3, 1)):
        with pytest.raises(InvalidRegisterOperation) as info:
            call()
        assert info.value.code == RegisterOperationErrorCode.INVALID_INDEX
    assert harness.server.device.engine.register_read("Ing.cnt") == [0] * 16
