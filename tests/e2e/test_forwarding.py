"""A star topology on p4sim-switch forwards host traffic only as P4Runtime programs it.

Uses real p4c output (../shared/p4-reference: fwd_basic, an exact-match L2 table) loaded through
P4Runtime, so the test checks the node, the topology, the addressing and the switch together.
"""
import json
import pathlib
import re

import pytest
from scapy.all import ARP, ICMP, rdpcap

from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.mininet_topos.network import P4Network

from .p4rt import push

pytestmark = pytest.mark.root


def l2_entries(description):
    return [{"table": "Ing.l2", "action": "Ing.l2_forward", "match": {"hdr.eth.dst": h["mac"]},
             "params": {"port": str(h["port"])}} for h in description["hosts"]]


def ping(src, dst_ip, count=1, interval=None, wait=5, deadline=True, total_s=None):
    """Echo replies received. Positive checks use a total deadline (-w): ping then waits for every
    reply, however busy the shared machine is; -W alone gives up two RTTs after the last echo."""
    opts = f"-c {count}" + (f" -i {interval}" if interval else "")
    opts += f" -w {total_s or wait + count}" if deadline else f" -W {wait}"
    out = src.cmd(f"ping -n -q {opts} {dst_ip}")
    match = re.search(r"(\d+) received", out)
    return int(match.group(1)) if match else 0


def test_hosts_reach_each_other_only_through_programmed_switch(reference_dir, net_kwargs, tmp_path):
    out = reference_dir / "p4c-out"
    with P4Network(topo="star", workers=4, **net_kwargs) as net:
        desc = json.loads((tmp_path / "topology.json").read_text())
        switch = desc["switches"][0]
        assert [p["port"] for p in switch["ports"]] == [1, 2, 3, 4]
        assert [h["ip"] for h in desc["hosts"]] == [f"10.0.0.{i}" for i in range(1, 5)]
        assert switch["target"] == "p4sim-switch" and switch["pid"] > 0
        h1, h2, h3, h4 = sorted(net.hosts, key=lambda h: h.params["index"])
        # No pipeline yet: the switch drops everything, so nothing bypasses it.
        assert ping(h1, "10.0.0.2", wait=1, deadline=False) == 0
        push(switch["grpc_addr"], switch["device_id"], l2_entries(desc),
             p4info=str(out / "fwd_basic.p4info.txtpb"), bmv2_json=str(out / "fwd_basic.json"))
        for src in (h1, h2, h3, h4):
            for dst in desc["hosts"]:
                if dst["name"] != src.name:
                    assert ping(src, dst["ip"], count=2, interval=0.05) == 2, (src.name, dst["name"])
        # Remove h3's entry: h1 can still reach h2 but no longer h3.
        push(switch["grpc_addr"], switch["device_id"],
             [dict(l2_entries(desc)[2], op="delete")])
        assert ping(h1, "10.0.0.2") == 1
        assert ping(h1, "10.0.0.3", wait=1, deadline=False) == 0
        switch_intfs = [p["intf"] for p in switch["ports"]]
    # The switch's process is gone and its interfaces were removed.
    assert not pathlib.Path(f"/proc/{switch['pid']}").exists()
    assert not any(pathlib.Path(f"/sys/class/net/{i}").exists() for i in switch_intfs)
    # The switch's pcaps saw the pings and no ARP: hosts use static neighbour entries.
    frames = [f for pcap in (tmp_path / "pcaps").glob("*.pcap") for f in rdpcap(str(pcap))]
    assert any(f.haslayer(ICMP) for f in frames)
    assert not any(f.haslayer(ARP) for f in frames)


def test_link_options_are_applied(reference_dir, net_kwargs, tmp_path):
    out = reference_dir / "p4c-out"
    link = LinkOptions(bw_mbps=20, loss_pct=10)
    with P4Network(topo="star", workers=2, link=link, **net_kwargs) as net:
        desc = json.loads((tmp_path / "topology.json").read_text())
        switch = desc["switches"][0]
        h1, _h2 = sorted(net.hosts, key=lambda h: h.params["index"])
        qdiscs = h1.cmd(f"tc qdisc show dev {h1.defaultIntf()}")
        assert re.search(r"rate 20Mbit", qdiscs), qdiscs
        assert desc["link_options"]["loss_pct"] == 10
        push(switch["grpc_addr"], switch["device_id"], l2_entries(desc),
             p4info=str(out / "fwd_basic.p4info.txtpb"), bmv2_json=str(out / "fwd_basic.json"))
        # Four lossy crossings per echo (two links, both ways): 0.9**4 = 66% of echoes answered.
        out = h1.cmd("ping -n -q -c 300 -i 0.005 -W 2 10.0.0.2")
        sent, got = map(int, re.search(r"(\d+) packets transmitted, (\d+) received", out).groups())
        assert sent == 300 and 0.50 <= got / sent <= 0.80, out


def test_two_tier_forwards_between_leaves_through_the_spine(reference_dir, net_kwargs, tmp_path):
    out = reference_dir / "p4c-out"
    with P4Network(topo="two-tier", workers=4, **net_kwargs) as net:
        desc = json.loads((tmp_path / "topology.json").read_text())
        spine = next(s for s in desc["switches"] if s["role"] == "spine")
        leaf_of = {h["name"]: h["switch"] for h in desc["hosts"]}
        spine_port = {}          # leaf name -> spine port towards it
        for link in desc["links"]:
            if link["b"] == spine["name"]:
                spine_port[link["a"]] = link["b_port"]
            else:
                spine_port[link["b"]] = link["a_port"]
        assert len(spine_port) == 2
        for sw in desc["switches"]:
            entries = []
            for h in desc["hosts"]:
                if sw is spine:
                    port = spine_port[h["switch"]]
                elif h["switch"] == sw["name"]:
                    port = h["port"]
                else:
                    port = sw["uplink_port"]
                entries.append({"table": "Ing.l2", "action": "Ing.l2_forward", "match": {"hdr.eth.dst": h["mac"]},
                                "params": {"port": str(port)}})
            push(sw["grpc_addr"], sw["device_id"], entries, p4info=str(out / "fwd_basic.p4info.txtpb"),
                 bmv2_json=str(out / "fwd_basic.json"))
        hosts = sorted(net.hosts, key=lambda h: h.params["index"])
        assert leaf_of[hosts[0].name] != leaf_of[hosts[3].name]
        assert ping(hosts[0], hosts[3].IP(), count=3, interval=0.05) == 3     # leaf1 -> spine -> leaf2
        assert ping(hosts[0], hosts[1].IP(), count=3, interval=0.05) == 3     # within leaf1
        # Take the spine's route to h4 away: cross-leaf traffic stops, same-leaf traffic does not.
        h4 = desc["hosts"][3]
        push(spine["grpc_addr"], spine["device_id"],
             [{"table": "Ing.l2", "action": "Ing.l2_forward", "match": {"hdr.eth.dst": h4["mac"]},
               "params": {"port": str(spine_port[h4["switch"]])}, "op": "delete"}])
        assert ping(hosts[0], hosts[3].IP(), wait=1, deadline=False) == 0
        assert ping(hosts[0], hosts[1].IP()) == 1
