"""Aggregation hop by hop up a tree of switches (docs/protocol.md section 11): every switch runs
the program in lockstep with its model (testbed.tree_fabric), an interior switch is one worker to
its parent, and workers are unchanged. Exact sums over two levels and three, one contribution and
one result per round on every uplink, recovery from loss on every link, and the parent's results
refused where they do not belong."""
import dataclasses

import numpy as np
import pytest
from testbed.reference_worker import JobRun
from testbed.tree_fabric import UPLINK, TreeFabric, TreeNetwork

from p4reduce.p4src.build import SOURCE, compile_program
from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.constants import AggEvent, DropReason, Flags, Mode, MsgType
from p4reduce.protocol.frames import mac_bytes
from p4reduce.protocol.wire import Header, Layout, decode, encode

TWO_LEAVES = {"spine": None, "leaf1": "spine", "leaf2": "spine"}
DEPTH3 = {"root": None, "mid1": "root", "mid2": "root",
          "leaf1": "mid1", "leaf2": "mid1", "leaf3": "mid2", "leaf4": "mid2"}
TOKEN = 0x5EED_0001


def placement(*per_leaf):
    """Ranks in order over leaf1, leaf2, ...: placement(2, 3) = leaf1 x2, leaf2 x3."""
    return [f"leaf{i + 1}" for i, k in enumerate(per_leaf) for _ in range(k)]


