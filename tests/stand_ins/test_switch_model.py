"""The reference switch model: end-to-end all-reduce through a lossy network, and the state
machine's individual rules (docs/protocol.md section 5)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testbed.lossy_net import LossyNetwork, model_switch
from testbed.reference_worker import JobRun
from testbed.switch_model import SwitchModel

from p4reduce.protocol import constants as C
from p4reduce.protocol.constants import AggEvent, DropReason, Flags, Mode, MsgType
from p4reduce.protocol.wire import Header, decode, encode


def sparse_tensor(rng, length, density, lo=-1000, hi=1000):
    """A tensor whose sub-blocks are non-zero with probability `density`."""
    sb = -(-length // C.SUBBLOCK)
    x = rng.integers(lo, hi, sb * C.SUBBLOCK)
    x.reshape(sb, C.SUBBLOCK)[rng.random(sb) >= density] = 0
    return x[:length].astype(np.int32)


def make_model(n, job_id=1, slot_base=0, slot_count=8, mode=Mode.DENSE, model=None):
    model = model or SwitchModel()
    model.add_job(job_id, slot_base, slot_count, n, mode)
    for r in range(n):
        model.add_worker(job_id, r, f"10.{job_id}.0.{r + 1}", 40000 + r)
    return model


@pytest.mark.parametrize("n", [2, 4, 8, 32])
@pytest.mark.parametrize("mode,density", [(Mode.DENSE, 1.0), (Mode.DENSE, 0.3), (Mode.SPARSE, 0.05),
                                          (Mode.SPARSE, 0.5), (Mode.SPARSE, 0.0)])
def test_allreduce_exact_under_loss(n, mode, density):
    rng = np.random.default_rng(n * 100 + int(density * 10) + int(mode))
    length = int(rng.integers(100, 700))
    tensors = [sparse_tensor(rng, length, density) for _ in range(n)]
    model = make_model(n, mode=mode, slot_count=4)
    run = JobRun(tensors, 1, 4, mode, layout=model.layout)
    net = LossyNetwork(model_switch(model), seed=n, loss=0.05, dup=0.05, spurious_timeout=0.01)
    net.run({1: run})
    want = np.sum(np.stack(tensors).astype(np.int64), axis=0)
    for r in range(n):
        np.testing.assert_array_equal(run.results()[r], want)
    # every drop the model made is a normal loss-recovery one
    assert set(np.flatnonzero(model.drop_counts)) <= {DropReason.DUPLICATE_PENDING}


def test_sparse_sends_only_what_is_needed():
    n, length = 4, 32 * 64
    np.random.default_rng(1)
    tensors = [np.zeros(length, np.int32) for _ in range(n)]
    tensors[2][32 * 40 + 3] = 7                      # one non-zero element in block 40
    model = make_model(n, mode=Mode.SPARSE, slot_count=4)
    run = JobRun(tensors, 1, 4, Mode.SPARSE, layout=model.layout)
    LossyNetwork(model_switch(model), seed=2).run({1: run})
    assert run.results()[0][32 * 40 + 3] == 7 and run.results().sum() == 7 * n
    # 4 streams start at blocks 0..3; stream 0 jumps straight to block 40: 5 rounds in all
    assert model.event_counts[AggEvent.RESULT_MULTICAST] == 5


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 6), slots=st.integers(1, 5), length=st.integers(1, 400),
       density=st.floats(0, 1), mode=st.sampled_from([Mode.DENSE, Mode.SPARSE]),
       loss=st.floats(0, 0.3), dup=st.floats(0, 0.3), seed=st.integers(0, 2**16))
def test_model_property_any_interleaving(n, slots, length, density, mode, loss, dup, seed):
    rng = np.random.default_rng(seed)
    tensors = [sparse_tensor(rng, length, density) for _ in range(n)]
    model = make_model(n, mode=mode, slot_count=slots)
    run = JobRun(tensors, 1, slots, mode, layout=model.layout)
    LossyNetwork(model_switch(model), seed=seed, loss=loss, dup=dup, spurious_timeout=0.02).run({1: run})
    want = np.sum(np.stack(tensors).astype(np.int64), axis=0)
    assert (run.results() == want).all()


# ---- individual rules -------------------------------------------------------------------------

def contrib(rank, slot=0, ver=0, offset=0, nxt=C.NEXT_NONE, exp=C.EXP_BIAS, block=None, bitmap=None, job=1):
    block = np.full(C.LANES, rank + 1, np.int32) if block is None else block
    bitmap = C.full_bitmap() if bitmap is None else bitmap
    return encode(Header(job_id=job, rank=rank, slot=slot, ver=ver, offset=offset, next_offset=nxt,
                         exponent=exp, bitmap=bitmap), block)


def patched(payload, at, data):
    """payload with bytes [at, at+len(data)) replaced (hostile packets the codec refuses to build)."""
    return payload[:at] + data + payload[at + len(data):]


def send(model, rank, payload, job=1):
    addr = model.worker_of(job, rank)
    return model.receive(addr.ip, addr.port, payload)


def test_first_writes_later_add_last_multicasts():
    model = make_model(3)
    assert send(model, 0, contrib(0, exp=130, nxt=96)).event == AggEvent.ABSORBED
    assert send(model, 2, contrib(2, exp=140, nxt=64)).event == AggEvent.ABSORBED
    out = send(model, 1, contrib(1, exp=120, nxt=C.NEXT_NONE))
    assert out.event == AggEvent.RESULT_MULTICAST
    assert sorted(d.rank for d in out.deliveries) == [0, 1, 2]
    for d in out.deliveries:
        h, lanes = decode(d.payload)
        assert (h.msg_type, h.count, h.rank, h.next_offset, h.exponent, h.flags) == (MsgType.RESULT, 3, d.rank, 64, 140, 0)
        assert (lanes == 6).all()
    # next round on the same copy: the first arrival overwrites (no explicit clear)
    send(model, 0, contrib(0, ver=1)), send(model, 1, contrib(1, ver=1)), send(model, 2, contrib(2, ver=1))
    send(model, 0, contrib(0, block=np.full(C.LANES, 10, np.int32)))
    send(model, 1, contrib(1, block=np.full(C.LANES, 20, np.int32)))
    out = send(model, 2, contrib(2, block=np.full(C.LANES, 30, np.int32)))
    h, lanes = decode(out.deliveries[0].payload)
    assert (lanes == 60).all() and h.flags == Flags.EOT


def test_duplicates_pending_dropped_complete_unicast():
    model = make_model(2)
    send(model, 0, contrib(0))
    assert send(model, 0, contrib(0)).drop == DropReason.DUPLICATE_PENDING
    send(model, 1, contrib(1))
    again = send(model, 1, contrib(1))
    assert again.event == AggEvent.RESULT_UNICAST and len(again.deliveries) == 1
    d = again.deliveries[0]
    h, lanes = decode(d.payload)
    assert d.unicast and d.rank == 1 and h.flags == Flags.RETX | Flags.EOT and (lanes == 3).all()


def test_other_copy_releases_and_stale_packets():
    model = make_model(2)
    for r in (0, 1):
        send(model, r, contrib(r, ver=0))
    # worker 0 moves on to copy 1: its bit in copy 0 is released
    send(model, 0, contrib(0, ver=1, offset=32))
    i0 = 0
    assert int(model.seen[i0]) == 0b10 and int(model.seen[i0 + 1]) == 0b01
    # a stale copy-0 packet from worker 1 (already counted, round complete) gets the old result again
    out = send(model, 1, contrib(1, ver=0))
    assert out.event == AggEvent.RESULT_UNICAST
    assert decode(out.deliveries[0].payload)[0].offset == 0
    # a stale copy-0 packet from worker 0 now looks new: it is only absorbed if offsets agree
    out = send(model, 1, contrib(1, ver=1, offset=64))
    assert out.drop == DropReason.OFFSET_MISMATCH


def test_sparse_union_and_fill():
    model = make_model(3, mode=Mode.SPARSE)
    z = np.zeros(C.LANES, np.int32)
    b0 = z.copy(); b0[0:C.SUBBLOCK] = 1
    sb = C.SUBBLOCK
    b2 = z.copy(); b2[0:sb] = 5; b2[3 * sb:4 * sb] = -2
    send(model, 0, contrib(0, block=b0, bitmap=0b0001, nxt=320))
    send(model, 1, encode(Header(job_id=1, rank=1, bitmap=0, next_offset=160), None))
    out = send(model, 2, contrib(2, block=b2, bitmap=0b1001, nxt=C.NEXT_NONE))
    h, lanes = decode(out.deliveries[0].payload)
    assert h.bitmap == 0b1001 and h.next_offset == 160
    want = z.copy(); want[0:sb] = 6; want[3 * sb:4 * sb] = -2
    np.testing.assert_array_equal(lanes, want)
    assert len(out.deliveries[0].payload) == 24 + 2 * C.SUBBLOCK_BYTES


def test_saturation():
    model = make_model(3)
    big = np.full(C.LANES, C.LANE_MAX - 5, np.int32)
    send(model, 0, contrib(0, block=big))
    send(model, 1, contrib(1, block=np.full(C.LANES, 3, np.int32)))
    out = send(model, 2, contrib(2, block=np.full(C.LANES, 3, np.int32)))
    assert (decode(out.deliveries[0].payload)[1] == C.LANE_MAX).all()
    small = np.full(C.LANES, C.LANE_MIN, np.int32)
    for r in range(3):
        out = send(model, r, contrib(r, ver=1, block=small))
    assert (decode(out.deliveries[0].payload)[1] == C.LANE_MIN).all()


def test_admission_drops_are_counted_and_change_nothing():
    model = make_model(2, job_id=1, slot_base=0, slot_count=4)
    make_model(2, job_id=2, slot_base=4, slot_count=4, mode=Mode.SPARSE, model=model)
    before = (model.seen.copy(), model.count.copy(), model.lanes.copy())
    ip0, port0 = "10.1.0.1", 40000
    cases = [
        (model.receive("10.9.9.9", 1, contrib(0)), DropReason.UNKNOWN_WORKER),
        (model.receive(ip0, port0, contrib(0, job=7)), DropReason.UNKNOWN_JOB),
        (model.receive(ip0, port0, contrib(1)), DropReason.BAD_RANK),
        (model.receive(ip0, port0, contrib(0, slot=4)), DropReason.SLOT_RANGE),
        (model.receive(ip0, port0, contrib(0, bitmap=0b0111)), DropReason.BAD_BITMAP),
        (model.receive(ip0, port0, patched(contrib(0), 18, (0x1F).to_bytes(2, 'big'))), DropReason.BAD_BITMAP),
        (model.receive(ip0, port0, contrib(0)[:30]), DropReason.TRUNCATED),
        (model.receive(ip0, port0, contrib(0) + b"\0" * 4), DropReason.BAD_LENGTH),
        (model.receive(ip0, port0, contrib(0, job=2)), DropReason.UNKNOWN_WORKER),
    ]
    res = bytearray(contrib(0)); res[0] = MsgType.RESULT
    cases.append((model.receive(ip0, port0, bytes(res)), DropReason.BAD_TYPE))
    for outcome, reason in cases:
        assert outcome.drop == reason and not outcome.deliveries
    assert (model.seen == before[0]).all() and (model.count == before[1]).all() and (model.lanes == before[2]).all()
    assert model.drop_counts[DropReason.BAD_BITMAP] == 2


def test_spoofed_ingress_port_is_dropped_before_any_state():
    """A worker is bound to its switch port: its exact addresses from another port count nothing."""
    model = SwitchModel()
    model.add_job(1, 0, 4, 2)
    model.add_worker(1, 0, "10.1.0.1", 40000, switch_port=1)
    model.add_worker(1, 1, "10.1.0.2", 40001, switch_port=2)
    before = (model.seen.copy(), model.count.copy(), model.lanes.copy())
    spoofed = model.receive("10.1.0.1", 40000, contrib(0), ingress_port=3)
    assert spoofed.drop == DropReason.SPOOFED_PORT and not spoofed.deliveries
    # rank 1's own port is not rank 0's either
    assert model.receive("10.1.0.1", 40000, contrib(0), ingress_port=2).drop == DropReason.SPOOFED_PORT
    assert (model.seen == before[0]).all() and (model.count == before[1]).all() \
        and (model.lanes == before[2]).all()
    assert model.drop_counts[DropReason.SPOOFED_PORT] == 2
    # the real worker on its own port is admitted; without a port (UDP fake switch) nothing is checked
    assert model.receive("10.1.0.1", 40000, contrib(0), ingress_port=1).event == AggEvent.ABSORBED
    out = model.receive("10.1.0.2", 40001, contrib(1))
    assert out.event == AggEvent.RESULT_MULTICAST and len(out.deliveries) == 2


def test_source_guard_drops_other_sources_on_guarded_ports_only():
    """A guarded host port accepts IPv4 only from its host's address (SPOOFED_SOURCE, before any
    state); unguarded ports (switch links) and non-IPv4 frames are not checked."""
    from p4reduce.protocol.frames import udp_frame
    model = SwitchModel()
    model.add_job(1, 0, 4, 2)
    model.add_worker(1, 0, "10.1.0.1", 40000, mac="02:00:00:00:00:01", switch_port=1)
    model.add_worker(1, 1, "10.1.0.2", 40001, mac="02:00:00:00:00:02", switch_port=2)
    model.add_source_guard(1, "10.1.0.1")
    model.add_source_guard(2, "10.1.0.2")
    model.add_source_guard(3, "10.1.0.3")          # an attacker's port
    before = (model.seen.copy(), model.count.copy(), model.lanes.copy())
    # rank 1 spoofed from the attacker's port, and from rank 0's port
    assert model.receive("10.1.0.2", 40001, contrib(1), ingress_port=3).drop == DropReason.SPOOFED_SOURCE
    spoofed = udp_frame("02:00:00:00:00:03", "02:00:00:00:00:fe", "10.1.0.2", "10.0.0.254", 40001,
                        C.AGG_UDP_PORT, contrib(1))
    assert model.process(1, spoofed) == []
    # a forged RESULT (source = aggregation address and port): dropped although not an aggregation frame
    forged = udp_frame("02:00:00:00:00:03", "02:00:00:00:00:01", "10.0.0.254", "10.1.0.1", C.AGG_UDP_PORT,
                       40000, contrib(0))
    assert model.process(3, forged) == []
    assert model.drop_counts[DropReason.SPOOFED_SOURCE] == 3
    assert (model.seen == before[0]).all() and (model.count == before[1]).all() \
        and (model.lanes == before[2]).all()
    # non-aggregation frames from an unguarded port are still outside the model
    with pytest.raises(ValueError):
        model.process(9, forged)
    # legitimate traffic: each worker from its own port
    own = udp_frame("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.1.0.1", "10.0.0.254", 40000,
                    C.AGG_UDP_PORT, contrib(0))
    assert model.process(1, own) == []
    assert model.event_counts[AggEvent.ABSORBED] == 1
    assert model.receive("10.1.0.2", 40001, contrib(1), ingress_port=2).event == AggEvent.RESULT_MULTICAST
    assert model.drop_counts[DropReason.SPOOFED_SOURCE] == 3
