"""The stream schedule of one aggregation (worker/streams.py) without sockets: the packets of
each round, which results close a round, and what a misbehaving switch is told."""
import numpy as np
import pytest

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import Header, Layout, decode, encode
from p4reduce.worker.reducer import AggregationError, IntSource
from p4reduce.worker.streams import PRE_ROUND, StreamWindow

LAYOUT = Layout()


def result_for(contribution: bytes, lanes, **changes) -> bytes:
    """The switch's answer to one worker's contribution, as if it were alone."""
    h, _ = decode(contribution)
    fields = dict(vars(h), msg_type=C.MsgType.RESULT, count=1, flags=C.Flags.EOT if h.next_offset == C.NEXT_NONE else 0)
    fields.update(changes)
    return encode(Header(**fields), np.asarray(lanes, np.int32))


def test_dense_streams_walk_their_blocks_and_store_the_sums():
    x = np.arange(5 * C.LANES, dtype=np.int32)
    last_ver = [1, 1]
    win = StreamWindow(IntSource(x, C.LANES), job_id=4, rank=0, slot_count=2, sparse=False,
                       layout=LAYOUT, last_ver=last_ver)
    assert (win.S, win.first_blocks()) == (2, [0, 1])
    first = win.open_round(0, 0, None)
    h, lanes = decode(first)
    assert (h.msg_type, h.slot, h.ver, h.offset, h.next_offset) == (C.MsgType.CONTRIB, 0, 0, 0, 2 * C.LANES)
    assert (lanes == x[:C.LANES]).all() and last_ver == [0, 1]
    stale = result_for(first, lanes, ver=1)
    assert win.take_result(stale, len(stale), "job") is None              # the other copy: ignored
    answer = win.take_result(result_for(first, lanes * 3), len(first), "job")
    assert (answer.slot, answer.next_block, answer.exponent) == (0, 2, None)
    assert (win.sums[0] == 3 * x[:C.LANES]).all()
    second = decode(win.open_round(0, answer.next_block, None))[0]
    assert (second.ver, second.offset, second.next_offset) == (1, 2 * C.LANES, 4 * C.LANES)
    assert win.take_result(result_for(first, lanes), len(first), "job") is None   # a late duplicate


def test_float_streams_start_with_an_exponent_round():
    x = np.linspace(-1, 1, 3 * C.LANES, dtype=np.float32)
    from p4reduce.worker.reducer import QuantizedSource
    win = StreamWindow(QuantizedSource(x, C.LANES, 2), job_id=1, rank=1, slot_count=8, sparse=True,
                       layout=LAYOUT, last_ver=[1] * 8)
    assert win.first_blocks() == [PRE_ROUND] * 3
    pre = decode(win.open_round(2, PRE_ROUND, None))[0]
    assert (pre.bitmap, pre.offset, pre.next_offset) == (0, 2 * C.LANES, 2 * C.LANES)
    assert pre.exponent == int(win.props[2])      # the exponent the first block needs, proposed


def test_a_switch_naming_an_impossible_next_block_is_an_error():
    x = np.ones(4 * C.LANES, dtype=np.int32)
    win = StreamWindow(IntSource(x, C.LANES), job_id=2, rank=0, slot_count=2, sparse=False,
                       layout=LAYOUT, last_ver=[1, 1])
    packet = win.open_round(1, 1, None)
    bad = result_for(packet, np.ones(C.LANES), next_offset=2 * C.LANES)   # block 2 is slot 0's
    with pytest.raises(AggregationError, match="slot 1: the switch named next offset 64 after offset 32"):
        win.take_result(bad, len(bad), "job j rank 0")
