"""The BMv2 Thrift runtime API subset (what simple_switch_CLI uses for registers and counters)."""
import hashlib

import pytest
from bm_runtime.standard import Standard
from bm_runtime.standard.ttypes import BmCounterValue, InvalidCounterOperation, InvalidRegisterOperation
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport

from p4reduce.mininet_topos.ports import free_port
from p4sim.runtime.thrift_service import ThriftServer


@pytest.fixture
def thrift(harness):
    server = ThriftServer(harness.server.device, free_port(), host="127.0.0.1")
    server.start()
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", server.port))
    protocol = TMultiplexedProtocol.TMultiplexedProtocol(
        TBinaryProtocol.TBinaryProtocol(transport), "standard")
    client = Standard.Client(protocol)
    transport.open()
    yield client
    transport.close()
    server.stop()


def test_registers_and_config_over_thrift(harness, reference, thrift):
    ref = reference("agg_mini")
    harness.client().set_pipeline(ref.p4info, ref.device_config)
    assert thrift.bm_get_config() == ref.device_config.decode()
    assert thrift.bm_get_config_md5() == hashlib.md5(ref.device_config).digest()
    for port, packet in ref.case["packets"][:2]:
        harness.inject(port, bytes.fromhex(packet))
    assert thrift.bm_register_read(0, "Ing.cnt", 0) == 2
    assert thrift.bm_register_read_all(0, "Ing.r0")[0] == 11
    thrift.bm_register_write(0, "Ing.r2", 1, 99)
    thrift.bm_register_write_range(0, "Ing.r2", 4, 7, 7)  # end exclusive, as on BMv2
    assert thrift.bm_register_read_all(0, "Ing.r2")[:8] == [33, 99, 0, 0, 7, 7, 7, 0]  # r2[0]: 3 + 30
    with pytest.raises(InvalidRegisterOperation):
        thrift.bm_register_write_range(0, "Ing.r2", 10, 17, 1)
    assert harness.server.device.engine.register_read("Ing.r2", 1) == 99
    thrift.bm_register_reset(0, "Ing.r2")
    assert set(thrift.bm_register_read_all(0, "Ing.r2")) == {0}
    with pytest.raises(InvalidRegisterOperation):
        thrift.bm_register_read(0, "Ing.nope", 0)
    with pytest.raises(InvalidRegisterOperation):
        thrift.bm_register_read(0, "Ing.cnt", 16)
    with pytest.raises(TApplicationException) as info:
        thrift.bm_mt_clear_entries(0, "Egr.rewrite", False)
    assert info.value.type == TApplicationException.UNKNOWN_METHOD
    assert thrift.bm_register_read(0, "Ing.cnt", 0) == 2  # the connection survived


def test_counters_over_thrift(harness, reference, thrift):
    ref = reference("fwd_basic")
    harness.client().set_pipeline(ref.p4info, ref.device_config)
    non_ip = bytes.fromhex("ffffffffffff000000000000080600000000000000000000000000000000000000000000000000000000")
    harness.inject(1, non_ip)
    value = thrift.bm_counter_read(0, "Ing.drops", 0)
    assert (value.packets, value.bytes) == (1, len(non_ip))
    thrift.bm_counter_write(0, "Ing.drops", 2, BmCounterValue(bytes=10, packets=3))
    assert harness.server.device.engine.counter_read("Ing.drops", 2) == (3, 10)
    thrift.bm_counter_reset_all(0, "Ing.drops")
    assert thrift.bm_counter_read(0, "Ing.drops", 2).packets == 0
    with pytest.raises(InvalidCounterOperation):
        thrift.bm_counter_read(0, "Ing.lpm_hits", 0)  # direct counters are read per entry
    assert thrift.bm_mt_get_num_entries(0, "Ing.l2") == 0
