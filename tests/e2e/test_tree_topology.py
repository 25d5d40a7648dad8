"""Trees of P4 switches in Mininet (issue #23 point 4): `--topo tree` (depth 3, fanout 2: root,
agg1-2, leaf1-4, 8 hosts) and `--topo two-tier --leaves 4`, with the uplink link options.

Each network comes up with the controller; every host reaches every other host (ICMP) and the
service address (the root answers ARP for it, across the tree); the topology description has
every switch's parent, uplink port and own address, and the controller's reader agrees with it;
the uplink options shape the switch-to-switch links and only them (read back with tc and nft);
and a job aggregated at the root only sums int32 tensors exactly across the tree. The option
checks of `python -m p4reduce.mininet_topos run` need no network.
"""
import inspect
import json
import pathlib
import re
import subprocess
import sys

import pytest

from p4reduce.controller.topology import load
from p4reduce.mininet_topos.links import LinkOptionError, LinkOptions
from p4reduce.mininet_topos.ports import free_port
from p4reduce.mininet_topos.tree import TreeTopo, spread
from p4reduce.mininet_topos.twotier import TwoTierTopo
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, switch_address

from .conftest import REPO
from .test_forwarding import ping
from .workers import by_index

ARP_PING = pathlib.Path(__file__).with_name("arp_ping.py")


# -- what the description must say -------------------------------------------------------------
def check_tree_description(desc, prefix, parents, hosts_on, root):
    """Every switch of `parents` (name -> parent, None for the root; names without prefix) is
    described with its parent, its uplink port, its own address; `hosts_on` maps each leaf to its
    hosts' indexes in port order."""
    switches = {s["name"]: s for s in desc["switches"]}
    p = prefix
    assert set(switches) == {p + n for n in parents}
    device_ids = [s["device_id"] for s in switches.values()]
    assert sorted(device_ids) == list(range(len(parents)))
    assert len({s["grpc_addr"] for s in switches.values()}) == len(parents)
    assert len({s["thrift_port"] for s in switches.values()}) == len(parents)
    top = switches[p + root]
    assert top["aggregate"] and top["parent"] is None and top["uplink_port"] is None
    assert (top["ip"], top["mac"]) == (SERVICE_IP, SERVICE_MAC) == (desc["service"]["ip"], desc["service"]["mac"])
    links = {(link["a"], link["a_port"], link["b"], link["b_port"]) for link in desc["links"]}
    assert len(links) == len(parents) - 1
    own = set()
    for name, parent in parents.items():
        sw = switches[p + name]
        children = [c for c, up in parents.items() if up == name]
        ports = {q["port"]: q for q in sw["ports"]}
        if parent is None:
            assert sorted(ports) == list(range(1, len(children) + 1)), (name, sorted(ports))
        else:
            assert not sw["aggregate"]
            assert sw["parent"] == p + parent
            address = switch_address(sw["device_id"] + 1)
            assert (sw["ip"], sw["mac"]) == (address.ip, address.mac), name
            own.add((sw["ip"], sw["mac"]))
            n_below = len(hosts_on[name]) if name in hosts_on else len(children)
            assert sw["uplink_port"] == n_below + 1, (name, sw["uplink_port"])
            assert sorted(ports) == list(range(1, n_below + 2)), (name, sorted(ports))
            up = ports[sw["uplink_port"]]
            assert up["peer"] == p + parent
            ends = (p + name, sw["uplink_port"], p + parent, up["peer_port"])
            assert ends in links or (ends[2], ends[3], ends[0], ends[1]) in links, ends
        if name in hosts_on:                    # a leaf: its hosts on ports 1..k, in host order
            assert sw["role"] == "leaf" and not children
            assert [ports[k]["peer"] for k in range(1, len(hosts_on[name]) + 1)] == \
                [f"{p}h{i}" for i in hosts_on[name]]
        else:                                   # its child switches on ports 1..c, in order
            assert [ports[k]["peer"] for k in range(1, len(children) + 1)] == [p + c for c in children]
    # the switches' own addresses: one each, none a host's or the service's
    host_addrs = {(h["ip"], h["mac"]) for h in desc["hosts"]}
    assert len(own) == len(parents) - 1 and not own & (host_addrs | {(SERVICE_IP, SERVICE_MAC)})
    assert {h["name"]: h["switch"] for h in desc["hosts"]} == \
        {f"{p}h{i}": p + leaf for leaf, idx in hosts_on.items() for i in idx}
    return switches


