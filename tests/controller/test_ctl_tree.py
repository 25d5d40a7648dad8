"""A job's aggregation tree (issue #23): planning it from the topology (controller/aggregation_tree.py) and
writing it to the switches through JobNetwork (controller/network.py), against recording
programmers; the data plane itself is tested in tests/dataplane/test_p4_tree.py and on Mininet."""
import pytest

from p4reduce.controller.aggregation_tree import NoTree, plan
from p4reduce.controller.errors import SlotsExhausted
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.network import JobNetwork, SwitchNode
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import Host, Switch, Topology
from p4reduce.protocol.constants import AGG_UDP_PORT
from p4reduce.protocol.wire import Layout

LAYOUT = Layout(256, 16)


def _sw(name, k, aggregate=False):
    ip, mac = ("10.0.0.254", "00:00:00:00:01:fe") if aggregate else (f"10.0.1.{k}", f"00:00:00:00:02:{k:02x}")
    return Switch(name, f"127.0.0.1:{9559 + k}", k, ip=ip, mac=mac, aggregate=aggregate)


def two_tier(per_leaf=4, leaves=2, on_spine=0):
    """leaf1..leafL (uplink port per_leaf+1) under spine (port j towards leaf j); hosts in order."""
    switches = [_sw(f"leaf{j}", j) for j in range(1, leaves + 1)] + [_sw("spine", 9, aggregate=True)]
    hosts, links, i = [], [], 1
    for j in range(1, leaves + 1):
        for port in range(1, per_leaf + 1):
            hosts.append(Host(f"h{i}", f"10.0.0.{i}", f"00:00:00:00:00:{i:02x}", f"leaf{j}", port))
            i += 1
        links.append((f"leaf{j}", per_leaf + 1, "spine", j))
    for k in range(on_spine):
        hosts.append(Host(f"h{i}", f"10.0.0.{i}", f"00:00:00:00:00:{i:02x}", "spine", leaves + 1 + k))
        i += 1
    return Topology(switches, hosts, links)


def depth3():
    """root <- agg1, agg2 <- leaf1..leaf4 <- 2 hosts each (ports 1, 2; uplink 3)."""
    switches = [_sw("root", 9, aggregate=True), _sw("agg1", 5), _sw("agg2", 6)] + \
        [_sw(f"leaf{j}", j) for j in range(1, 5)]
    links = [("agg1", 3, "root", 1), ("agg2", 3, "root", 2),
             ("leaf1", 3, "agg1", 1), ("leaf2", 3, "agg1", 2), ("leaf3", 3, "agg2", 1), ("leaf4", 3, "agg2", 2)]
    hosts = [Host(f"h{i}", f"10.0.0.{i}", f"00:00:00:00:00:{i:02x}", f"leaf{(i - 1) // 2 + 1}", (i - 1) % 2 + 1)
             for i in range(1, 9)]
    return Topology(switches, hosts, links)


class M:
    def __init__(self, rank, ip, udp_port=40000, mac=None, port=None):
        self.rank, self.ip, self.udp_port, self.mac, self.port = rank, ip, udp_port, mac, port


def members(n, ranks=None):
    ranks = ranks if ranks is not None else range(n)
    return {r: M(r, f"10.0.0.{r + 1}") for r in ranks}


def test_two_tier_tree_leaves_sum_their_hosts_and_the_spine_sums_the_leaves():
    tree = plan(two_tier(), members(8))
    assert tree.root == "spine"
    assert [n.switch for n in tree.bottom_up()] == ["leaf1", "leaf2", "spine"]
    leaf1, leaf2, spine = (tree.nodes[s] for s in ("leaf1", "leaf2", "spine"))
    assert [(c.rank, c.port, c.switch) for c in leaf1.children] == [(0, 1, None), (1, 2, None), (2, 3, None),
                                                                      (3, 4, None)]
    assert leaf2.ranks == (4, 5, 6, 7)
    # the spine's children are the leaves, each as the lowest rank below it, on its port towards it
    assert [(c.rank, c.port, c.switch, c.ip, c.udp_port) for c in spine.children] == \
        [(0, 1, "leaf1", "10.0.1.1", AGG_UDP_PORT), (4, 2, "leaf2", "10.0.1.2", AGG_UDP_PORT)]
    assert spine.uplink is None and spine.parent is None
    up = leaf2.uplink
    assert (up.port, up.rank, up.ip, up.src_mac, up.dst_mac) == (5, 4, "10.0.1.2", "00:00:00:00:02:02",
                                                                  "00:00:00:00:01:fe")
    assert tree.to_json()["switches"]["leaf1"] == {"parent": "spine", "rank_at_parent": 0,
                                                   "children": ["rank 0", "rank 1", "rank 2", "rank 3"]}


