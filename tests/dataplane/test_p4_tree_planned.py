"""Trees as the controller plans them (controller/aggregation_tree.py) on the P4 program (issue
#23, docs/protocol.md section 11): planned from a topology and written with the controller's entry
builder, each switch with a slot range of its own, so what runs here is what the controller
installs (tests/dataplane/test_p4_tree.py checks the program against the reference model, switch
by switch). Workers are the reference workers behind a lossy network; uplinks lose and duplicate
too; every result is checked against numpy's sum and the protocol's promises."""
import collections

import numpy as np
import pytest
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun

from p4reduce.controller.aggregation_tree import plan
from p4reduce.controller.engine_writer import EngineJobWriter
from p4reduce.controller.job_entries import JobSpec, MemberSpec
from p4reduce.controller.topology import Host, Switch, Topology
from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC
from p4reduce.protocol.constants import AggEvent, DropReason, Mode, MsgType
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.wire import Header, unpack_header

UPLINK = 9          # every switch's port towards its parent


class TreeNet:
    """Switches running the program, wired as `parents` says ({switch: parent or None}), with
    `hosts` ({rank: leaf}) on ports 1.. of their leaf. Jobs are installed as the controller would:
    planned, every node's entries from the entry builder, each switch its own slot base."""

    def __init__(self, program, parents, hosts, uplink_loss=0.0, uplink_dup=0.0, seed=0):
        from p4sim.engine import Switch as Engine
        self.parents = parents
        self.sw = {name: Engine(program) for name in parents}
        root = next(n for n, p in parents.items() if p is None)
        switches, links = [], []
        self.port_of = {}                                  # (switch, port) -> (peer switch, peer port)
        below = collections.defaultdict(list)
        for name, parent in parents.items():
            if parent is not None:
                below[parent].append(name)
        for k, name in enumerate(sorted(parents), start=1):
            ip, mac = (SERVICE_IP, SERVICE_MAC) if name == root else (f"10.0.1.{k}", f"00:00:00:00:02:{k:02x}")
            switches.append(Switch(name, "127.0.0.1:1", k, ip=ip, mac=mac, aggregate=name == root))
        for parent, kids in below.items():
            for j, kid in enumerate(sorted(kids), start=20):   # a parent's ports towards children: 20..
                links.append((kid, UPLINK, parent, j))
                self.port_of[(kid, UPLINK)] = (parent, j)
                self.port_of[(parent, j)] = (kid, UPLINK)
        host_list, self.hosts, per_leaf = [], {}, collections.Counter()
        for rank, leaf in sorted(hosts.items()):
            per_leaf[leaf] += 1
            h = dict(leaf=leaf, port=per_leaf[leaf], ip=f"10.0.0.{rank + 1}", mac=f"02:00:00:00:01:{rank + 1:02x}",
                     udp=40000 + rank)
            self.hosts[rank] = h
            host_list.append(Host(f"h{rank + 1}", h["ip"], h["mac"], leaf, h["port"]))
        self.topology = Topology(switches, host_list, links)
        self.by_addr = {(h["ip"], h["udp"]): r for r, h in self.hosts.items()}
        self.rng = np.random.default_rng(seed)
        self.uplink_loss, self.uplink_dup = uplink_loss, uplink_dup
        self.crossed = collections.Counter()               # (child switch, "up" | "down") -> frames
        self.tokens = {}

    def install(self, job_id, slot_count, mode, wire_token=0, ranks=None, tree=True):
        """Plan the job's tree over `ranks` and write every node; returns the JobTree."""
        ranks = sorted(self.hosts) if ranks is None else ranks
        members = {r: MemberSpec(r, self.hosts[r]["ip"], self.hosts[r]["udp"], self.hosts[r]["mac"],
                                 self.hosts[r]["port"]) for r in ranks}
        job_tree = plan(self.topology, members)
        for k, node in enumerate(job_tree.bottom_up()):
            base = 3 * k + job_id            # each switch its own slot range
            spec = JobSpec(job_id, len(ranks), base, slot_count, mode, wire_token)
            writer = EngineJobWriter(self.sw[node.switch])
            writer.install(spec, list(node.children))
            if tree:
                writer.set_tree(job_id, len(node.children), node.uplink)
        self.tokens[job_id] = wire_token
        return job_tree

    def send(self, job_id, rank, payload):
        """A worker's datagram into the network; returns what reaches the workers."""
        h = self.hosts[rank]
        frame = udp_frame(h["mac"], SERVICE_MAC, h["ip"], SERVICE_IP, h["udp"], C.AGG_UDP_PORT, payload)
        return self.inject(h["leaf"], h["port"], frame)

    def inject(self, switch, port, frame):
        delivered, queue = [], collections.deque([(switch, port, frame)])
        while queue:
            sw, port, frame = queue.popleft()
            for out_port, out in self.sw[sw].process(port, frame):
                peer = self.port_of.get((sw, out_port))
                if peer is None:                            # a host port: a worker's result
                    udp = parse_udp_frame(out)
                    r = self.by_addr[(udp.dst_ip, udp.dport)]
                    assert (self.hosts[r]["leaf"], self.hosts[r]["port"]) == (sw, out_port)
                    assert udp.src_ip == SERVICE_IP        # workers take results from the service address
                    delivered.append((unpack_header(udp.payload)[2], r, udp.payload))
                    continue
                child = sw if out_port == UPLINK else peer[0]
                self.crossed[(child, "up" if out_port == UPLINK else "down")] += 1
                if self.rng.random() < self.uplink_loss:
                    continue
                copies = 2 if self.rng.random() < self.uplink_dup else 1
                queue.extend([(peer[0], peer[1], out)] * copies)
        return delivered

    def events(self, switch, event):
        return self.sw[switch].counter_read(N.AGG_EVENTS, event)[0]

    def drops(self, switch, reason):
        return self.sw[switch].counter_read(N.DROP_REASONS, reason)[0]


