"""The parts of mininet_topos that need no root: command lines, options, state files, addressing."""
import json
import subprocess
import sys

import pytest

from p4reduce.mininet_topos import runstate
from p4reduce.mininet_topos.links import LinkOptionError, LinkOptions, nft_loss_script
from p4reduce.mininet_topos.target import SwitchCommand, describe_target, find_target, target_name
from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names
from p4reduce.protocol.addressing import MAX_HOSTS, SERVICE_IP, SERVICE_MAC, host_address, switch_address
from p4reduce.protocol.program_files import packet_layout


def test_switch_command_matches_simple_switch_grpc_layout():
    cmd = SwitchCommand(ports=[(1, "s1-eth1"), (2, "s1-eth2")], device_id=3, grpc_addr="127.0.0.1:9560",
                        thrift_port=9091, log_file="logs/s1.log", pcap_dir="pcaps")
    argv = cmd.argv(["simple_switch_grpc"])
    assert argv == ["simple_switch_grpc", "-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "3",
                    "--thrift-port", "9091", "--log-file", "logs/s1.log", "--pcap=pcaps", "--no-p4",
                    "--", "--grpc-server-addr", "127.0.0.1:9560", "--cpu-port", "64"]
    with_program = SwitchCommand(ports=[], device_id=0, grpc_addr="a:1", thrift_port=1, log_file="l",
                                 json_path="build/p.json", cpu_port=None).argv(["x"])
    assert with_program[-4:] == ["build/p.json", "--", "--grpc-server-addr", "a:1"]


def test_find_target_prefers_override_and_falls_back_to_p4sim(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("P4REDUCE_SWITCH", raising=False)
    assert target_name(find_target("auto")) == "p4sim-switch"
    fake = tmp_path / "simple_switch_grpc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_target("auto") == [str(fake)]
    assert describe_target(find_target("auto")) == f"simple_switch_grpc (BMv2, {fake})"   # what demo says
    assert target_name(find_target("p4sim")) == "p4sim-switch"
    assert describe_target(find_target("p4sim")) == "p4sim-switch (the embedded target)"
    with pytest.raises(RuntimeError, match="not found"):
        find_target("no-such-switch-binary")


def test_link_options_validate_their_arguments():
    with pytest.raises(LinkOptionError, match="--loss"):
        LinkOptions(loss_pct=100)
    with pytest.raises(LinkOptionError, match="--delay"):
        LinkOptions(delay="fast")
    with pytest.raises(LinkOptionError, match="--bw"):
        LinkOptions(bw_mbps=0)
    assert not LinkOptions().shaped and LinkOptions(loss_pct=0.5).shaped
    for bad in (100, 70000, True, 9000.5, "9000"):
        with pytest.raises(LinkOptionError, match=f"--mtu {bad}: must be a whole number of bytes in 576..65535"):
            LinkOptions(mtu=bad)
    jumbo = LinkOptions(mtu=9000)
    assert not jumbo.shaped and jumbo.link_mtu == 9000 and LinkOptions().link_mtu == 1500
    assert jumbo.applied() == "unshaped veth, MTU 9000" and jumbo.describe()["mtu"] == 9000
    assert LinkOptions(bw_mbps=100, mtu=4148).applied() == "100 Mbit/s (tbf, 10 ms queue), MTU 4148"


def test_a_shaped_link_gets_a_queue_that_holds_a_workers_window():
    """tbf with a 10 ms queue unless told: Mininet's default (15 kB, 1.2 ms at 100 Mbit/s) holds
    about 27 frames, less than a worker's window of 64 rounds, and a 4-worker run on 100 Mbit/s
    dropped 45 % of each worker's packets at its own egress (2.2x the payload sent, ~95k
    retransmissions in 5 calls of 1M int32; with 10 ms: none)."""
    from p4reduce.mininet_topos.links import DEFAULT_QUEUE_MS
    window_bytes = 64 * (C.FRAME_HEADER_BYTES + C.HEADER_BYTES + 256 * C.LANE_BYTES)   # 64 slots of 256 lanes
    shaped = LinkOptions(bw_mbps=100)
    assert shaped.tclink_params()["latency_ms"] == DEFAULT_QUEUE_MS
    assert 100e6 / 8 * DEFAULT_QUEUE_MS / 1e3 > window_bytes
    assert shaped.describe()["queue_ms"] == DEFAULT_QUEUE_MS and "10 ms queue" in shaped.applied()
    assert LinkOptions(bw_mbps=100, queue_ms=2).tclink_params()["latency_ms"] == 2
    assert LinkOptions(bw_mbps=100, option_prefix="uplink-").tclink_params()["latency_ms"] == DEFAULT_QUEUE_MS
    assert LinkOptions().describe()["queue_ms"] is None
    assert "latency_ms" not in LinkOptions(loss_pct=1).tclink_params()


def test_a_program_layout_is_read_from_its_json(tmp_path):
    """The network's fit check reads the lane registers of the BMv2 JSON, as the controller reads
    them from the P4Info; a file that is not such a program is a clear error naming it."""
    names = [{"name": p4names.lane_register(k, j)} for k in range(4) for j in range(32)]
    good = tmp_path / "p.json"
    good.write_text(json.dumps({"register_arrays": names + [{"name": p4names.SEEN}]}))
    layout = packet_layout(good)
    assert (layout.lanes, layout.subblock, layout.dense_ipv4_bytes) == (128, 32, 20 + 8 + 24 + 512)
    for text, why in (("{", "not a p4reduce program's BMv2 JSON"), ('{"register_arrays": []}', "no lane registers"),
                      (json.dumps({"register_arrays": names[:-1]}), "do not form a 4 x 32 grid")):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match=why) as e:
            packet_layout(bad)
        assert str(bad) in str(e.value)
    with pytest.raises(ValueError, match="cannot read it"):
        packet_layout(tmp_path / "missing.json")