def test_the_root_is_the_lowest_switch_above_every_member():
    tree = plan(two_tier(), members(3, ranks=[0, 1, 3]))       # h1, h2, h4: all on leaf1
    assert tree.root == "leaf1" and list(tree.nodes) == ["leaf1"]
    assert tree.nodes["leaf1"].uplink is None and tree.nodes["leaf1"].ranks == (0, 1, 3)
    tree = plan(depth3(), {0: M(0, "10.0.0.1"), 1: M(1, "10.0.0.3")})   # leaf1 and leaf2: under agg1
    assert tree.root == "agg1" and set(tree.nodes) == {"agg1", "leaf1", "leaf2"}


def test_depth_three_tree_and_a_host_on_the_spine_itself():
    tree = plan(depth3(), members(8))
    assert tree.root == "root"
    order = [n.switch for n in tree.bottom_up()]
    assert order[:4] == ["leaf1", "leaf2", "leaf3", "leaf4"] and order[4:] == ["agg1", "agg2", "root"]
    assert [c.switch for c in tree.nodes["agg2"].children] == ["leaf3", "leaf4"]
    assert [c.rank for c in tree.nodes["agg2"].children] == [4, 6]
    assert tree.nodes["agg2"].uplink.rank == 4 and tree.nodes["agg2"].uplink.port == 3
    assert [(c.rank, c.switch) for c in tree.nodes["root"].children] == [(0, "agg1"), (4, "agg2")]
    mixed = plan(two_tier(per_leaf=2, on_spine=1), members(5))   # rank 4 sits on the spine
    assert [(c.rank, c.switch) for c in mixed.nodes["spine"].children] == [(0, "leaf1"), (2, "leaf2"), (4, None)]


def test_no_tree_for_unknown_hosts_or_switches_without_an_address():
    with pytest.raises(NoTree, match="10.9.9.9 is not a host"):
        plan(two_tier(), {0: M(0, "10.0.0.1"), 1: M(1, "10.9.9.9")})
    topo = two_tier()
    topo.switches["leaf2"].ip = None
    with pytest.raises(NoTree, match="switch leaf2 has no address"):
        plan(topo, members(8))


# -- writing trees: JobNetwork against recording programmers ------------------------------------------


class Recorder:
    """A JobProgrammer that records what it is asked to write."""

    def __init__(self, name, log):
        self.name, self.log, self.registers = name, log, None

    def __getattr__(self, op):
        if op.startswith("_"):
            raise AttributeError(op)

        def record(*args, **kw):
            self.log.append((self.name, op, kw.get("own_job_entry")))
            return None
        return record


def network(topo, slots=64, leaf_slots=64):
    log = []
    center = SwitchNode(topo.aggregation_switch.name, Recorder(topo.aggregation_switch.name, log),
                        SlotPool(slots), LAYOUT)
    others = {n: SwitchNode(n, Recorder(n, log), SlotPool(leaf_slots), LAYOUT)
              for n in topo.switches if n != center.name}
    messages = []
    net = JobNetwork(center, others, topo, log=messages.append)
    mgr = JobManager(center.pool, net, topo, layout=LAYOUT)
    return mgr, net, log, messages


def join_all(mgr, n, name="j", **create):
    mgr.create(name, n, "dense", slots=8, **create)
    for r in range(n):
        mgr.join(name, ip=f"10.0.0.{r + 1}", udp_port=40000)
    return mgr.jobs[name]


