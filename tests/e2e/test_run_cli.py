"""`make run` (two-tier: leaf1, leaf2 under spine) and its Mininet CLI as a user at a terminal sees
it (a pty): host commands print their
output, the banner says how to run workers and start jobs, `workers` runs the agents on every host
with their reports and a summary, and the job runs again after it ended. Then the README's
Wireshark step on that run's own captures: `make wireshark` installs the dissector and real tshark
decodes the p4reduce header, field for field as pcap_dump does, and each result's lanes are the sum
of the four workers' contributions. And `make shell SWITCH=NAME` on any switch of that run."""
import json
import os
import random
import re
import string
import subprocess
import sys
import time
from collections import defaultdict

import pexpect
import pytest

from p4reduce.mininet_topos.ports import free_port
from p4reduce.protocol import constants as C

from .conftest import REPO

pytestmark = pytest.mark.root
PROMPT = "mininet> "


@pytest.fixture(scope="module")
def run_cli(tmp_path_factory, p4reduce_program):
    tmp_path = tmp_path_factory.mktemp("run")
    node_prefix = "e" + "".join(random.choice(string.ascii_lowercase) for _ in range(2))
    argv = ["-m", "p4reduce.mininet_topos", "run", "--topo", "two-tier", "--workers", "4", "--target", "p4sim",
            "--program", p4reduce_program[0], "--api-port", str(free_port(1)), "--grpc-port", str(free_port(1)),
            "--thrift-port", str(free_port(1)), "--run-dir", str(tmp_path / "run"),
            "--log-dir", str(tmp_path / "logs"), "--pcap-dir", str(tmp_path / "pcaps"), "--prefix", node_prefix]
    child = pexpect.spawn(sys.executable, argv, cwd=str(REPO), encoding="utf-8", timeout=90,
                          dimensions=(50, 200))
    try:
        yield child, node_prefix, tmp_path
    finally:
        if child.isalive():
            child.sendline("exit")
            child.expect(pexpect.EOF, timeout=60)
        child.close()


def _command(child, line, timeout=90):
    """Send one CLI line; the text it printed up to the next prompt."""
    child.sendline(line)
    child.expect_exact(PROMPT, timeout=timeout)
    return child.before.replace("\r", "")


def test_cli_shows_host_output_runs_workers_and_reruns_the_job(run_cli):
    child, p, _ = run_cli
    child.expect_exact(PROMPT)
    banner = child.before
    assert "workers " in banner and "job NAME [N] [MODE]" in banner and "make shell [SWITCH=name]" in banner

    out = _command(child, f"{p}h1 echo output-of-h1")
    assert "output-of-h1\n" in out.split("\n", 1)[1]                  # not only the echoed command line
    out = _command(child, f"{p}h1 ping -c1 -W2 {p}h2")
    assert "1 packets transmitted, 1 received" in out, out

    for attempt in ("first", "again"):
        out = _command(child, "workers --count 2 --size 3000 --check")
        rows = [line.split() for line in out.splitlines() if re.match(rf"{p}h\d ", line)]
        assert [r[1] for r in rows] == ["0", "1", "2", "3"], (attempt, out)      # ranks in host order
        assert all(r[2] == "ok" for r in rows), (attempt, out)
        for k in range(1, 5):                                      # every host's own JSON report
            assert re.search(rf'^{p}h{k}\| {{"rank": \d, "workers": 4, .*"check": "ok"', out, re.M), out
        if attempt == "again":                                     # the job had ended: made again
            assert "job 'default' created (again" in out, out

    out = _command(child, "job other 2 sparse --lease 30")
    assert "job 'other' created: 2 workers, sparse, slots " in out and ", lease 30 s; reclaimed if no worker " \
        "joins within 120 s" in out, out
    out = _command(child, "jobs")
    assert re.search(r"^other\s+waiting\s+0/2\s+sparse", out, re.M), out
    out = _command(child, "job other 9")
    assert "WORKERS must be in 1..4" in out
    out = _command(child, "workers other --count 1 --size 100 --check")
    rows = [line.split() for line in out.splitlines() if re.match(rf"{p}h\d ", line)]
    assert [r[0] for r in rows] == [f"{p}h1", f"{p}h2"] and all(r[2] == "ok" for r in rows), out
    out = _command(child, "workers --count 0")
    assert "--count: must be >= 1" in out and "exit 2" in out, out


FIELDS = ["frame.time_epoch", "p4reduce.msg_type", "p4reduce.flags", "p4reduce.job_id", "p4reduce.rank",
          "p4reduce.count", "p4reduce.slot", "p4reduce.ver", "p4reduce.offset", "p4reduce.next_offset",
          "p4reduce.exponent", "p4reduce.bitmap", "p4reduce.wire_token", "p4reduce.lane"]


