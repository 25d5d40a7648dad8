"""The P4 switch node's failure handling: a target that dies or never opens its gRPC port gives a
clear error with its log's tail, within the bounded timeout, and nothing is left running."""
import pathlib
import subprocess
import time

import pytest

from p4reduce.mininet_topos.network import P4Network
from p4reduce.mininet_topos.p4switch import P4SwitchError

pytestmark = pytest.mark.root


def assert_no_interfaces(prefix):
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"{prefix}s1-eth" not in links and f"{prefix}h1-eth" not in links


def fake_target(tmp_path, body):
    path = tmp_path / "broken_switch"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_target_that_exits_is_reported_with_its_output(tmp_path, net_kwargs):
    net_kwargs["target"] = fake_target(tmp_path, "echo 'cannot open device s1-eth9: no such device' >&2\nexit 3\n")
    with pytest.raises(P4SwitchError) as err:
        P4Network(topo="star", workers=2, **net_kwargs).start()
    message = str(err.value)
    assert "exited with status 3" in message and "cannot open device s1-eth9" in message
    assert "--grpc-server-addr" in message                     # the command line, to reproduce it
    assert_no_interfaces(net_kwargs["prefix"])


def test_target_that_never_listens_times_out_and_is_killed(tmp_path, net_kwargs):
    pidfile = tmp_path / "pid"
    net_kwargs["target"] = fake_target(tmp_path, f"echo $$ > {pidfile}\necho starting...\nexec sleep 60\n")
    t0 = time.monotonic()
    with pytest.raises(P4SwitchError, match=r"did not open gRPC port \d+ within 2 s") as err:
        P4Network(topo="star", workers=2, start_timeout=2, **net_kwargs).start()
    assert time.monotonic() - t0 < 20
    assert "starting..." in str(err.value)
    assert_no_interfaces(net_kwargs["prefix"])
    pid = int(pidfile.read_text())
    assert not pathlib.Path(f"/proc/{pid}").exists() or "Z" in pathlib.Path(f"/proc/{pid}/stat").read_text().split()[2]