def test_a_whole_job_gets_its_tree_children_first_and_keeps_it_when_a_rank_leaves():
    """A leave removes only that rank's entries at its leaf: the tree, its slots and every round
    in them stay (a peer still finishing the job's last call through the tree is answered; taking
    the tree down there stranded the ranks of the other leaf, CI 2026-11-28); a rank joining
    again brings the job back to the center until it is whole, then the tree is planned again."""
    mgr, net, log, messages = network(two_tier())
    job = join_all(mgr, 8)
    assert job.tree is not None and job.tree.root == "spine"
    ops = [(sw, op, own) for sw, op, own in log if op in ("install_node", "flat_members", "restore_job_entry")]
    assert ops == [("spine", "flat_members", None), ("leaf1", "install_node", True),
                   ("leaf2", "install_node", True), ("spine", "install_node", False),
                   ("spine", "restore_job_entry", None)]
    assert net.nodes["leaf1"].pool.owners()["j"].count == 8      # each switch of the tree gives the job slots
    desc = mgr.status("j")
    assert desc["aggregation"] == "tree" and desc["tree"]["root"] == "spine"
    assert desc["tree"]["switches"]["leaf2"]["children"] == ["rank 4", "rank 5", "rank 6", "rank 7"]
    assert "members" in job.descriptor()        # a restarted controller finds them below the spine
    log.clear()
    mgr.leave("j", 5)
    assert job.tree is not None and net.nodes["leaf1"].pool.owners()["j"].count == 8
    assert [(sw, op) for sw, op, _ in log] == [("leaf2", "remove_child"), ("spine", "restore_job_entry")]
    assert sorted(job.tree_absent) == [5] and [m["rank"] for m in job.descriptor()["absent"]] == [5]
    mgr.leave("j", 6)
    assert sorted(job.tree_absent) == [5, 6] and job.tree is not None
    log.clear()
    mgr.join("j", ip="10.0.0.6", udp_port=40000)        # rank 5 back: the job is not whole yet
    assert job.tree is None and not job.tree_absent and "j" not in net.nodes["leaf1"].pool.owners()
    assert [(sw, op) for sw, op, _ in log if op in ("remove_node", "reset_slots", "flat_members", "add_member")] == \
        [("spine", "remove_node"), ("leaf2", "remove_node"), ("leaf1", "remove_node"), ("spine", "reset_slots"),
         ("spine", "flat_members"), ("spine", "add_member")]
    mgr.join("j", ip="10.0.0.7", udp_port=40000)        # whole again: the tree planned again
    assert job.tree is not None
    mgr.end("j")
    assert "j" not in net.nodes["leaf2"].pool.owners()
    assert any("aggregated as a tree rooted at spine" in m for m in messages)


def test_root_only_jobs_and_switches_without_free_slots_stay_at_the_center():
    mgr, net, log, messages = network(two_tier())
    job = join_all(mgr, 8, aggregation="root")
    assert job.tree is None and not any(op == "install_node" for _, op, _ in log)
    assert mgr.status("j")["aggregation"] == "root"
    mgr2, net2, log2, messages2 = network(two_tier(), leaf_slots=4)    # 8 wanted, 4 on each leaf
    job2 = join_all(mgr2, 8)
    assert job2.tree is None and not any(op == "install_node" for _, op, _ in log2)
    assert not net2.nodes["leaf1"].pool.owners()          # what was taken is given back
    assert any("no tree" in m and "wants 8 slots" in m for m in messages2)


def test_the_aggregation_field_is_checked():
    mgr, *_ = network(two_tier())
    with pytest.raises(Exception, match="field 'aggregation': must be one of tree, root"):
        mgr.create("j", 2, "dense", aggregation="ring")


def test_slots_exhausted_is_what_a_full_leaf_raises():
    pool = SlotPool(4)
    with pytest.raises(SlotsExhausted):
        pool.allocate("j", 8)