def check_the_controller_reads_it(path, desc, root):
    """controller/topology.py loads the description: the root aggregates at the service address,
    every other switch has its own address, and its way to the root is its uplink port."""
    topo = load(path)
    assert topo.aggregation_switch.name == root
    assert (topo.aggregation_switch.ip, topo.aggregation_switch.mac) == (SERVICE_IP, SERVICE_MAC)
    for sw in desc["switches"]:
        if sw["parent"] is None:
            continue
        assert (topo.switches[sw["name"]].ip, topo.switches[sw["name"]].mac) == (sw["ip"], sw["mac"])
        assert topo.port_towards(sw["name"], root) == sw["uplink_port"]
        assert topo.port_towards(sw["name"], sw["parent"]) == sw["uplink_port"]
    for h in desc["hosts"]:
        assert topo.next_hop_port(h["switch"], topo.hosts[h["name"]]) == h["port"]


# -- what the network must do --------------------------------------------------------------------
def check_everyone_reaches_everyone(net_hosts, lossy=False):
    """ICMP between every pair of hosts, and ARP for the service address answered by the root."""
    hosts = by_index(net_hosts)
    count = 10 if lossy else 1
    for src in hosts:
        for dst in hosts:
            if dst is not src:
                got = ping(src, dst.IP(), count=count, interval=0.02, total_s=10)
                assert got >= 1, f"{src.name} -> {dst.name}: no echo reply"
        answer = src.cmd(f"{sys.executable} {ARP_PING} {src.defaultIntf()} {src.IP()} {src.MAC()} {SERVICE_IP}")
        assert answer.strip() == SERVICE_MAC, f"{src.name}: who has {SERVICE_IP}? {answer!r}"


def switch_link_ends(desc):
    """(interfaces of switch-to-switch links, switch interfaces of host links)."""
    switch_names = {s["name"] for s in desc["switches"]}
    uplinks, host_side = set(), set()
    for s in desc["switches"]:
        for q in s["ports"]:
            (uplinks if q["peer"] in switch_names else host_side).add(q["intf"])
    return uplinks, host_side


def tc(dev, node=None):
    if node is not None:
        return node.cmd(f"tc qdisc show dev {dev}")
    return subprocess.run(["tc", "qdisc", "show", "dev", dev], capture_output=True, text=True, check=True).stdout


