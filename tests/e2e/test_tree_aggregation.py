"""Aggregation across switches in Mininet (issue #23): a job's sums made hop by hop up the tree of
P4 switches, each leaf sending one partial sum up its uplink instead of all of its hosts' packets.

Bytes on an uplink are the kernel's counters of the leaf's port towards its parent (the switch's
interfaces live in the root namespace), over the tensor bytes the job allreduced."""
import pathlib
import subprocess
import sys
import time

import pytest

from p4reduce.mininet_topos.hostproc import follow, read_available, start_on_hosts
from p4reduce.protocol.job_api import JobApiClient

from .workers import assert_exact, by_index, run_job

pytestmark = pytest.mark.root

ELEMENTS, TENSORS = 65536, 3           # 256 KiB per call and worker, three calls
CALLS = TENSORS + 1                    # the demo worker's untimed warm-up call, and the timed ones


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


def counters(session, switch):
    """The switch's aggregation events and drop reasons (the controller CLI), for failure messages."""
    out = []
    for name in ("ReduceIngress.agg_events", "ReduceIngress.drop_reasons"):
        out.append(subprocess.run([sys.executable, "-m", "p4reduce.controller", "counters", "--switch", switch,
                                   "--topology", str(session.description_path), name],
                                  capture_output=True, text=True, timeout=60).stdout)
    return "\n".join(out)


def job_description(session, name):
    return JobApiClient(session.api_addr).job(name)


def test_two_tier_job_is_summed_at_each_leaf_and_each_uplink_carries_the_tensor_once(session_factory):
    """8 workers, 4 per leaf: exact, the job's tree rooted at the spine with each leaf summing its
    4 hosts, and each leaf's uplink carrying ~1.06x the tensor each way per allreduce (all four
    hosts' packets, 4.3x, without the tree); the same job at the root only, for comparison."""
    session = session_factory(workers=8, topo="two-tier")
    hosts = by_index(session.network.hosts)
    tensor = ELEMENTS * 4 * CALLS
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
    # each leaf sums its own four hosts (ranks go by join order): the members' addresses say which
    by_ip = {m["ip"]: m["rank"] for m in seen["members"]}
    for leaf, first in ((f"{p}leaf1", 1), (f"{p}leaf2", 5)):
        want = sorted(by_ip[f"10.0.0.{i}"] for i in range(first, first + 4))
        assert tree["switches"][leaf]["children"] == [f"rank {r}" for r in want], tree
    assert tree["switches"][f"{p}spine"]["children"] == [f"switch {p}leaf1", f"switch {p}leaf2"]
    assert set(moved) == {f"{p}leaf1", f"{p}leaf2"}, moved
    for leaf, (up, down) in moved.items():
        why = (leaf, up / tensor, down / tensor)
        if not (tensor <= up <= 1.15 * tensor and tensor <= down <= 1.15 * tensor):
            print(leaf, counters(session, leaf), f"{p}spine", counters(session, f"{p}spine"))
        assert up <= 1.15 * tensor and down <= 1.15 * tensor, why
        assert up >= tensor and down >= tensor, why
    # the same job summed at the root only: each leaf sends all four hosts' packets up
    session.create_job("root", 8, "dense", slots=8, hosts=hosts, aggregation="root")
    runs, moved = uplink_bytes(session, lambda: run_job(session, hosts, "root", "dense", elements=ELEMENTS,
                                                        tensors=TENSORS, timeout=240, create=False))
    assert_exact(runs)
    for leaf, (up, down) in moved.items():
        assert up >= 3.9 * tensor and down >= 3.9 * tensor, (leaf, up / tensor, down / tensor)


