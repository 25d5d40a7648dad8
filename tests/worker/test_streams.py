"""The stream schedule of one aggregation (worker/streams.py) without sockets: the packets of
each round, which results close a round, and what a misbehaving switch is told."""
import numpy as np
import pytest

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import Header, Layout, decode, encode
from p4reduce.worker.reducer import AggregationError, IntSource
from p4reduce.worker.streams import PRE_ROUND, StreamWindow

LAYOUT = Layout(C.LANES, C.SUBBLOCK)


def result_for(contribution: bytes, lanes, **changes) -> bytes:
    """The switch's answer to one worker's contribution, as if it were alone."""
    h, _ = decode(contribution)
    fields = dict(vars(h), msg_type=C.MsgType.RESULT, count=1, flags=C.Flags.EOT if h.next_offset == C.NEXT_NONE else 0)
    fields.update(changes)
    return encode(Header(**fields), np.asarray(lanes, np.int32))


def open_one(win: StreamWindow, s: int, b: int, e=None) -> bytes:
    """Open one round and return its packet (a copy: the frame is reused)."""
    win.open_rounds([(s, b, e)])
    return bytes(win.frame(s))


def deliver(win: StreamWindow, *datagrams: bytes, describe: str = "job"):
    """Put datagrams in the window's receive ring as the reducer does; its answers."""
    for i, d in enumerate(datagrams):
        win.ring_slots[i][:len(d)] = d
        win.ring_len[i] = len(d)
    return win.take_results(len(datagrams), describe)


def test_dense_streams_walk_their_blocks_and_store_the_sums():
    x = np.arange(5 * C.LANES, dtype=np.int32)
    last_ver = [1, 1]
    win = StreamWindow(IntSource(x, C.LANES), job_id=4, rank=0, slot_count=2, sparse=False,
                       layout=LAYOUT, last_ver=last_ver)
    win.start()
    assert win.S == 2 and win.to_open(8) == [(0, 0, None), (1, 1, None)]
    first = open_one(win, 0, 0)
    h, lanes = decode(first)
    assert (h.msg_type, h.slot, h.ver, h.offset, h.next_offset) == (C.MsgType.CONTRIB, 0, 0, 0, 2 * C.LANES)
    assert (lanes == x[:C.LANES]).all() and last_ver == [0, 1]
    assert deliver(win, result_for(first, lanes, ver=1)) == []              # the other copy: ignored
    [answer] = deliver(win, result_for(first, lanes * 3))
    assert (answer.slot, answer.next_block, answer.exponent) == (0, 2, None)
    assert (win.sums[0] == 3 * x[:C.LANES]).all()
    assert win.to_open(8) == [(0, 2, None)]
    second = decode(open_one(win, 0, 2))[0]
    assert (second.ver, second.offset, second.next_offset) == (1, 2 * C.LANES, 4 * C.LANES)
    assert deliver(win, result_for(first, lanes)) == []   # a late duplicate


def test_a_batch_of_results_is_decoded_together_and_duplicates_close_nothing():
    x = np.arange(6 * C.LANES, dtype=np.int32)
    win = StreamWindow(IntSource(x, C.LANES), job_id=4, rank=0, slot_count=3, sparse=False,
                       layout=LAYOUT, last_ver=[1, 1, 1])
    win.start()
    win.open_rounds(win.to_open(3))
    packets = [bytes(win.frame(s)) for s in range(3)]
    results = [result_for(p, decode(p)[1] * 2) for p in packets]
    answers = deliver(win, results[2], results[0], results[0], results[1])
    assert sorted(a.slot for a in answers) == [0, 1, 2]
    assert np.array_equal(win.sums[:3].reshape(-1), 2 * x[:3 * C.LANES])


def test_sparse_packets_carry_only_their_non_zero_subblocks():
    x = np.zeros(4 * C.LANES, dtype=np.int32)
    x[C.SUBBLOCK + 1] = 5                     # block 0: sub-block 1 only
    x[3 * C.LANES + 2 * C.SUBBLOCK] = -7      # block 3: sub-block 2 only
    win = StreamWindow(IntSource(x, C.LANES), job_id=3, rank=1, slot_count=2, sparse=True,
                       layout=LAYOUT, last_ver=[1, 1])
    win.start()
    win.open_rounds(win.to_open(2))
    h0, lanes0 = decode(bytes(win.frame(0)))
    h1, lanes1 = decode(bytes(win.frame(1)))
    assert (h0.bitmap, h0.next_offset) == (0b10, C.NEXT_NONE)          # block 2 (stream 0) is zero
    assert (h1.bitmap, h1.next_offset) == (0, 3 * C.LANES)             # block 1 zero, block 3 next
    assert np.array_equal(lanes0, x[:C.LANES]) and not lanes1.any()
    [a0, a1] = deliver(win, result_for(bytes(win.frame(0)), lanes0 * 2), result_for(bytes(win.frame(1)), lanes1))
    assert (a0.next_block, a1.next_block) == (None, 3)
    assert np.array_equal(win.sums[0], 2 * x[:C.LANES])


