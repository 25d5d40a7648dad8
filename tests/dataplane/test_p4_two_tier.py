"""Two leaves under a spine, every switch running p4reduce: leaves forward contributions up to the
aggregating spine (their jobs table is empty) and results back down, so the all-reduce works
across switches exactly as on one."""
import json

import numpy as np
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun

from p4reduce.controller.engine_writer import EngineJobWriter
from p4reduce.controller.job_entries import JobSpec, MemberSpec
from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.addressing import SERVICE_IP as SWITCH_IP
from p4reduce.protocol.addressing import SERVICE_MAC as SWITCH_MAC
from p4reduce.protocol.constants import AggEvent, Mode
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.wire import Header, decode, encode

UPLINK = 9                       # leaf port towards the spine
SPINE_PORT = {"leaf1": 1, "leaf2": 2}


class TwoTier:
    """Workers 0..n-1 alternate between leaf1 and leaf2 (leaf port = rank // 2 + 1)."""

    def __init__(self, program, n, job_id=1, slot_count=3, mode=Mode.SPARSE, guard=False):
        from p4sim.engine import Switch
        self.sw = {name: Switch(program) for name in ("leaf1", "leaf2", "spine")}
        self.hosts = {}
        for r in range(n):
            leaf = "leaf1" if r % 2 == 0 else "leaf2"
            self.hosts[r] = dict(leaf=leaf, port=r // 2 + 1, ip=f"10.0.{r // 200}.{r % 200 + 1}",
                                 mac=f"02:00:00:00:01:{r + 1:02x}", udp=40000 + r)
        for leaf in ("leaf1", "leaf2"):
            sw = self.sw[leaf]
            sw.table_add(N.IPV4_ROUTES, {"hdr.ipv4.dstAddr": f"{SWITCH_IP}/32"}, N.FORWARD, {"port": UPLINK})
        spine = self.sw["spine"]
        members = []
        for r, h in self.hosts.items():
            self.sw[h["leaf"]].table_add(N.IPV4_ROUTES, {"hdr.ipv4.dstAddr": f"{h['ip']}/32"}, N.FORWARD,
                                         {"port": h["port"]})
            if guard:                                       # leaves guard their host ports
                self.sw[h["leaf"]].table_add(N.SOURCE_GUARD, {N.SOURCE_GUARD_KEY[0]: h["port"]},
                                             N.HOST_SOURCE, {"ip": h["ip"]})
            spine.table_add(N.IPV4_ROUTES, {"hdr.ipv4.dstAddr": f"{h['ip']}/32"}, N.FORWARD,
                            {"port": SPINE_PORT[h["leaf"]]})
            # the spine binds each worker to the port its packets arrive on: its leaf's
            members.append(MemberSpec(r, h["ip"], h["udp"], h["mac"], port=SPINE_PORT[h["leaf"]]))
        EngineJobWriter(spine).install(JobSpec(job_id, n, 0, slot_count, mode), members)
        self.by_addr = {(h["ip"], h["udp"]): r for r, h in self.hosts.items()}
        self.job_id = job_id

    def send(self, job_id, rank, payload):
        """Host -> leaf -> spine -> leaves -> hosts; returns what reaches the hosts."""
        h = self.hosts[rank]
        frame = udp_frame(h["mac"], SWITCH_MAC, h["ip"], SWITCH_IP, h["udp"], C.AGG_UDP_PORT, payload)
        up = self.sw[h["leaf"]].process(h["port"], frame)
        assert up == [(UPLINK, frame)]                      # the leaf passes it up unchanged
        delivered = []
        for spine_port, down in self.sw["spine"].process(SPINE_PORT[h["leaf"]], frame):
            leaf = "leaf1" if spine_port == 1 else "leaf2"
            for host_port, result in self.sw[leaf].process(UPLINK, down):
                udp = parse_udp_frame(result)
                r = self.by_addr[(udp.dst_ip, udp.dport)]
                assert (self.hosts[r]["leaf"], self.hosts[r]["port"]) == (leaf, host_port)
                delivered.append((job_id, r, udp.payload))
        return delivered


def test_allreduce_across_leaves_and_spine(compiled, layout):
    program = json.loads(compiled.read_text())
    n = 6
    net = TwoTier(program, n)
    rng = np.random.default_rng(4)
    length = 22 * layout.lanes - 4
    tensors = [(rng.integers(-50, 50, length) * (rng.random(length) < 0.1)).astype(np.int32) for _ in range(n)]
    run = JobRun(tensors, 1, 3, Mode.SPARSE, layout=layout)
    LossyNetwork(net.send, seed=4, loss=0.05, dup=0.05).run({1: run})
    assert (run.results() == np.sum(tensors, axis=0)).all()
    leaf_events = net.sw["leaf1"].counter_read(N.AGG_EVENTS, AggEvent.FORWARDED)[0]
    assert leaf_events > 0 and net.sw["leaf1"].counter_read(N.AGG_EVENTS, AggEvent.ABSORBED)[0] == 0
    assert net.sw["spine"].counter_read(N.AGG_EVENTS, AggEvent.RESULT_MULTICAST)[0] > 0


def test_spine_drops_a_worker_spoofed_from_the_other_leaf(compiled, layout):
    """The spine binds each worker to the uplink its packets arrive on: a host under leaf2 sending
    with the addresses of a leaf1 worker reaches the spine on the wrong port and counts nothing."""
    program = json.loads(compiled.read_text())
    net = TwoTier(program, 4, slot_count=1, mode=Mode.DENSE)
    spine = net.sw["spine"]
    block = np.full(layout.lanes, 7, np.int32)
    victim = net.hosts[0]                                  # rank 0, under leaf1
    forged = udp_frame("02:00:00:00:0e:0e", SWITCH_MAC, victim["ip"], SWITCH_IP, victim["udp"],
                       C.AGG_UDP_PORT, encode(Header(job_id=1, rank=0, bitmap=layout.full_bitmap), block, layout))
    up = net.sw["leaf2"].process(7, forged)                # an attacker on leaf2's port 7
    assert up == [(UPLINK, forged)]
    assert spine.process(SPINE_PORT["leaf2"], forged) == []
    assert spine.counter_read(N.DROP_REASONS, C.DropReason.SPOOFED_PORT)[0] == 1
    assert spine.register_read(N.SEEN, 0) == 0 and spine.register_read(N.COUNT, 0) == 0
    # the real rank 0 is still admitted, and the round completes with the genuine sums only
    for r in range(4):
        out = net.send(1, r, encode(Header(job_id=1, rank=r, bitmap=layout.full_bitmap),
                                    np.full(layout.lanes, r + 1, np.int32), layout))
    assert len(out) == 4 and all((decode(p, layout)[1] == 10).all() for _, _, p in out)