def tensors_for(rng, n, length, mode, subblock):
    """int32 tensors: dense ones everywhere non-zero, sparse ones with few non-zero sub-blocks."""
    out = []
    for _ in range(n):
        x = rng.integers(-10**6, 10**6, length)
        if mode == Mode.SPARSE:
            sb = -(-length // subblock)
            mask = np.repeat(rng.random(sb) < 0.15, subblock)[:length]
            x = x * mask
        out.append(x.astype(np.int32))
    return out


def run_tensors(tree, net, job_id, n, mode, slot_count, rng, count=3, blocks=6):
    """`count` all-reduces in a row on one job (slot versions carried over, as a worker keeps
    them), each checked against numpy; returns the rounds each took (the root's multicasts)."""
    lay = tree.layout
    root = next(name for name, node in tree.nodes.items() if node.parent is None)
    versions, rounds = None, []
    for _ in range(count):
        length = blocks * lay.lanes - int(rng.integers(0, lay.lanes))
        tensors = tensors_for(rng, n, length, mode, lay.subblock)
        before = tree.events(root)[AggEvent.RESULT_MULTICAST]
        run = JobRun(tensors, job_id, slot_count, mode, layout=lay, versions=versions,
                     wire_token=tree.jobs[job_id].wire_token)
        net.run({job_id: run})
        want = np.sum(np.stack(tensors).astype(np.int64), axis=0)
        for r in range(n):
            np.testing.assert_array_equal(run.results()[r], want)
        versions = run.ver
        rounds.append(tree.events(root)[AggEvent.RESULT_MULTICAST] - before)
    return rounds


def assert_one_frame_each_way_per_round(tree, net, rounds):
    for name, node in tree.nodes.items():
        if node.parent is None:
            continue
        assert net.uplink(name) == (rounds, rounds), name
        events = tree.events(name)
        assert (events[AggEvent.SENT_UP], events[AggEvent.RESULT_DOWN]) == (rounds, rounds), name
        assert events[AggEvent.RESENT_UP] == events[AggEvent.RESULT_MULTICAST] == 0, name


@pytest.mark.parametrize("mode,per_leaf", [(Mode.DENSE, (2, 3)), (Mode.SPARSE, (4, 2))])
def test_two_leaves_under_a_spine_exact_one_frame_per_round(program, layout, mode, per_leaf):
    tree = TreeFabric(program, layout, TWO_LEAVES)
    where = placement(*per_leaf)
    tree.add_job(1, where, slot_count=3, mode=mode, wire_token=TOKEN, slot_base=5)
    net = TreeNetwork(tree, seed=1)
    rounds = run_tensors(tree, net, 1, len(where), mode, 3, np.random.default_rng(len(where)))
    if mode == Mode.DENSE:
        assert rounds == [6, 6, 6]
    assert net.stats["timeouts"] == net.stats["retransmitted"] == 0
    assert_one_frame_each_way_per_round(tree, net, sum(rounds))
    for leaf, k in zip(("leaf1", "leaf2"), per_leaf):                  # each worker one result a round
        to_workers = [v for (a, b, t), v in net.link_frames.items() if a == leaf and b.startswith("w")]
        assert to_workers == [sum(rounds)] * k, leaf
    assert tree.total_drops() == {}
    tree.assert_counters_match_models()


@pytest.mark.parametrize("mode", [Mode.DENSE, Mode.SPARSE])
def test_depth_three_tree_of_eight_workers_exact(program, layout, mode):
    tree = TreeFabric(program, layout, DEPTH3)
    tree.add_job(3, placement(2, 2, 2, 2), slot_count=2, mode=mode, wire_token=TOKEN)
    net = TreeNetwork(tree, seed=3)
    rounds = run_tensors(tree, net, 3, 8, mode, 2, np.random.default_rng(8), count=2, blocks=5)
    assert_one_frame_each_way_per_round(tree, net, sum(rounds))
    assert tree.events("root")[AggEvent.SENT_UP] == 0            # the root has no parent
    assert tree.total_drops() == {}
    tree.assert_counters_match_models()


@pytest.mark.parametrize("parents,per_leaf,mode", [(TWO_LEAVES, (3, 2), Mode.SPARSE),
                                                   (DEPTH3, (2, 2, 2, 2), Mode.DENSE)],
                         ids=["two-leaves", "depth3"])
def test_loss_on_every_link_both_ways_still_exact(program, layout, parents, per_leaf, mode):
    """10 % loss on worker links, 15 % between switches, 5 % duplicates: every sum exact; what
    recovery cost shows in the counters (duplicates dropped, partial sums resent up)."""
    tree = TreeFabric(program, layout, parents)
    where = placement(*per_leaf)
    tree.add_job(2, where, slot_count=3, mode=mode, wire_token=TOKEN)
    net = TreeNetwork(tree, seed=len(where), loss=0.10, switch_loss=0.15, dup=0.05, spurious_timeout=0.01)
    run_tensors(tree, net, 2, len(where), mode, 3, np.random.default_rng(7), count=2, blocks=6)
    assert net.stats["lost"] > 0 and net.stats["retransmitted"] > 0
    drops = tree.total_drops()
    assert set(drops) <= {DropReason.DUPLICATE_PENDING, DropReason.STALE_RESULT}, drops
    assert drops[DropReason.DUPLICATE_PENDING] > 0 and drops[DropReason.STALE_RESULT] > 0
    assert sum(tree.events(name)[AggEvent.RESENT_UP] for name in tree.nodes) > 0
    tree.assert_counters_match_models()


def test_two_jobs_sharing_the_leaves_stay_apart(program, layout):
    tree = TreeFabric(program, layout, TWO_LEAVES)
    tree.add_job(1, placement(2, 2), slot_count=2, mode=Mode.DENSE, wire_token=0x1111, slot_base=0)
    tree.add_job(2, ["leaf2", "leaf1", "leaf1"], slot_count=3, mode=Mode.SPARSE, wire_token=0x2222,
                 slot_base=2)
    net = TreeNetwork(tree, seed=12, loss=0.08, dup=0.03)
    rng = np.random.default_rng(12)
    lay = layout
    runs, want = {}, {}
    for job_id, n, mode, slots in ((1, 4, Mode.DENSE, 2), (2, 3, Mode.SPARSE, 3)):
        tensors = tensors_for(rng, n, 7 * lay.lanes - 3, mode, lay.subblock)
        runs[job_id] = JobRun(tensors, job_id, slots, mode, layout=lay, wire_token=tree.jobs[job_id].wire_token)
        want[job_id] = np.sum(np.stack(tensors).astype(np.int64), axis=0)
    net.run(runs)
    for job_id, run in runs.items():
        for r in range(run.n):
            np.testing.assert_array_equal(run.results()[r], want[job_id])
    assert set(tree.total_drops()) <= {DropReason.DUPLICATE_PENDING, DropReason.STALE_RESULT}
    tree.assert_counters_match_models()


def test_switches_with_workers_of_their_own_next_to_child_switches(program, layout):
    """A switch's children may be workers and switches at once (the root's and mid2's here), and a
    tree may leave switches out (leaf2) or have a single child (mid1)."""
    tree = TreeFabric(program, layout, DEPTH3)
    where = ["root", "leaf1", "mid2", "leaf1", "leaf3", "leaf4", "root"]
    tree.add_job(4, where, slot_count=2, mode=Mode.SPARSE, wire_token=TOKEN)
    net = TreeNetwork(tree, seed=4, loss=0.05, dup=0.02)
    run_tensors(tree, net, 4, len(where), Mode.SPARSE, 2, np.random.default_rng(4), count=2, blocks=5)
    assert tree.events("leaf2")[AggEvent.SENT_UP] == 0
    assert set(tree.total_drops()) <= {DropReason.DUPLICATE_PENDING, DropReason.STALE_RESULT}
    tree.assert_counters_match_models()


# ---- single rounds, frame by frame --------------------------------------------------------------

def contribution(layout, job, rank, slot=0, ver=0, offset=0, value=None, flags=0, wire_token=TOKEN):
    block = np.full(layout.lanes, rank + 1 if value is None else value, np.int32)
    return encode(Header(job_id=job, rank=rank, slot=slot, ver=ver, offset=offset, flags=flags,
                         next_offset=offset + layout.lanes, exponent=C.EXP_BIAS + rank,
                         bitmap=layout.full_bitmap, wire_token=wire_token), block, layout)


def leaf_round(tree, leaf, ranks, **kw):
    """Contributions of `ranks` (all on `leaf`) into the leaf alone: its output frames."""
    out = []
    for r in ranks:
        switch, port, frame = tree.worker_frame(1, r, contribution(tree.layout, 1, r, **kw))
        assert switch == leaf
        out = tree.inject(switch, port, frame)
    return out


def edit(frame, **fields):
    """A p4reduce frame with header fields changed (same length: the IPv4 checksum still holds)."""
    at = C.FRAME_HEADER_BYTES
    h = dataclasses.replace(Header.unpack(frame[at:]), **fields)
    return frame[:at] + h.pack() + frame[at + C.HEADER_BYTES:]


@pytest.fixture
def spine_and_leaves(program, layout):
    """TWO_LEAVES with job 1: ranks 0, 1 on leaf1, 2, 3 on leaf2, two slots, dense."""
    tree = TreeFabric(program, layout, TWO_LEAVES)
    tree.add_job(1, placement(2, 2), slot_count=2, mode=Mode.DENSE, wire_token=TOKEN)
    return tree


def round_to_spine(tree, **kw):
    """One round of all four workers up to the spine, by hand: the spine's results for leaf1 and
    leaf2 (frames on their uplinks), not yet delivered."""
    up1 = leaf_round(tree, "leaf1", [0, 1], **kw)
    up2 = leaf_round(tree, "leaf2", [2, 3], **kw)
    assert [p for p, _ in up1] == [p for p, _ in up2] == [UPLINK]
    spine = tree.nodes["spine"]
    assert tree.inject("spine", spine.port_to("leaf1"), up1[0][1]) == []
    down = dict(tree.inject("spine", spine.port_to("leaf2"), up2[0][1]))
    return down[spine.port_to("leaf1")], down[spine.port_to("leaf2")]


def test_the_partial_sum_goes_up_as_one_worker(spine_and_leaves):
    tree, lay = spine_and_leaves, spine_and_leaves.layout
    leaf_round(tree, "leaf1", [0], offset=0)
    (port, frame), = leaf_round(tree, "leaf1", [1], offset=0)
    h, lanes = decode(frame[C.FRAME_HEADER_BYTES:], lay)
    assert port == UPLINK
    assert (h.msg_type, h.rank, h.count, h.offset, h.next_offset, h.exponent, h.bitmap, h.wire_token) == \
        (MsgType.CONTRIB, 0, 0, 0, lay.lanes, C.EXP_BIAS + 1, lay.full_bitmap, TOKEN)
    assert (lanes == 1 + 2).all()
    leaf1 = tree.nodes["leaf1"]
    assert frame[0:12] == mac_bytes(tree.nodes["spine"].mac) + mac_bytes(leaf1.mac)
    assert frame[26:30] == bytes(int(b) for b in leaf1.ip.split("."))           # from the leaf's own address
    assert tree.events("leaf1")[AggEvent.SENT_UP] == 1 and tree.events("leaf1")[AggEvent.ABSORBED] == 1


def test_retransmissions_at_a_leaf_before_and_after_the_result(spine_and_leaves):
    """Before the result came down a worker's retransmission sends the partial sum up again
    (RETX); the parent answers with the result by unicast, which the leaf multicasts down. After
    it, the leaf answers the worker itself and nothing goes up."""
    tree, lay = spine_and_leaves, spine_and_leaves.layout
    leaf_round(tree, "leaf1", [0, 1])                                  # partial sent up ... and lost
    leaf_round(tree, "leaf2", [2, 3])
    (port, again), = leaf_round(tree, "leaf1", [0], flags=Flags.RETX)
    h, lanes = decode(again[C.FRAME_HEADER_BYTES:], lay)
    assert port == UPLINK and h.flags & Flags.RETX and (lanes == 3).all()
    assert tree.events("leaf1")[AggEvent.RESENT_UP] == 1
    spine = tree.nodes["spine"]
    assert tree.inject("spine", spine.port_to("leaf1"), again) == []   # absorbed: the original was lost
    # leaf2's partial never arrived either: leaf2 resends, the spine completes and multicasts
    (_, again2), = leaf_round(tree, "leaf2", [3], flags=Flags.RETX)
    down = dict(tree.inject("spine", spine.port_to("leaf2"), again2))
    # the result to leaf1 is lost; leaf1's worker retransmits, leaf1 resends, the spine unicasts
    (_, third), = leaf_round(tree, "leaf1", [1], flags=Flags.RETX)
    (uport, unicast), = tree.inject("spine", spine.port_to("leaf1"), third)
    assert uport == spine.port_to("leaf1")
    assert Header.unpack(unicast[C.FRAME_HEADER_BYTES:]).flags & Flags.RETX
    assert tree.events("spine")[AggEvent.RESULT_UNICAST] == 1
    out = tree.inject("leaf1", UPLINK, unicast)
    assert sorted(p for p, _ in out) == [1, 2]
    for port, frame in out:
        _, rank, payload = tree.to_host("leaf1", port, frame)
        h, lanes = decode(payload, lay)
        assert (h.msg_type, h.flags, h.count, h.rank) == (MsgType.RESULT, 0, 4, rank)  # RETX not passed down
        assert (lanes == 1 + 2 + 3 + 4).all()
    assert len(tree.inject("leaf2", UPLINK, down[spine.port_to("leaf2")])) == 2
    # the result is the leaf's now: a retransmission is answered there, nothing goes up
    (port, frame), = leaf_round(tree, "leaf1", [0], flags=Flags.RETX)
    assert port == 1 and (decode(tree.to_host("leaf1", 1, frame)[2], lay)[1] == 10).all()
    assert tree.events("leaf1")[AggEvent.RESULT_UNICAST] == 1
    assert tree.events("leaf1")[AggEvent.RESENT_UP] == 2 and tree.events("leaf1")[AggEvent.RESULT_DOWN] == 1


def test_a_stale_or_duplicate_result_from_the_parent_is_dropped(spine_and_leaves):
    tree = spine_and_leaves
    to_leaf1, to_leaf2 = round_to_spine(tree)
    assert len(tree.inject("leaf1", UPLINK, to_leaf1)) == 2            # taken, down to ranks 0 and 1
    assert tree.inject("leaf1", UPLINK, to_leaf1) == []                # a duplicate: the copy has it
    assert tree.drops("leaf1") == {DropReason.STALE_RESULT: 1}
    # a copy never used (slot 1): no round waits there
    assert tree.inject("leaf2", UPLINK, edit(to_leaf2, slot=1)) == []
    # the next round, open on leaf1 (one of two workers in): no result yet
    leaf_round(tree, "leaf1", [0], ver=1, offset=2 * tree.layout.lanes)
    assert tree.inject("leaf1", UPLINK, edit(to_leaf1, ver=1, offset=2 * tree.layout.lanes)) == []
    # complete and sent up: a result for another offset is still not this copy's
    leaf_round(tree, "leaf1", [1], ver=1, offset=2 * tree.layout.lanes)
    assert tree.inject("leaf1", UPLINK, edit(to_leaf1, ver=1, offset=3 * tree.layout.lanes)) == []
    assert tree.drops("leaf1") == {DropReason.STALE_RESULT: 3} and tree.drops("leaf2") == {DropReason.STALE_RESULT: 1}
    assert len(tree.inject("leaf2", UPLINK, to_leaf2)) == 2            # the genuine one still goes down
    assert tree.events("leaf1")[AggEvent.RESULT_DOWN] == tree.events("leaf2")[AggEvent.RESULT_DOWN] == 1


def test_a_result_elsewhere_than_on_the_uplink_is_bad_type(spine_and_leaves, program):
    tree = spine_and_leaves
    to_leaf1, _ = round_to_spine(tree)
    assert tree.inject("leaf1", 1, to_leaf1) == []                     # from a worker's port
    assert tree.inject("leaf1", UPLINK + 1, to_leaf1) == []            # an unwired port
    assert tree.drops("leaf1") == {DropReason.BAD_TYPE: 2}
    spine = tree.nodes["spine"]
    assert tree.inject("spine", spine.port_to("leaf1"), to_leaf1) == []  # the root takes no result
    assert tree.drops("spine") == {DropReason.BAD_TYPE: 1}
    # a job without a tree entry (flat, as before) takes no result either, on any port
    tree.nodes["leaf2"].fabric.add_job(9, 2, slot_base=100, slot_count=1)
    assert tree.inject("leaf2", UPLINK, edit(to_leaf1, job_id=9, wire_token=0)) == []
    assert tree.drops("leaf2") == {DropReason.BAD_TYPE: 1}
    assert len(tree.inject("leaf1", UPLINK, to_leaf1)) == 2            # the right port still works


def test_a_result_from_the_parent_without_the_wire_token_is_dropped(spine_and_leaves):
    tree = spine_and_leaves
    to_leaf1, _ = round_to_spine(tree)
    assert tree.inject("leaf1", UPLINK, edit(to_leaf1, wire_token=TOKEN ^ 0x8000_0000)) == []
    assert tree.drops("leaf1") == {DropReason.BAD_WIRE_TOKEN: 1}
    assert tree.nodes["leaf1"].fabric.sw.register_read(N.HAVE_RESULT, 0) == 0
    out = tree.inject("leaf1", UPLINK, to_leaf1)
    assert len(out) == 2 and tree.nodes["leaf1"].fabric.sw.register_read(N.HAVE_RESULT, 0) == 1


# ---- the checks fail on a broken program ----------------------------------------------------------

def test_a_program_without_the_have_result_check_is_caught(tmp_path):
    """The same program with Slots' have_result condition removed takes a duplicate result from
    the parent and multicasts it down again: the lockstep model catches the first such frame."""
    broken = tmp_path / "p4src"
    broken.mkdir()
    for p in SOURCE.parent.glob("*.p4"):
        text = p.read_text()
        if p.name == "slots.p4":
            assert "|| has_result != 0 ||" in text
            text = text.replace("|| has_result != 0 ||", "||")
        (broken / p.name).write_text(text)
    lay = Layout(32, 8)
    json_path, _ = compile_program(tmp_path / "out", ("LANES=32", "SUBBLOCK=8"), source=broken / SOURCE.name)
    tree = TreeFabric(str(json_path), lay, TWO_LEAVES)
    tree.add_job(1, placement(2, 2), slot_count=2, mode=Mode.DENSE, wire_token=TOKEN)
    to_leaf1, _ = round_to_spine(tree)
    assert len(tree.inject("leaf1", UPLINK, to_leaf1)) == 2
    with pytest.raises(AssertionError, match=r"(?s)switch \[\(\d+, '.*\n model  \[\]$"):
        tree.inject("leaf1", UPLINK, to_leaf1)