TWO_TIER = {"leaf1": "spine", "leaf2": "spine", "spine": None}
DEPTH3 = {"root": None, "agg1": "root", "agg2": "root", "leaf1": "agg1", "leaf2": "agg1",
          "leaf3": "agg2", "leaf4": "agg2"}


def tensors_for(n, length, density, seed):
    rng = np.random.default_rng(seed)
    return [(rng.integers(-2 ** 20, 2 ** 20, length) * (rng.random(length) < density)).astype(np.int32)
            for _ in range(n)]


@pytest.mark.parametrize("mode", [Mode.DENSE, Mode.SPARSE])
def test_two_tier_each_leaf_sends_one_partial_sum_per_round(program, layout, mode):
    n = 6
    net = TreeNet(program, TWO_TIER, {r: "leaf1" if r < 3 else "leaf2" for r in range(n)})
    tree = net.install(1, 3, mode)
    assert tree.root == "spine"
    tensors = tensors_for(n, 23 * layout.lanes - 5, 0.3 if mode == Mode.SPARSE else 1.0, seed=1)
    run = JobRun(tensors, 1, 3, mode, layout=layout)
    LossyNetwork(net.send, seed=1).run({1: run})
    assert (run.results() == np.sum(tensors, axis=0)).all()
    rounds = net.events("spine", AggEvent.RESULT_MULTICAST)
    assert rounds > 0
    for leaf in ("leaf1", "leaf2"):
        # one contribution up and one result down per round: the tensor once each way
        assert net.crossed[(leaf, "up")] == rounds == net.events(leaf, AggEvent.SENT_UP)
        assert net.crossed[(leaf, "down")] == rounds == net.events(leaf, AggEvent.RESULT_DOWN)
        assert net.events(leaf, AggEvent.FORWARDED) == 0
    assert net.events("spine", AggEvent.ABSORBED) == rounds       # the other leaf's contribution