def _tree_of(session, name, timeout=60):
    """The job's description once it shows a tree (the job is whole and its tree written)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            desc = job_description(session, name)
        except Exception:           # the controller restarting: its API not up yet
            desc = {}
        if "tree" in desc:
            return desc
        time.sleep(0.05)
    raise AssertionError(f"job {name} never showed a tree")


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_depth_three_tree_exact_with_loss_on_the_uplinks(session_factory, kind):
    """8 hosts under 4 leaves, 2 aggregation switches and a root, 3 % loss on every switch-to-switch
    link: every leaf and aggregation switch sums its children, losses on the uplinks are recovered
    at their level, every sum exact."""
    from p4reduce.mininet_topos.links import LinkOptions
    session = session_factory(workers=8, topo="tree", uplink=LinkOptions(loss_pct=3.0))
    hosts = by_index(session.network.hosts)
    runs = run_job(session, hosts, f"deep-{kind}", kind, elements=65536, tensors=3, density=0.2, timeout=240,
                   start_only=True)
    desc = _tree_of(session, f"deep-{kind}")
    assert_exact(follow(runs, timeout=240))
    p = session.network.prefix
    tree = desc["tree"]
    assert tree["root"] == f"{p}root" and len(tree["switches"]) == 7, tree
    assert sorted(tree["switches"][f"{p}root"]["children"]) == [f"switch {p}agg1", f"switch {p}agg2"]
    assert all(len(node["children"]) == 2 for node in tree["switches"].values())


def test_two_jobs_share_the_leaves_each_with_its_own_tree(session_factory):
    session = session_factory(workers=8, topo="two-tier")
    hosts = by_index(session.network.hosts)
    evens, odds = hosts[0::2], hosts[1::2]                 # each job has two hosts on each leaf
    a = run_job(session, evens, "left", "dense", elements=65536, tensors=3, timeout=240, start_only=True)
    b = run_job(session, odds, "right", "sparse", elements=65536, tensors=3, density=0.2, timeout=240,
                start_only=True)
    ta, tb = _tree_of(session, "left")["tree"], _tree_of(session, "right")["tree"]
    assert_exact(follow(a, timeout=240))
    assert_exact(follow(b, timeout=240))
    p = session.network.prefix
    for tree in (ta, tb):
        assert tree["root"] == f"{p}spine" and len(tree["switches"][f"{p}leaf1"]["children"]) == 2
    # the same leaf gives each job slots of its own
    sa, sb = ta["switches"][f"{p}leaf1"]["slots"], tb["switches"][f"{p}leaf1"]["slots"]
    assert sa["base"] + sa["count"] <= sb["base"] or sb["base"] + sb["count"] <= sa["base"], (sa, sb)


def _calls_done(run):
    """Timed calls a demo worker has finished, from its progress events ("tensor i/N")."""
    msgs = [str(e.get("message", "")) for e in run.events if str(e.get("message", "")).startswith("tensor ")]
    return int(msgs[-1].split()[1].split("/")[0]) if msgs else 0


def test_a_controller_restart_mid_job_keeps_the_tree(session_factory):
    """SIGKILL of the controller while an 8-worker tree job runs (every rank 3 calls in): the
    supervisor restarts it, it resumes the job from the root's entry (which lists the members) and
    its tree with the slots each switch still holds; the data plane never noticed: no rank left the
    switch, and the job finishes exact."""
    import os
    import signal

    from p4reduce.mininet_topos.hostproc import read_available
    said = []
    session = session_factory(workers=8, topo="two-tier", supervise=True, say=said.append)
    hosts = by_index(session.network.hosts)
    runs = run_job(session, hosts, "survivor", "dense", elements=131072, tensors=60, timeout=300,
                   start_only=True)
    before = _tree_of(session, "survivor")["tree"]
    deadline = time.monotonic() + 120
    while not all(_calls_done(r) >= 3 for r in runs):
        assert time.monotonic() < deadline and not any(r.eof for r in runs), [r.error for r in runs]
        read_available(runs, 0.1)
    os.kill(session.controller.pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not any("controller" in s and "restarted as pid" in s for s in said):
        assert time.monotonic() < deadline, said
        time.sleep(0.1)
    after = _tree_of(session, "survivor")["tree"]
    assert after == before, (before, after)
    done = follow(runs, timeout=300)
    assert_exact(done)
    assert all(r.result["calls_by_path"]["fallback"] == 0 and not r.result["fallback_episodes"] for r in done), \
        [(r.host, r.result["calls_by_path"], r.result["fallback_episodes"]) for r in done]


LAST_CALL_WORKER = pathlib.Path(__file__).with_name("last_call_worker.py")


def test_ranks_that_finish_first_and_leave_do_not_strand_their_peers_last_call(session_factory, tmp_path):
    """The job's last call: leaf2's ranks get their result and leave while the spine's result for
    leaf1 is lost (every packet from the spine to leaf1 dropped until they have left); leaf1's
    ranks must still get theirs from the spine when they retransmit. A leave that took the tree
    down stranded them (CI, two-tier at 1 % uplink loss: ranks 0-3 'got no result from the
    switch'): with leaf1's entries gone, the spine took their retransmissions as new rounds."""
    session = session_factory(workers=8, topo="two-tier")
    hosts = by_index(session.network.hosts)
    session.create_job("last", 8, "dense", slots=8, hosts=hosts)
    release = tmp_path / "release"
    runs = start_on_hosts(hosts, lambda h: [sys.executable, str(LAST_CALL_WORKER), str(release), session.api_addr,
                                            "last", "8", h.IP()])
    try:
        desc = _tree_of(session, "last")
        p = session.network.prefix
        by_ip = {m["ip"]: m["rank"] for m in desc["members"]}
        leaf1_ranks = sorted(by_ip[f"10.0.0.{i}"] for i in range(1, 5))
        assert desc["tree"]["switches"][f"{p}leaf1"]["children"] == [f"rank {r}" for r in leaf1_ranks], desc["tree"]
        spine = next(s for s in session.network.description()["switches"] if s["name"] == f"{p}spine")
        to_leaf1 = next(port["intf"] for port in spine["ports"] if port["peer"] == f"{p}leaf1")
        table = f"{p}drop_to_leaf1".replace("-", "_")     # every frame the spine sends to leaf1
        script = (f"table netdev {table} {{\n  chain out {{ type filter hook egress device \"{to_leaf1}\" "
                  "priority 0; counter drop; }\n}\n")
        subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True)
        try:
            release.touch()
            leaf2 = [r for r in runs if r.host in {h.name for h in hosts[4:]}]
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(r.eof for r in leaf2):
                read_available(runs, 0.1)
            assert all(r.result and r.result["exact"] for r in leaf2), [(r.host, r.error, r.text[-3:]) for r in leaf2]
            while time.monotonic() < deadline and len(job_description(session, "last")["members"]) > 4:
                time.sleep(0.05)                      # the controller has taken their leaves
            left = job_description(session, "last")
            read_available(runs, 0.1)
            ended = [(r.host, r.error, r.result) for r in runs if r not in leaf2 and r.eof]
            assert not ended, f"leaf1's ranks ended before the spine's results could reach leaf1: {ended}"
            assert sorted(m["rank"] for m in left["members"]) == leaf1_ranks and "tree" in left, left
        finally:
            subprocess.run(["nft", "delete", "table", "netdev", table], check=False)
        follow(runs, timeout=60)
    finally:
        for r in runs:
            if r.proc.poll() is None:
                r.proc.kill()
    problems = [(r.host, r.error, r.text[-3:]) for r in runs if not (r.result and r.result["exact"])]
    assert not problems, (problems, counters(session, f"{p}spine"), counters(session, f"{p}leaf1"))