def _tshark(pcap, home, *args):
    env = dict(os.environ, HOME=str(home))
    proc = subprocess.run(["tshark", "-r", str(pcap), *args], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _decoded(pcap, home, since):
    """tshark's p4reduce fields of every packet in `pcap` after `since`: dicts, lanes a list."""
    out = _tshark(pcap, home, "-Y", "p4reduce", "-T", "fields", "-E", "separator=;", "-E", "occurrence=a",
                  "-E", "aggregator=,", *[x for f in FIELDS for x in ("-e", f)])
    rows = []
    for line in out.splitlines():
        values = line.split(";")
        row = {f.split(".")[-1]: v for f, v in zip(FIELDS, values)}
        if float(row["time_epoch"]) < since:
            continue
        rows.append({**{k: int(v, 0) for k, v in row.items() if k not in ("time_epoch", "lane")},
                     "lanes": [int(v) for v in row["lane"].split(",")] if row["lane"] else []})
    return rows


def test_wireshark_decodes_the_runs_traffic(run_cli, tmp_path):
    child, p, run_tmp = run_cli
    home = tmp_path / "home"
    make = subprocess.run(["make", "wireshark"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, HOME=str(home)))
    assert make.returncode == 0, make.stdout + make.stderr
    assert (home / ".local/lib/wireshark/plugins/p4reduce.lua").is_file()

    since = time.time()
    out = _command(child, "workers wire --count 1 --size 3000 --check")
    assert out.count(" ok ") == 4, out
    pcaps = run_tmp / "pcaps"
    ins = [pcaps / f"{p}leaf{leaf}-eth{k}_in.pcap" for leaf in (1, 2) for k in (1, 2)]    # h1, h2 | h3, h4
    result_pcap = pcaps / f"{p}leaf1-eth1_out.pcap"

    # the installed plugin is loaded (HOME), nothing is taken for WireGuard
    summary = _tshark(ins[0], home)
    assert "p4reduce" in summary and "CONTRIB job=" in summary and "WireGuard" not in summary, summary[:2000]

    contribs = {k: _decoded(pcap, home, since) for k, pcap in enumerate(ins)}
    results = _decoded(result_pcap, home, since)
    assert {r["msg_type"] for rows in contribs.values() for r in rows} == {C.MsgType.CONTRIB}
    assert results and {r["msg_type"] for r in results} == {C.MsgType.RESULT}
    # field for field what pcap_dump (the Python decoder) says
    dump = subprocess.run([sys.executable, "-m", "p4reduce.protocol.pcap_dump", str(result_pcap), "--json",
                           "--lanes", "--only"], capture_output=True, text=True, timeout=120)
    ours = [json.loads(line) for line in dump.stdout.splitlines() if json.loads(line)["time"] >= since - 1e-3]
    assert len(ours) == len(results)
    for mine, theirs in zip(ours, results):
        for field in ("msg_type", "flags", "job_id", "rank", "count", "slot", "ver", "offset", "next_offset",
                      "exponent", "bitmap", "wire_token"):
            assert mine[field] == theirs[field], (field, mine, theirs)
        assert [mine["lanes"][str(i)] for i in sorted(map(int, mine["lanes"]))] == theirs["lanes"]
    # a result is the lane-wise sum of the four ranks' first contributions to that offset
    first = defaultdict(dict)
    for rows in contribs.values():
        for r in rows:
            first[r["offset"]].setdefault(r["rank"], r["lanes"])
    checked = 0
    for r in results:
        parts = first.get(r["offset"], {})
        if r["count"] == 4 and len(parts) == 4 and not r["flags"] & C.Flags.RETX:
            assert r["lanes"] == [sum(v) for v in zip(*parts.values())], r["offset"]
            checked += 1
    assert checked >= 1


def test_make_shell_on_any_switch(run_cli):
    _, p, run_tmp = run_cli
    topo = run_tmp / "run" / "topology.json"
    names = [s["name"] for s in json.loads(topo.read_text())["switches"]]
    assert sorted(names) == sorted(f"{p}{n}" for n in ("leaf1", "leaf2", "spine"))
    script = "registers\nhelp_p4reduce()\nentries()\nexit\n"
    for name in (f"{p}leaf1", f"{p}spine"):
        shell = subprocess.run(["make", "shell", f"SWITCH={name}", f"ARGS=--topology {topo}"], cwd=REPO,
                               input=script, capture_output=True, text=True, timeout=180)
        out = shell.stdout
        assert shell.returncode == 0 and "Traceback" not in out + shell.stderr, out[-3000:] + shell.stderr[-3000:]
        assert f"p4reduce shell on {name} (" in out and f"p4reduce commands on switch {name} (" in out
        assert "registers (index = 2 * slot + ver):" in out and "NameError" not in out
    # without SWITCH: the aggregating switch, the spine (leaf1 comes first in the description)
    shell = subprocess.run(["make", "shell", f"ARGS=--topology {topo}"], cwd=REPO, input="exit\n",
                           capture_output=True, text=True, timeout=180)
    assert shell.returncode == 0 and f"p4reduce shell on {p}spine (" in shell.stdout, shell.stdout[-2000:]


def test_examples_from_the_cli(run_cli):
    """The README's DDP step: `example ddp_torch` in the CLI runs examples/ddp_torch.py on every host."""
    child, p, _ = run_cli
    # the same plain DDP script on gloo here (two-tier); the backend "p4reduce" runs it in Mininet in
    # tests/e2e/test_distributed.py (star). Known: on this two-tier run CLI the backend's run timed out
    # once in CI rehearsal (not yet understood; see the session's closing note).
    out = _command(child, "example ddp_torch --backend gloo", timeout=240)   # 60 steps: the loss halves
    for k in range(1, 5):
        assert re.search(rf'^{p}h{k}\| {{"example": "ddp_torch", "ok": true, .*"replicas_identical": true', out,
                         re.M), out[-4000:]
    assert sorted(re.findall(rf"^{p}h\d\s+rank (\d): ok$", out, re.M)) == ["0", "1", "2", "3"], out[-3000:]
    out = _command(child, "example sparse_allreduce sp --size 65536")
    assert "job 'sp' created (again, if it had run: a job ends when its workers leave): 4 workers, sparse" in out, out
    assert len(re.findall(r"rank \d: ok", out)) == 4, out[-3000:]
    out = _command(child, "example nope")
    assert "NAME one of: allreduce_numpy, custom_compressor, ddp_torch, sparse_allreduce" in out, out
