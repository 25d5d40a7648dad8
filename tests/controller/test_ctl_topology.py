"""Topology files: parsing, clear errors naming file and field, paths across switches."""
import json

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