def test_nft_loss_script_drops_the_requested_fraction_per_interface():
    script = nft_loss_script(["h1-eth0", "s1-eth1"], 2.5, table="t")
    assert script.startswith("table netdev t {")
    assert script.count("hook egress") == 2
    assert 'device "s1-eth1"' in script and "numgen random mod 10000 < 250 counter drop" in script


def test_address_plan():
    a = host_address(3)
    assert (a.name, a.ip, a.mac, a.cidr) == ("h3", "10.0.0.3", "00:00:00:00:00:03", "10.0.0.3/24")
    assert host_address(250).mac == "00:00:00:00:00:fa"
    with pytest.raises(ValueError, match="host index 0"):
        host_address(0)


def test_switch_addresses_are_their_own():
    """Switch k is 10.0.1.k, MAC 00:00:00:00:02:k: none is a host's or the service's."""
    s = switch_address(7)
    assert (s.index, s.ip, s.mac) == (7, "10.0.1.7", "00:00:00:00:02:07")
    assert (switch_address(254).ip, switch_address(254).mac) == ("10.0.1.254", "00:00:00:00:02:fe")
    switches = {(switch_address(k).ip, switch_address(k).mac) for k in range(1, 255)}
    hosts = {(host_address(i).ip, host_address(i).mac) for i in range(1, MAX_HOSTS + 1)}
    assert len(switches) == 254 and not {ip for ip, _ in switches} & ({ip for ip, _ in hosts} | {SERVICE_IP})
    assert not {mac for _, mac in switches} & ({mac for _, mac in hosts} | {SERVICE_MAC})
    for bad in (0, 255, True, "3", 2.0):
        with pytest.raises(ValueError, match=f"switch index {bad!r}: must be a whole number in 1..254"):
            switch_address(bad)


def test_stop_signals_only_recorded_processes_that_are_still_the_same(tmp_path):
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        forged = dict(runstate.process_record(bystander.pid, "reused pid"), cmdline="some other program")
        state = tmp_path / "state.json"
        runstate.write_state([runstate.process_record(mine.pid, "switch s1"), forged], [], [], state)
        assert json.loads(state.read_text())["processes"][0]["pid"] == mine.pid
        assert runstate.stop_recorded(state, log=lambda *_: None) == 1
        assert mine.wait(5) is not None
        assert bystander.poll() is None            # its command line did not match: untouched
        assert not state.exists()
        assert runstate.stop_recorded(state, log=lambda *_: None) == 0
    finally:
        for p in (mine, bystander):
            p.kill()
            p.wait()


def test_a_record_waits_for_the_command_line_of_a_process_still_in_execve(monkeypatch):
    # Right after Popen returns, /proc/PID/cmdline can read empty (execve closed the parent's pipe
    # before mapping the arguments); a record taken then could never be matched by `make stop`.
    reads = iter(["", "", "/usr/bin/simple_switch_grpc --device-id 0"])
    monkeypatch.setattr(runstate, "cmdline", lambda pid: next(reads))
    record = runstate.process_record(4242, "switch s1")
    assert record == {"pid": 4242, "role": "switch s1", "cmdline": "/usr/bin/simple_switch_grpc --device-id 0"}
    monkeypatch.setattr(runstate, "cmdline", lambda pid: None)     # gone: recorded as unmatched at once
    assert runstate.process_record(4242, "switch s1")["cmdline"] == ""


def test_cli_rejects_bad_arguments_clearly():
    out = subprocess.run([sys.executable, "-m", "p4reduce.mininet_topos", "run", "--topo", "ring"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "invalid choice: 'ring'" in out.stderr
    assert "Traceback" not in out.stderr
    out = subprocess.run([sys.executable, "-m", "p4reduce.mininet_topos", "run", "--mtu", "100"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "--mtu 100: must be a whole number of bytes in 576..65535" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.root
def test_delay_uses_netem_or_is_refused_clearly():
    from p4reduce.mininet_topos.links import netem_available
    options = LinkOptions(delay="2ms", loss_pct=1)
    if netem_available():
        assert options.tclink_params() == {"delay": "2ms", "loss": 1}
        assert not options.needs_nft_loss()
    else:
        with pytest.raises(LinkOptionError, match="no netem qdisc"):
            options.tclink_params()
        assert LinkOptions(loss_pct=1).needs_nft_loss()
        assert LinkOptions(loss_pct=1).tclink_params() == {}


def test_the_state_file_is_never_seen_half_written(tmp_path):
    """A restart rewrites run/state.json while `make stop` or a test may read it: a reader sees the
    old file or the new one, whole (the writer renames a finished temporary file over it)."""
    import threading
    state = tmp_path / "state.json"
    procs = [{"pid": i, "role": f"host h{i}", "cmdline": "x" * 150} for i in range(200)]
    runstate.write_state(procs, [], [], state)
    done, torn = threading.Event(), []

    def read():
        while not done.is_set():
            try:
                json.loads(state.read_text())
            except ValueError as e:
                torn.append(str(e))
    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(300):
            runstate.write_state(procs, [f"s1-eth{i}" for i in range(50)], [], state)
    finally:
        done.set()
        reader.join()
    assert not torn, torn[:3]
    assert not [p for p in tmp_path.iterdir() if p.name != "state.json"]    # no temporary file left
