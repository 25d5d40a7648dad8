"""Topology files: parsing, clear errors naming file and field, paths across switches."""
import json
import re

import pytest

from p4reduce.controller.forwarding import forwarding_entries
from p4reduce.controller.p4info import P4InfoIndex
from p4reduce.controller.topology import TopologyError, from_dict, load


def test_yaml_file_and_multi_switch_paths(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("""
switches:
  s1: {grpc_addr: "127.0.0.1:9559", ip: 10.0.0.254, mac: "00:00:00:00:01:FE", aggregate: true, thrift_port: 9090}
  s2: {grpc_addr: "127.0.0.1:9560", device_id: 1}
  s3: {grpc_addr: "127.0.0.1:9561", device_id: 2}
hosts:
  h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}
  h2: {ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s2, port: 1}
  h3: {ip: 10.0.0.3, mac: "00:00:00:00:00:03", switch: s3, port: 4}
links:
  - {a: s1, a_port: 5, b: s2, b_port: 7}
  - {a: s2, a_port: 8, b: s3, b_port: 9}
""")
    t = load(path)
    assert t.aggregation_switch.name == "s1" and t.aggregation_switch.mac == "00:00:00:00:01:fe"
    h = t.hosts
    assert t.next_hop_port("s1", h["h1"]) == 1
    assert t.next_hop_port("s1", h["h3"]) == 5   # s1 -> s2 -> s3
    assert t.next_hop_port("s3", h["h1"]) == 9
    assert t.next_hop_port("s2", h["h3"]) == 8
    assert t.port_towards("s3", "s1") == 9
    # where each host's packets enter the aggregating switch s1 (what a worker entry binds)
    assert t.arrival_port("s1", h["h1"]) == 1
    assert t.arrival_port("s1", h["h2"]) == 5 and t.arrival_port("s1", h["h3"]) == 5
    assert t.arrival_port("s3", h["h1"]) == 9 and t.arrival_port("s2", h["h1"]) == 7
    assert t.host_by_ip("10.0.0.2").name == "h2" and t.host_by_ip("10.9.9.9") is None


@pytest.mark.parametrize("data, message", [
    ({}, "no switches"),
    ({"switches": {"s1": {}}}, "switches.s1: missing field 'grpc_addr'"),
    ({"switches": {"s1": {"grpc_addr": "nohost"}}}, "switches.s1.grpc_addr: expected HOST:PORT"),
    ({"switches": {"s1": {"grpc_addr": "a:1"}}, "hosts": {"h1": {"ip": "10.0.0.300", "mac": "00:00:00:00:00:01",
                                                                 "switch": "s1", "port": 1}}},
     "hosts.h1.ip: '10.0.0.300' is not an IPv4 address"),
    ({"switches": {"s1": {"grpc_addr": "a:1"}}, "hosts": {"h1": {"ip": "10.0.0.1", "mac": "0:1",
                                                                 "switch": "s1", "port": 1}}},
     "hosts.h1.mac: '0:1' is not a MAC address"),
    ({"switches": {"s1": {"grpc_addr": "a:1"}}, "hosts": {"h1": {"ip": "10.0.0.1", "mac": "00:00:00:00:00:01",
                                                                 "switch": "s9", "port": 1}}},
     "hosts.h1.switch: no switch named 's9'"),
    ({"switches": {"s1": {"grpc_addr": "a:1"}}, "links": [{"a": "s1", "a_port": 1, "b": "s2", "b_port": 1}]},
     "links[0]: no switch named 's2'"),
    ({"switches": {"s1": {"grpc_addr": "a:1"}}, "entries": [{"table": "t"}]}, "entries[0]: missing field 'action'"),
])
def test_errors_name_the_field(data, message):
    with pytest.raises(TopologyError) as e:
        from_dict(data, "topo.json")
    assert str(e.value).startswith("topo.json: ") and message in str(e.value)


def test_bad_files(tmp_path):
    with pytest.raises(TopologyError, match="does not exist"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(TopologyError, match="bad.json: cannot parse"):
        load(bad)


def test_forwarding_entries_for_p4reduce(p4reduce_build):
    p4info, _ = p4reduce_build
    index = P4InfoIndex(p4info)
    t = from_dict(json.loads(json.dumps({
        "switches": {"s1": {"grpc_addr": "a:1", "ip": "10.0.0.254", "aggregate": True}, "s2": {"grpc_addr": "a:2"}},
        "hosts": {"h1": {"ip": "10.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1},
                  "h2": {"ip": "10.0.0.2", "mac": "00:00:00:00:00:02", "switch": "s2", "port": 3}},
        "links": [{"a": "s1", "a_port": 4, "b": "s2", "b_port": 6}]})))
    desc = [d for d, _ in forwarding_entries(t, "s2", index)]
    assert desc == ["route 10.0.0.1/32 -> port 6", "l2 00:00:00:00:00:01 -> port 6",
                    "route 10.0.0.2/32 -> port 3", "l2 00:00:00:00:00:02 -> port 3",
                    "route 10.0.0.254/32 (aggregation switch s1) -> port 6",
                    "l2 ff:ff:ff:ff:ff:ff -> flood group 1", "multicast group 1: ports [3, 6]",
                    "source guard port 3 -> 10.0.0.2 (h2)"]
    # every switch guards its own host ports, and only those (never the link port)
    assert [d for d, _ in forwarding_entries(t, "s1", index) if d.startswith("source guard")] == [
        "source guard port 1 -> 10.0.0.1 (h1)"]


def test_source_guard_skips_a_port_shared_by_hosts(p4reduce_build, caplog):
    p4info, _ = p4reduce_build
    index = P4InfoIndex(p4info)
    t = from_dict({
        "switches": {"s1": {"grpc_addr": "a:1", "ip": "10.0.0.254"}},
        "hosts": {"h1": {"ip": "10.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1},
                  "h2": {"ip": "10.0.0.2", "mac": "00:00:00:00:00:02", "switch": "s1", "port": 2},
                  "h3": {"ip": "10.0.0.3", "mac": "00:00:00:00:00:03", "switch": "s1", "port": 2}}})
    guards = [(d, e) for d, e in forwarding_entries(t, "s1", index) if d.startswith("source guard")]
    assert [d for d, _ in guards] == ["source guard port 1 -> 10.0.0.1 (h1)"]
    assert "hosts h2, h3 share it" in caplog.text


def _depth_3_tree():
    """What `--topo tree` (depth 3, fanout 2) describes: root over agg1-2 over leaf1-4, two hosts
    per leaf on ports 1-2, every uplink the port after a switch's children (mininet_topos/tree.py)."""
    switches = {"root": {"grpc_addr": "a:7", "device_id": 6, "aggregate": True, "ip": "10.0.0.254",
                         "mac": "00:00:00:00:01:fe"}}
    links, hosts = [], {}
    for j, (agg, leaves) in enumerate((("agg1", ("leaf1", "leaf2")), ("agg2", ("leaf3", "leaf4"))), start=1):
        switches[agg] = {"grpc_addr": f"a:{5 + j}", "device_id": 4 + j - 1, "ip": f"10.0.1.{4 + j}",
                         "mac": f"00:00:00:00:02:0{4 + j}", "parent": "root", "uplink_port": 3}
        links.append({"a": agg, "a_port": 3, "b": "root", "b_port": j})
        for k, leaf in enumerate(leaves, start=1):
            n = int(leaf[-1])
            switches[leaf] = {"grpc_addr": f"a:{n}", "device_id": n - 1, "ip": f"10.0.1.{n}",
                              "mac": f"00:00:00:00:02:0{n}", "parent": agg, "uplink_port": 3}
            links.append({"a": leaf, "a_port": 3, "b": agg, "b_port": k})
            for port, i in enumerate((2 * n - 1, 2 * n), start=1):
                hosts[f"h{i}"] = {"ip": f"10.0.0.{i}", "mac": f"00:00:00:00:00:0{i}", "switch": leaf, "port": port}
    return from_dict({"version": 1, "topology": "tree", "service": {"ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"},
                      "switches": switches, "hosts": hosts, "links": links})


def test_forwarding_on_a_depth_3_tree(p4reduce_build):
    """Jobs aggregated at the root of a three-level tree: every switch routes the service address
    up its uplink and each host down the port towards it; the switches' own addresses are never
    routed; only the root answers ARP for the service address."""
    p4info, _ = p4reduce_build
    index = P4InfoIndex(p4info)
    t = _depth_3_tree()
    assert t.aggregation_switch.name == "root" and t.switches["agg2"].ip == "10.0.1.6"

    def routes(switch):
        out = {}
        for d, _ in forwarding_entries(t, switch, index):
            m = re.match(r"route (\S+)/32 .*-> port (\d+)$", d)
            if m:
                out[m[1]] = int(m[2])
        return out

    every = [f"10.0.0.{i}" for i in range(1, 9)]
    assert routes("leaf1") == {**dict.fromkeys(every, 3), "10.0.0.1": 1, "10.0.0.2": 2, "10.0.0.254": 3}
    assert routes("leaf4") == {**dict.fromkeys(every, 3), "10.0.0.7": 1, "10.0.0.8": 2, "10.0.0.254": 3}
    assert routes("agg1") == {**dict.fromkeys(every, 3), "10.0.0.1": 1, "10.0.0.2": 1, "10.0.0.3": 2,
                              "10.0.0.4": 2, "10.0.0.254": 3}
    assert routes("agg2") == {**dict.fromkeys(every, 3), "10.0.0.5": 1, "10.0.0.6": 1, "10.0.0.7": 2,
                              "10.0.0.8": 2, "10.0.0.254": 3}
    assert routes("root") == {**dict.fromkeys(every[:4], 1), **dict.fromkeys(every[4:], 2)}
    for sw in t.switches:
        desc = [d for d, _ in forwarding_entries(t, sw, index)]
        assert not any("10.0.1." in d for d in desc), desc          # switch addresses: never routed
        assert any(d.startswith("arp 10.0.0.254") for d in desc) == (sw == "root")
        guards = [d for d in desc if d.startswith("source guard")]
        assert len(guards) == (2 if sw.startswith("leaf") else 0), (sw, guards)
    # where the root binds each worker (its arrival port) and sends its results
    assert [t.arrival_port("root", t.hosts[f"h{i}"]) for i in range(1, 9)] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert t.arrival_port("agg2", t.hosts["h8"]) == 2 and t.arrival_port("agg2", t.hosts["h1"]) == 3
