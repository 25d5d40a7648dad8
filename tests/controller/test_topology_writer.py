"""`controller topology` (docs/deploy.md): the file it writes is read back by the controller with
the hosts' api_source; every hostile argument is one line naming the argument, exit 2, no file;
the aggregating switch (only) gets the ARP responder entry for the service address."""
import json

import pytest

from p4reduce.controller import topology as topo
from p4reduce.controller.cli import main
from p4reduce.controller.forwarding import forwarding_entries
from p4reduce.controller.p4info import P4InfoIndex

GOOD = ["--grpc", "127.0.0.1:9559", "--service-ip", "10.0.0.254", "--service-mac", "02:00:00:00:01:fe",
        "--host", "h1=10.0.0.1,02:00:00:00:00:01,1,192.168.77.11", "--host", "h2=10.0.0.2,02:00:00:00:00:02,2"]


def test_written_file_is_read_by_the_controller(tmp_path, capsys):
    out = tmp_path / "topology.json"
    assert main(["topology", "-o", str(out), *GOOD]) == 0
    t = topo.load(out)
    assert t.aggregation_switch.ip == "10.0.0.254" and t.aggregation_switch.mac == "02:00:00:00:01:fe"
    assert t.host_by_source("192.168.77.11").name == "h1"
    assert t.host_by_source("10.0.0.2").name == "h2"
    assert t.arrival_port("s1", t.hosts["h2"]) == 2


@pytest.mark.parametrize("argv,argument", [
    (["--host", "h1=10.0.0.1,ff:ff:ff:ff:ff:ff,1"], "--host"),
    (["--host", "h1=10.0.0.1,02:00:00:00:00:01,1", "--host", "h1=10.0.0.2,02:00:00:00:00:02,2"], "--host"),
    (["--host", "h1=10.0.0.1,02:00:00:00:00:01,1", "--host", "h2=10.0.0.1,02:00:00:00:00:02,2"], "--host"),
    (["--host", "h1=10.0.0.1,02:00:00:00:00:01,1", "--host", "h2=10.0.0.2,02:00:00:00:00:02,1"], "--host"),
    (["--host", "h1=10.0.0.254,02:00:00:00:00:01,1"], "--host"),
    (["--host", "h1=10.0.0.1,02:00:00:00:00:01,511"], "--host"),
    (["--host", "h1=10.0.0.1,02:00:00:00:00:01,-1"], "--host"),
    (["--host", "h1=10.0.0.1, 02:00:00:00:00:01,1"], "--host"),
    (["--host", "h1=224.0.0.1,02:00:00:00:00:01,1"], "--host"),
    (["--host", "h1\x1b[2J=10.0.0.1,02:00:00:00:00:01,1"], "--host"),
    (["--host", "h1=10.0.0.1,02:00:00:00:00:01,1,10.0.0.2", "--host", "h2=10.0.0.2,02:00:00:00:00:02,2"],
     "--host"),
    (["--host", "x" * 100000 + "=10.0.0.1,02:00:00:00:00:01,1"], "--host"),
    ([], "--host"),
    (["--grpc", "no-port", "--host", "h1=10.0.0.1,02:00:00:00:00:01,1"], "--grpc"),
    (["--grpc", "a b:1", "--host", "h1=10.0.0.1,02:00:00:00:00:01,1"], "--grpc"),
    (["--switch", "../etc", "--host", "h1=10.0.0.1,02:00:00:00:00:01,1"], "--switch"),
    (["--service-ip", "10.0.0.256", "--host", "h1=10.0.0.1,02:00:00:00:00:01,1"], "--service-ip"),
    (["--service-mac", "01:00:5e:00:00:01", "--host", "h1=10.0.0.1,02:00:00:00:00:01,1"], "--service-mac"),
    (["--thrift-port", "70000", "--host", "h1=10.0.0.1,02:00:00:00:00:01,1"], "--thrift-port"),
])
def test_hostile_arguments_one_line_naming_the_argument(tmp_path, capsys, argv, argument):
    out = tmp_path / "topology.json"
    base = ["--grpc", "127.0.0.1:9559"] if "--grpc" not in argv else []
    assert main(["topology", "-o", str(out), *base, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {argument}:" in err and len(err) < 400, err
    assert "\x1b" not in err
    assert not out.exists()


def test_output_into_a_missing_directory(tmp_path, capsys):
    assert main(["topology", "-o", str(tmp_path / "no" / "t.json"), *GOOD]) == 2
    assert "argument --output:" in capsys.readouterr().err


def test_arp_responder_entry_on_the_aggregating_switch_only(p4reduce_build, tmp_path):
    out = tmp_path / "topology.json"
    assert main(["topology", "-o", str(out), *GOOD]) == 0
    data = json.loads(out.read_text())
    data["switches"].append({"name": "s2", "grpc_addr": "127.0.0.1:9560"})
    t = topo.from_dict(data)
    index = P4InfoIndex(p4reduce_build[0])
    assert [d for d, _ in forwarding_entries(t, "s1", index) if d.startswith("arp")] == [
        "arp 10.0.0.254 is at 02:00:00:00:01:fe"]
    assert not [d for d, _ in forwarding_entries(t, "s2", index) if d.startswith("arp")]