def test_the_tree_is_shown_by_the_controller_cli_and_the_run_cli():
    from p4reduce.controller.report import jobs_text
    from p4reduce.mininet_topos.runcli import jobs_table
    mgr, *_ = network(two_tier())
    join_all(mgr, 8)
    listed = mgr.list()
    for text in (jobs_text(listed), jobs_table(listed)):
        assert "j: aggregated as a tree rooted at spine" in text
        assert "leaf2      sums rank 4, rank 5, rank 6, rank 7; slots [0, 8) -> spine as rank 4" in text
        assert "spine      sums switch leaf1, switch leaf2; slots [0, 8) (root)" in text
    mgr.leave("j", 0)
    assert "j: aggregated as a tree rooted at spine" in jobs_text(mgr.list())     # kept for the others
    mgr.leave("j", 1)
    mgr.join("j", ip="10.0.0.1", udp_port=40000)                  # back at the center until whole
    assert "tree" not in jobs_text(mgr.list())


def test_a_restarted_controller_resumes_a_tree_whose_ranks_left_with_their_places_in_it():
    """The center's descriptor lists the members and those that left (`absent`); adopting it, a
    restarted controller plans the same tree and writes back only the present members' entries;
    unusable records read back are skipped, each one said."""
    from p4reduce.controller.recovery import adopt_jobs
    mgr, net, log, messages = network(two_tier())
    job = join_all(mgr, 8)
    mgr.leave("j", 5)
    desc = job.descriptor()
    assert [m["rank"] for m in desc["members"]] == [0, 1, 2, 3, 4, 6, 7] and [m["rank"] for m in desc["absent"]] == [5]
    rec = {"name": "j", "job_id": job.job_id, "workers": 8, "mode": "dense", "slots": job.slots.to_json(),
           "aggregation": "tree", "members": desc["members"],
           "absent": desc["absent"] + [{"rank": True, "ip": "10.0.0.9", "udp_port": 1}, {"rank": 0, "ip": "10.0.0.1",
                                                                                         "udp_port": 40000}]}
    mgr2, net2, log2, messages2 = network(two_tier())
    mgr2.log = messages2.append
    adopt_jobs(mgr2, [rec])
    again = mgr2.jobs["j"]
    assert sorted(again.members) == [0, 1, 2, 3, 4, 6, 7] and sorted(again.tree_absent) == [5]
    assert sum("unusable, skipped" in m for m in messages2) == 2
    net2.resume(again)
    assert again.tree is not None and again.tree.to_json() == job.tree.to_json()
    assert sorted(again.tree_absent) == [5]
    assert [(sw, op) for sw, op, _ in log2 if op == "restore_node"] == [("leaf1", "restore_node"),
                                                                         ("leaf2", "restore_node"),
                                                                         ("spine", "restore_node")]


def test_the_entries_of_a_tree_node_leave_out_the_ranks_that_left():
    """What a switch of the tree is written: every child's keys when it is removed, but only the
    present children's entries and group replicas when it is (re)written; the tree entry still
    counts every child (a round completes only with all of them)."""
    from p4reduce.controller.aggregation_tree import present_children
    job = join_all(network(two_tier())[0], 8)
    leaf2 = job.tree.nodes["leaf2"]
    assert [c.rank for c in present_children(leaf2, {5: None, 6: None})] == [4, 7]
    spine = job.tree.nodes["spine"]
    assert [c.switch for c in present_children(spine, {4: None, 5: None, 6: None, 7: None})] == ["leaf1", "leaf2"]


def test_a_resumed_job_without_a_tree_keeps_no_absent_ranks():
    """Read back whole with an absent rank, but its tree cannot be planned again (that rank's host
    is unknown to the topology): the job stays at the center, and no absent rank lingers to be
    planned into a later tree."""
    from p4reduce.controller.recovery import adopt_jobs
    mgr, net, log, messages = network(two_tier())
    rec = {"name": "j", "job_id": 1, "workers": 8, "mode": "dense", "slots": {"base": 0, "count": 8},
           "aggregation": "tree", "members": [{"rank": r, "ip": f"10.0.0.{r + 1}", "udp_port": 40000} for r in range(7)],
           "absent": [{"rank": 7, "ip": "10.9.9.9", "udp_port": 40000}]}
    adopt_jobs(mgr, [rec])
    job = mgr.jobs["j"]
    assert sorted(job.tree_absent) == [7]
    net.resume(job)
    assert job.tree is None and not job.tree_absent
    assert any("10.9.9.9 is not a host" in m for m in messages), messages
