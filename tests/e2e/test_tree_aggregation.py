"""Aggregation across switches in Mininet (issue #23): a job's sums made hop by hop up the tree of
P4 switches, each leaf sending one partial sum up its uplink instead of all of its hosts' packets.

Bytes on an uplink are the kernel's counters of the leaf's port towards its parent (the switch's
interfaces live in the root namespace), over the tensor bytes the job allreduced."""
import pathlib
import time

import pytest
from workers import assert_exact, by_index, run_job

from p4reduce.mininet_topos.hostproc import follow
from p4reduce.protocol.job_api import JobApiClient

pytestmark = pytest.mark.root

ELEMENTS, TENSORS = 262144, 3          # 1 MiB per call and worker, three calls


def _counter(intf, field):
    return int(pathlib.Path(f"/sys/class/net/{intf}/statistics/{field}").read_text())


def uplinks(session):
    """{leaf name: its interface towards its parent} from the run's topology description."""
    desc = session.network.description()
    switches = {s["name"]: s for s in desc["switches"]}
    out = {}
    for s in desc["switches"]:
        for p in s["ports"]:
            if p["peer"] in switches and s.get("uplink_port") == p["port"]:
                out[s["name"]] = p["intf"]
    return out


def uplink_bytes(session, run):
    """Run `run()`; bytes each uplink carried up (tx) and down (rx) meanwhile."""
    ups = uplinks(session)
    before = {n: (_counter(i, "tx_bytes"), _counter(i, "rx_bytes")) for n, i in ups.items()}
    result = run()
    after = {n: (_counter(i, "tx_bytes"), _counter(i, "rx_bytes")) for n, i in ups.items()}
    return result, {n: (after[n][0] - before[n][0], after[n][1] - before[n][1]) for n in ups}


def job_description(session, name):
    return JobApiClient(session.api_addr).job(name)


def test_two_tier_job_is_summed_at_each_leaf_and_each_uplink_carries_the_tensor_once(session_factory):
    """8 workers, 4 per leaf: exact, the job's tree rooted at the spine with each leaf summing its
    4 hosts, and each leaf's uplink carrying ~1.06x the tensor each way per allreduce (all four
    hosts' packets, 4.3x, without the tree); the same job at the root only, for comparison."""
    session = session_factory(workers=8, topo="two-tier")
    hosts = by_index(session.network.hosts)
    tensor = ELEMENTS * 4 * TENSORS
    seen = {}

    def run():
        runs = run_job(session, hosts, "tree", "dense", elements=ELEMENTS, tensors=TENSORS, timeout=240,
                       start_only=True)
        deadline = time.monotonic() + 60
        while "tree" not in seen and time.monotonic() < deadline:
            desc = job_description(session, "tree")
            if "tree" in desc:
                seen.update(desc)
            time.sleep(0.05)
        return follow(runs, timeout=240)
    runs, moved = uplink_bytes(session, run)
    assert_exact(runs)
    p = session.network.prefix
    tree = seen.get("tree")
    assert tree is not None and tree["root"] == f"{p}spine", seen
    assert tree["switches"][f"{p}leaf1"]["children"] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert tree["switches"][f"{p}spine"]["children"] == [f"switch {p}leaf1", f"switch {p}leaf2"]
    assert set(moved) == {f"{p}leaf1", f"{p}leaf2"}, moved
    for leaf, (up, down) in moved.items():
        assert up <= 1.15 * tensor and down <= 1.15 * tensor, (leaf, up / tensor, down / tensor)
        assert up >= tensor and down >= tensor, (leaf, up / tensor, down / tensor)


def test_a_root_only_job_sends_every_hosts_packets_up(session_factory):
    session = session_factory(workers=8, topo="two-tier")
    hosts = by_index(session.network.hosts)
    tensor = ELEMENTS * 4 * TENSORS
    session.create_job("root", 8, "dense", slots=8, hosts=hosts, aggregation="root")
    runs, moved = uplink_bytes(session, lambda: run_job(session, hosts, "root", "dense", elements=ELEMENTS,
                                                        tensors=TENSORS, timeout=240, create=False))
    assert_exact(runs)
    assert "tree" not in job_description(session, "root")
    for leaf, (up, down) in moved.items():
        assert up >= 3.9 * tensor and down >= 3.9 * tensor, (leaf, up / tensor, down / tensor)