def run_root_job(session, name, hosts, size=20000, count=2):
    """A job summed at the root only (the controller of issue #23 aggregates across switches by
    default where it can; this is the flat job), p4reduce-worker allreduce --check on every host:
    returns each host's JSON report."""
    kw = {"aggregation": "root"} if "aggregation" in inspect.signature(session.create_job).parameters else {}
    session.create_job(name, len(hosts), "dense", hosts=hosts, **kw)
    procs = [(h, subprocess.Popen(["mnexec", "-a", str(h.pid), sys.executable, "-m", "p4reduce.worker", "allreduce",
                                   "--controller", session.api_addr, "--job", name, "--count", str(count),
                                   "--size", str(size), "--dtype", "int32", "--check", "--quiet"],
                                  cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
             for h in by_index(hosts)]
    reports = []
    for h, proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, f"{h.name}: {err[-2000:]}"
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


@pytest.mark.root
def test_depth_3_tree_comes_up_described_reachable_shaped_and_exact(session_factory, node_prefix, tmp_path):
    host_link, uplink = LinkOptions(bw_mbps=400), LinkOptions(bw_mbps=100, option_prefix="uplink-")
    session = session_factory(topo="tree", workers=None, link=host_link, uplink=uplink,
                              topo_options={"depth": 3, "fanout": 2})
    net = session.network
    assert len(net.switches) == 7 and len(net.hosts) == 8 and net.workers == 8
    desc = json.loads(session.description_path.read_text())
    assert desc["topology"] == "tree"
    parents = {"root": None, "agg1": "root", "agg2": "root", "leaf1": "agg1", "leaf2": "agg1",
               "leaf3": "agg2", "leaf4": "agg2"}
    hosts_on = {"leaf1": [1, 2], "leaf2": [3, 4], "leaf3": [5, 6], "leaf4": [7, 8]}
    switches = check_tree_description(desc, node_prefix, parents, hosts_on, "root")
    roles = {name[len(node_prefix):]: s["role"] for name, s in switches.items()}
    assert roles == {"root": "root", "agg1": "aggregation", "agg2": "aggregation", "leaf1": "leaf",
                     "leaf2": "leaf", "leaf3": "leaf", "leaf4": "leaf"}
    # device ids: the leaves first, the root last (gRPC/Thrift ports are base + device id)
    assert [switches[node_prefix + n]["device_id"] for n in
            ("leaf1", "leaf2", "leaf3", "leaf4", "agg1", "agg2", "root")] == list(range(7))
    check_the_controller_reads_it(session.description_path, desc, node_prefix + "root")
    assert desc["link_options"]["bw_mbps"] == 400 and desc["link_options"]["uplink"]["bw_mbps"] == 100
    assert desc["link_options"]["uplink"]["applied"] == "100 Mbit/s (tbf, 10 ms queue)"

    # the uplink rate on both ends of every switch-to-switch link, the host rate on host links only
    uplinks, host_side = switch_link_ends(desc)
    assert len(uplinks) == 12 and len(host_side) == 8
    for dev in uplinks:
        qdiscs = tc(dev)
        assert re.search(r"\brate 100Mbit\b", qdiscs) and "400Mbit" not in qdiscs, (dev, qdiscs)
    for dev in host_side:
        qdiscs = tc(dev)
        assert re.search(r"\brate 400Mbit\b", qdiscs) and "100Mbit" not in qdiscs, (dev, qdiscs)
    for h in net.hosts:
        qdiscs = tc(h.defaultIntf(), node=h)
        assert re.search(r"\brate 400Mbit\b", qdiscs), (h.name, qdiscs)

    check_everyone_reaches_everyone(net.hosts)

    reports = run_root_job(session, "e2e-tree-flat", net.hosts)
    assert sorted(r["rank"] for r in reports) == list(range(8))
    assert all(r["check"] == "ok" for r in reports), reports


@pytest.mark.root
def test_two_tier_with_4_leaves_loses_on_uplinks_only(session_factory, node_prefix):
    """--leaves 4 with 8 workers (2 per leaf) and 10 % loss on the uplinks (nftables here: the
    kernel lacks netem; netem where it has it): a leaf's own hosts talk without loss, hosts on
    different leaves cross two lossy links each way."""
    uplink = LinkOptions(loss_pct=10, option_prefix="uplink-")
    session = session_factory(topo="two-tier", workers=8, uplink=uplink, topo_options={"leaves": 4})
    net = session.network
    assert len(net.switches) == 5 and len(net.hosts) == 8
    desc = json.loads(session.description_path.read_text())
    parents = {"spine": None, **{f"leaf{j}": "spine" for j in range(1, 5)}}
    hosts_on = {f"leaf{j}": [2 * j - 1, 2 * j] for j in range(1, 5)}
    switches = check_tree_description(desc, node_prefix, parents, hosts_on, "spine")
    assert switches[node_prefix + "spine"]["role"] == "spine" and switches[node_prefix + "spine"]["device_id"] == 4
    check_the_controller_reads_it(session.description_path, desc, node_prefix + "spine")
    assert desc["link_options"]["loss_pct"] == 0 and desc["link_options"]["uplink"]["loss_pct"] == 10

    uplinks, host_side = switch_link_ends(desc)
    assert len(uplinks) == 8
    if uplink.needs_nft_loss():
        tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True).stdout
        assert f"table netdev {net.uplink_loss_table}" in tables and net.loss_table not in tables, tables
        listed = subprocess.run(["nft", "list", "table", "netdev", net.uplink_loss_table],
                                capture_output=True, text=True, check=True).stdout
        assert set(re.findall(r'device "([^"]+)"', listed)) == uplinks, listed
        assert listed.count("mod 10000 < 1000") == 8, listed
    else:
        for dev in uplinks:
            assert re.search(r"\bloss 10%", tc(dev)), dev
        for dev in host_side:
            assert "loss" not in tc(dev), dev

    check_everyone_reaches_everyone(net.hosts, lossy=True)
    h1, h2, h3 = by_index(net.hosts)[:3]
    # same leaf: no uplink crossed, nothing lost; leaf1 -> spine -> leaf2: four lossy crossings
    # per echo (0.9**4 = 66 % answered)
    same = h1.cmd("ping -n -q -c 200 -i 0.005 -W 2 " + h2.IP())
    assert re.search(r"200 packets transmitted, 200 received", same), same
    out = h1.cmd("ping -n -q -c 300 -i 0.005 -W 2 " + h3.IP())
    sent, got = map(int, re.search(r"(\d+) packets transmitted, (\d+) received", out).groups())
    assert sent == 300 and 0.50 <= got / sent <= 0.80, out


@pytest.mark.root
@pytest.mark.parametrize("make_vars, banner, workers, uplink", [
    (["TOPO=tree", "UPLINK_BW=200"], "tree topology (depth 3, fanout 2), 8 workers", 8, {"bw_mbps": 200.0}),
    (["TOPO=two-tier", "WORKERS=8", "UPLINK_LOSS=1"], "two-tier topology (leaves 2), 8 workers", 8,
     {"loss_pct": 1.0}),
], ids=["tree", "two-tier-8"])
def test_make_run_passes_the_topology_and_its_cli_runs_workers(make_vars, banner, workers, uplink, tmp_path,
                                                               node_prefix):
    """`make run TOPO=tree` (8 hosts: fanout**depth, as no WORKERS is given) and `make run
    TOPO=two-tier WORKERS=8`, with an uplink option as a make variable: the banner names the
    shape, the CLI's `workers` sums exactly on every host, `jobs` answers, `exit` ends it all."""
    run_dir = tmp_path / "run"
    args = (f"--cli --target p4sim --api-port {free_port(1)} --grpc-port {free_port(16)} "
            f"--thrift-port {free_port(16)} --run-dir {run_dir} --log-dir {tmp_path}/logs --prefix {node_prefix}")
    commands = "workers --count 2 --size 20000\njobs\nexit\n"
    out = subprocess.run(["make", "run", *make_vars, f"ARGS={args}"], cwd=REPO, input=commands,
                         capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert f"p4reduce is up: {banner}, switch(es) " in text, text[:3000]
    rows = [line.split() for line in text.splitlines() if re.match(rf"{node_prefix}h\d+ +\d+ ", line)]
    assert [r[1] for r in rows] == [str(k) for k in range(workers)], text[-4000:]
    assert all(r[2] == "ok" for r in rows), text[-4000:]
    desc = json.loads((run_dir / "topology.json").read_text())
    assert len(desc["hosts"]) == workers
    assert {k: desc["link_options"]["uplink"][k] for k in uplink} == uplink
    assert not (run_dir / "state.json").exists()       # exit stopped everything it started


# -- no network needed ---------------------------------------------------------------------------
def test_tree_layouts():
    """Names, roles, parents, device ids and ports of the builders, without starting anything."""
    def layout(topo):
        switches = {s: (topo.nodeInfo(s)["device_id"], topo.nodeInfo(s)["role"], topo.nodeInfo(s)["parent"])
                    for s in topo.switches()}
        links = sorted((a, i["port1"], b, i["port2"]) for a, b, i in topo.links(withInfo=True))
        return switches, links

    switches, links = layout(TreeTopo())
    assert switches == {"leaf1": (0, "leaf", "agg1"), "leaf2": (1, "leaf", "agg1"), "leaf3": (2, "leaf", "agg2"),
                        "leaf4": (3, "leaf", "agg2"), "agg1": (4, "aggregation", "root"),
                        "agg2": (5, "aggregation", "root"), "root": (6, "root", None)}
    assert ("leaf2", 3, "agg1", 2) in links and ("agg2", 3, "root", 2) in links and ("h8", 0, "leaf4", 2) in links
    deep, _ = layout(TreeTopo(depth=4, fanout=2, workers=10))
    assert len(deep) == 15 and deep["agg1"][2] == "agg5" and deep["agg5"][2] == "root" and deep["root"][0] == 14
    wide, wide_links = layout(TreeTopo(depth=2, fanout=3, workers=7))      # 7 hosts on 3 leaves: 3, 2, 2
    assert set(wide) == {"leaf1", "leaf2", "leaf3", "root"}
    assert ("leaf1", 4, "root", 1) in wide_links and ("leaf3", 3, "root", 3) in wide_links
    assert len(TreeTopo(depth=3, fanout=4).hosts()) == 64
    two, two_links = layout(TwoTierTopo(workers=16, leaves=4))
    assert two["spine"] == (4, "spine", None) and all(two[f"leaf{j}"] == (j - 1, "leaf", "spine") for j in range(1, 5))
    assert ("leaf4", 5, "spine", 4) in two_links and ("h13", 0, "leaf4", 1) in two_links
    eight, _ = layout(TwoTierTopo(workers=8))
    assert set(eight) == {"leaf1", "leaf2", "spine"} and eight["spine"][0] == 2
    assert [list(r) for r in spread(8, 2)] == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert [list(r) for r in spread(5, 2)] == [[1, 2, 3], [4, 5]]          # as two-tier always split


def test_builders_refuse_what_they_cannot_build():
    for kwargs, message in (({"depth": 1}, "--depth 1: must be a whole number in 2..4"),
                            ({"fanout": "x"}, "--fanout x: must be a whole number in 2..8"),
                            ({"depth": 4, "fanout": 3}, "40 switches, more than 32"),
                            ({"depth": 3, "fanout": 5}, "125 hosts (fanout**depth), more than 64"),
                            ({"workers": 3}, "--workers 3: the tree of depth 3 and fanout 2 has 4 leaves")):
        with pytest.raises(ValueError, match=re.escape(message)):
            TreeTopo(**kwargs)
    with pytest.raises(ValueError, match=re.escape("--leaves 17: must be a whole number in 2..16")):
        TwoTierTopo(leaves=17)
    with pytest.raises(ValueError, match=re.escape("--workers 3: the two-tier topology with 4 leaves takes 4..64")):
        TwoTierTopo(workers=3, leaves=4)
    with pytest.raises(ValueError, match="interface names would be 16 characters"):
        TwoTierTopo(workers=16, leaves=16, prefix="abcde")
    with pytest.raises(LinkOptionError, match="--uplink-loss 100: must be a percentage"):
        LinkOptions(loss_pct=100, option_prefix="uplink-")


@pytest.mark.parametrize("argv, message", [
    (["--topo", "tree", "--depth", "1"], "--depth 1: must be a whole number in 2..4"),
    (["--topo", "tree", "--depth", "three"], "--depth three: must be a whole number in 2..4"),
    (["--topo", "tree", "--fanout", "9"], "--fanout 9: must be a whole number in 2..8"),
    (["--topo", "tree", "--fanout", "1.5"], "--fanout 1.5: must be a whole number in 2..8"),
    (["--topo", "tree", "--depth", "4", "--fanout", "3"], "--depth 4 --fanout 3: 40 switches, more than 32"),
    (["--topo", "tree", "--workers", "3"], "--workers 3: the tree of depth 3 and fanout 2 has 4 leaves"),
    (["--topo", "two-tier", "--leaves", "0"], "--leaves 0: must be a whole number in 2..16"),
    (["--topo", "two-tier", "--leaves", "4", "--workers", "2"],
     "--workers 2: the two-tier topology with 4 leaves takes 4..64 workers"),
    (["--topo", "star", "--leaves", "2"], "--leaves 2: only --topo two-tier takes it, not --topo star"),
    (["--topo", "two-tier", "--depth", "3"], "--depth 3: only --topo tree takes it, not --topo two-tier"),
    (["--topo", "tree", "--uplink-bw", "fast"], "--uplink-bw 'fast': expected a rate in Mbit/s"),
    (["--topo", "tree", "--uplink-bw", "-5"], "--uplink-bw -5.0: must be in (0, 100000] Mbit/s"),
    (["--topo", "two-tier", "--uplink-loss", "100"], "--uplink-loss 100.0: must be a percentage in [0, 100)"),
    (["--topo", "two-tier", "--uplink-loss", "lots"], "--uplink-loss 'lots': expected a percentage"),
    (["--topo", "two-tier", "--uplink-delay", "soon"], "--uplink-delay 'soon': expected a duration"),
    (["--topo", "star", "--uplink-bw", "100"], "--uplink-bw: the star topology has no switch-to-switch links"),
])
@pytest.mark.parametrize("command", ["run", "demo"])
def test_bad_topology_options_are_one_line_naming_the_option(command, argv, message, tmp_path):
    entry = ["p4reduce.mininet_topos", "run"] if command == "run" else ["lab.demo"]
    out = subprocess.run([sys.executable, "-m", *entry, *argv,
                          "--run-dir", str(tmp_path / "run")], cwd=REPO, capture_output=True, text=True, timeout=60)
    lines = out.stderr.splitlines()
    assert out.returncode == 1, (out.returncode, out.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"{command}: error: ") and message in lines[0], out.stderr
    assert not (tmp_path / "run").exists()       # nothing started


def test_uplink_delay_without_netem_is_refused_naming_the_uplink_option(tmp_path):
    """Where the kernel lacks sch_netem (this machine), a delay cannot be applied: said for the
    uplinks as for the worker links, before anything starts."""
    from p4reduce.mininet_topos.links import netem_available
    if netem_available():      # nothing to refuse: netem takes the delay, on the uplinks only
        assert LinkOptions(delay="1ms", option_prefix="uplink-").tclink_params()["delay"] == "1ms"
    else:
        out = subprocess.run([sys.executable, "-m", "p4reduce.mininet_topos", "run", "--topo", "tree",
                              "--uplink-delay", "1ms", "--run-dir", str(tmp_path / "run")],
                             cwd=REPO, capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and out.stderr.strip() == (
            "run: error: --uplink-delay 1ms: this kernel has no netem qdisc (sch_netem), which link delay "
            "needs; run without --uplink-delay or on a kernel with CONFIG_NET_SCH_NETEM"), out.stderr