def test_rounds_open_in_the_order_their_results_arrived():
    """Every worker gets the switch's results in the same order but in batches of its own: rounds
    open in the order they became ready (not by block), so all workers send them in one order,
    and a window with room for one takes the earliest, whatever its block."""
    x = np.ones(8 * C.LANES, dtype=np.int32)
    win = StreamWindow(IntSource(x, C.LANES), job_id=2, rank=0, slot_count=4, sparse=False,
                       layout=LAYOUT, last_ver=[1] * 4)
    win.start()
    first = win.to_open(4)
    win.open_rounds(first)
    frames = {s: bytes(win.frame(s)) for s in range(4)}
    deliver(win, result_for(frames[2], np.ones(C.LANES)), result_for(frames[0], np.ones(C.LANES)))
    assert win.to_open(3) == [(2, 6, None)]            # one place: block 6 became ready first
    assert win.to_open(4) == [(0, 4, None)]
    win2 = StreamWindow(IntSource(x, C.LANES), job_id=2, rank=0, slot_count=4, sparse=False,
                        layout=LAYOUT, last_ver=[1] * 4)
    win2.start()
    win2.open_rounds(win2.to_open(4))
    frames = {s: bytes(win2.frame(s)) for s in range(4)}
    deliver(win2, result_for(frames[2], np.ones(C.LANES)), result_for(frames[0], np.ones(C.LANES)))
    assert win2.to_open(8) == [(2, 6, None), (0, 4, None)]   # arrival order, not block order


def test_rounds_open_within_the_window_and_the_oldest_beyond_it():
    x = np.ones(8 * C.LANES, dtype=np.int32)
    win = StreamWindow(IntSource(x, C.LANES), job_id=2, rank=0, slot_count=4, sparse=False,
                       layout=LAYOUT, last_ver=[1] * 4)
    win.start()
    assert win.to_open(2) == [(0, 0, None), (1, 1, None)]
    win.open_rounds([(0, 0, None), (1, 1, None)])
    assert win.to_open(2) == []                     # the window is full
    [answer] = deliver(win, result_for(bytes(win.frame(1)), np.ones(C.LANES)))
    assert answer.next_block == 5
    assert win.to_open(2) == [(2, 2, None)]         # block 2 before 3 and 5: ready since the start
    win.open_rounds([(2, 2, None)])
    deliver(win, result_for(bytes(win.frame(0)), np.ones(C.LANES)), result_for(bytes(win.frame(2)), np.ones(C.LANES)))
    # nothing in flight is older than block 3, so it opens even with a window of 1
    assert win.to_open(1)[0] == (3, 3, None)


def test_float_streams_start_with_an_exponent_round():
    x = np.linspace(-1, 1, 3 * C.LANES, dtype=np.float32)
    from p4reduce.worker.reducer import QuantizedSource
    win = StreamWindow(QuantizedSource(x, C.LANES, 2), job_id=1, rank=1, slot_count=8, sparse=True,
                       layout=LAYOUT, last_ver=[1] * 8)
    win.start()
    assert win.to_open(8) == [(0, PRE_ROUND, None), (1, PRE_ROUND, None), (2, PRE_ROUND, None)]
    pre = decode(open_one(win, 2, PRE_ROUND))[0]
    assert (pre.bitmap, pre.offset, pre.next_offset) == (0, 2 * C.LANES, 2 * C.LANES)
    assert pre.exponent == int(win.props[2])      # the exponent the first block needs, proposed


def test_retransmissions_are_flagged_in_place():
    x = np.ones(2 * C.LANES, dtype=np.int32)
    win = StreamWindow(IntSource(x, C.LANES), job_id=2, rank=0, slot_count=2, sparse=False,
                       layout=LAYOUT, last_ver=[1, 1])
    first = open_one(win, 1, 1)
    win.mark_retransmission(1)
    again = bytes(win.frame(1))
    assert decode(again)[0].flags == decode(first)[0].flags | C.Flags.RETX
    assert again[C.HEADER_BYTES:] == first[C.HEADER_BYTES:]


def test_a_switch_naming_an_impossible_next_block_is_an_error():
    x = np.ones(4 * C.LANES, dtype=np.int32)
    win = StreamWindow(IntSource(x, C.LANES), job_id=2, rank=0, slot_count=2, sparse=False,
                       layout=LAYOUT, last_ver=[1, 1])
    packet = open_one(win, 1, 1)
    bad = result_for(packet, np.ones(C.LANES), next_offset=2 * C.LANES)   # block 2 is slot 0's
    with pytest.raises(AggregationError, match=f"slot 1: the switch named next offset {2 * C.LANES} after offset {C.LANES}"):
        deliver(win, bad, describe="job j rank 0")