@pytest.mark.parametrize("mode", [Mode.DENSE, Mode.SPARSE])
def test_depth_three_tree_exact_under_loss_and_duplicates_on_every_link(program, layout, mode):
    n = 8
    net = TreeNet(program, DEPTH3, {r: f"leaf{r // 2 + 1}" for r in range(n)}, uplink_loss=0.08,
                  uplink_dup=0.05, seed=3)
    tree = net.install(1, 2, mode, wire_token=0x5EC2E7)
    assert [c.switch for c in tree.nodes["root"].children] == ["agg1", "agg2"]
    tensors = tensors_for(n, 17 * layout.lanes + 3, 0.25 if mode == Mode.SPARSE else 1.0, seed=5)
    run = JobRun(tensors, 1, 2, mode, layout=layout)
    run.wire_token = 0x5EC2E7
    lossy = LossyNetwork(net.send, seed=3, loss=0.08, dup=0.05)
    lossy.run({1: run}, max_timeouts=5000)
    assert (run.results() == np.sum(tensors, axis=0)).all()
    resent_up = sum(net.events(s, AggEvent.RESENT_UP) for s in DEPTH3)
    duplicates = sum(net.drops(s, DropReason.DUPLICATE_PENDING) + net.drops(s, DropReason.STALE_RESULT)
                     for s in DEPTH3)
    assert resent_up > 0 and duplicates > 0, (resent_up, duplicates)   # recovery ran, at every level


def test_two_jobs_share_the_leaves_and_stay_apart(program, layout):
    n = 4
    net = TreeNet(program, TWO_TIER, {r: "leaf1" if r % 2 == 0 else "leaf2" for r in range(n)})
    net.install(1, 2, Mode.DENSE, wire_token=11)
    net.install(2, 3, Mode.SPARSE, wire_token=22)
    t1 = tensors_for(n, 9 * layout.lanes, 1.0, seed=7)
    t2 = tensors_for(n, 11 * layout.lanes, 0.3, seed=8)
    runs = {1: JobRun(t1, 1, 2, Mode.DENSE, layout=layout), 2: JobRun(t2, 2, 3, Mode.SPARSE, layout=layout)}
    runs[1].wire_token, runs[2].wire_token = 11, 22
    LossyNetwork(net.send, seed=9, loss=0.05, dup=0.05).run(runs, max_timeouts=3000)
    assert (runs[1].results() == np.sum(t1, axis=0)).all()
    assert (runs[2].results() == np.sum(t2, axis=0)).all()


def _one_round(net, layout, job_id=1, token=0):
    """Every worker sends block 0 on slot 0: returns the leaf1 uplink frames that went down."""
    results = []
    for r in sorted(net.hosts):
        h = Header(job_id=job_id, rank=r, slot=0, ver=0, offset=0, bitmap=layout.full_bitmap, wire_token=token)
        lanes = np.full(layout.lanes, r + 1, np.int32)
        from p4reduce.protocol.wire import encode
        results += net.send(job_id, r, encode(h, lanes, layout))
    return results


def test_a_result_from_the_parent_counts_only_once_only_on_the_uplink_and_only_with_the_token(program, layout):
    n = 4
    net = TreeNet(program, TWO_TIER, {r: "leaf1" if r < 2 else "leaf2" for r in range(n)})
    net.install(1, 2, Mode.DENSE, wire_token=77)
    down = []
    spine, leaf1 = net.sw["spine"], net.sw["leaf1"]
    original = spine.process

    def spy(port, frame):
        out = original(port, frame)
        down.extend(f for p, f in out if p == 20)     # out of the spine port towards leaf1
        return out
    spine.process = spy
    results = _one_round(net, layout, token=77)
    assert len(results) == n and all(len(set(p[24:])) > 0 for _, _, p in results)
    result_frame = next(f for f in down if unpack_header(parse_udp_frame(f).payload)[0] == MsgType.RESULT)
    # the same result again (a late duplicate): the copy already holds it
    assert leaf1.process(UPLINK, result_frame) == []
    assert net.drops("leaf1", DropReason.STALE_RESULT) == 1
    # a result arriving on a host port is not the parent's
    assert leaf1.process(1, result_frame) == []
    assert net.drops("leaf1", DropReason.BAD_TYPE) == 1
    # the parent's result without the job's wire token adds nothing
    udp = parse_udp_frame(result_frame)
    forged = bytearray(udp.payload)
    forged[20:24] = (78).to_bytes(4, "big")
    frame = udp_frame("00:00:00:00:01:fe", "00:00:00:00:02:01", SERVICE_IP, udp.dst_ip, C.AGG_UDP_PORT,
                      C.AGG_UDP_PORT, bytes(forged))
    assert leaf1.process(UPLINK, frame) == []
    assert net.drops("leaf1", DropReason.BAD_WIRE_TOKEN) == 1
