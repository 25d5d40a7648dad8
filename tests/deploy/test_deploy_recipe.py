"""docs/deploy.md's recipe on plain network namespaces and veth pairs, without Mininet: each worker
host is a namespace with a data-plane interface (a veth whose other end is a p4sim-switch port)
and a management interface (a veth on a bridge in the root namespace, where the controller's job
API listens). The steps are the recipe's commands: the topology file written by `controller
topology`, `controller serve` on the management address, the job created with `controller
create-job`, and on each host `p4reduce-worker allreduce` given only the controller's address,
the job name and P4REDUCE_JOB_CREDENTIAL. No host has a static ARP entry: the switch answers ARP
for the service address.

Every name carries a per-test prefix; teardown stops only the processes this test started and
deletes only the links and namespaces it made. The network-test lock is held by tests/conftest.py
for every session that collects a `root` test."""
import itertools
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

from p4reduce.mininet_topos.ports import free_port
from p4reduce.p4src.build import compile_program

pytestmark = pytest.mark.root

REPO = pathlib.Path(__file__).resolve().parents[2]
PYTHON = sys.executable
_counter = itertools.count()
SERVICE_IP, SERVICE_MAC = "10.0.0.254", "02:00:00:00:01:fe"


def run(*command, check=True):
    done = subprocess.run(command, capture_output=True, text=True)
    if check and done.returncode:
        raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def wait_port(host, port, process, log, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[:4]} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {host}:{port}:\n{log.read_text()[-3000:]}")


class Deployment:
    """Two hosts (namespaces), a switch on veths, a management bridge; removed by close()."""

    def __init__(self, tmp_path, hosts=2):
        self.uid = f"{os.getpid() % 10000}{next(_counter)}"
        self.tmp = tmp_path
        self.links, self.namespaces, self.processes, self.logs = [], [], [], []
        subnet = 200 + (os.getpid() + int(self.uid)) % 50
        self.mgmt_prefix = f"172.31.{subnet}"
        self.controller_ip = f"{self.mgmt_prefix}.254"
        self.bridge = f"p4dp{self.uid}br"
        run("ip", "link", "add", self.bridge, "type", "bridge")
        self.links.append(self.bridge)
        run("ip", "addr", "add", f"{self.controller_ip}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        self.switch_ifaces, self.hosts = [], []
        for i in range(1, hosts + 1):
            ns = f"p4dp{self.uid}n{i}"
            run("ip", "netns", "add", ns)
            self.namespaces.append(ns)
            data, mgmt = f"p4dp{self.uid}s{i}", f"p4dp{self.uid}m{i}"
            for outside, inside in ((data, "eth0"), (mgmt, "mgmt0")):
                run("ip", "link", "add", outside, "type", "veth", "peer", "name", f"{outside}p")
                self.links.append(outside)
                run("ip", "link", "set", f"{outside}p", "netns", ns)
                run("ip", "netns", "exec", ns, "ip", "link", "set", f"{outside}p", "name", inside)
                run("sysctl", "-qw", f"net.ipv6.conf.{outside}.disable_ipv6=1", check=False)
                run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{inside}.disable_ipv6=1",
                    check=False)
                run("ip", "link", "set", outside, "up")
                run("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
            run("ip", "link", "set", mgmt, "master", self.bridge)
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            ip, mgmt_ip = f"10.0.0.{i}", f"{self.mgmt_prefix}.{i}"
            run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{mgmt_ip}/24", "dev", "mgmt0")
            # the host's own MAC, as an operator reads it on a real machine
            mac = run("ip", "netns", "exec", ns, "cat", "/sys/class/net/eth0/address").stdout.strip()
            self.switch_ifaces.append(data)
            self.hosts.append({"name": f"h{i}", "ns": ns, "ip": ip, "mac": mac, "port": i, "mgmt": mgmt_ip})

    def start(self, command, name, **kw):
        log = self.tmp / f"{name}.log"
        out = open(log, "w")
        self.logs.append(out)
        process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, **kw)
        self.processes.append(process)
        return process, log

    def in_host(self, host, *command):
        return ["ip", "netns", "exec", host["ns"], "env", f"PYTHONPATH={REPO}", *command]

    def close(self):
        for process in reversed(self.processes):   # only what this test started, by its handle
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for out in self.logs:
            out.close()
        for link in self.links:
            run("ip", "link", "del", link, check=False)
        for ns in self.namespaces:
            run("ip", "netns", "del", ns, check=False)


@pytest.fixture
def deployment(tmp_path):
    d = Deployment(tmp_path)
    yield d
    d.close()


def test_deploy_recipe_two_workers_on_namespaces(deployment, tmp_path):
    d = deployment
    built = compile_program(tmp_path / "build")
    # 1. the switch on the hosts' interfaces (P4Runtime on loopback: the controller runs here)
    grpc_port, thrift_port, api_port = free_port(), free_port(), free_port()
    command = [PYTHON, "-m", "p4sim.simple_switch"]
    for host, iface in zip(d.hosts, d.switch_ifaces):
        command += ["-i", f"{host['port']}@{iface}"]
    command += ["--thrift-port", str(thrift_port), "--no-p4", "--",
                "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--cpu-port", "64"]
    switch, switch_log = d.start(command, "switch")
    wait_port("127.0.0.1", grpc_port, switch, switch_log)

    # 2. the topology file, from the addresses given on the command line
    topology = tmp_path / "topology.json"
    command = [PYTHON, "-m", "p4reduce.controller", "topology", "-o", str(topology), "--switch", "s1",
               "--grpc", f"127.0.0.1:{grpc_port}", "--thrift-port", str(thrift_port),
               "--service-ip", SERVICE_IP, "--service-mac", SERVICE_MAC]
    for h in d.hosts:
        command += ["--host", f"{h['name']}={h['ip']},{h['mac']},{h['port']},{h['mgmt']}"]
    done = run(*command)
    written = json.loads(topology.read_text())
    assert [h["api_source"] for h in written["hosts"]] == [h["mgmt"] for h in d.hosts], done.stderr

    # 3. the controller, its job API on the management address
    api = f"{d.controller_ip}:{api_port}"
    controller, controller_log = d.start(
        [PYTHON, "-m", "p4reduce.controller", "serve", "--topology", str(topology),
         "--p4info", str(built.p4info_path), "--bmv2-json", str(built.json_path), "--api-addr", api,
         "--admin-credential-file", str(tmp_path / "admin-credential"), "--state-file", ""], "controller")
    wait_port(d.controller_ip, api_port, controller, controller_log)

    # 4. the job, its credential in a private file
    credential_file = tmp_path / "job-credential"
    run(PYTHON, "-m", "p4reduce.controller", "create-job", "deploy", "--workers", "2", "--api-addr", api,
        "--credential-file", str(credential_file))
    assert oct(credential_file.stat().st_mode & 0o777) == "0o600"
    credential = credential_file.read_text().strip()

    # 5. a worker on each host: the controller's address, the job name, the credential; nothing else
    for h in d.hosts:
        neigh = run(*d.in_host(h, "ip", "neigh", "show", SERVICE_IP)).stdout
        assert "PERMANENT" not in neigh
    env = dict(os.environ, P4REDUCE_JOB_CREDENTIAL=credential)
    workers = [d.start(d.in_host(h, PYTHON, "-m", "p4reduce.worker", "allreduce", "--controller", api,
                                 "--job", "deploy", "--count", "5", "--size", "1000000", "--check", "--quiet"),
                       f"worker-{h['name']}", env=env) for h in d.hosts]
    for process, log in workers:
        try:
            process.wait(240)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker did not finish in 240 s:\n{log.read_text()[-3000:]}\n"
                        f"controller:\n{controller_log.read_text()[-3000:]}")
        assert process.returncode == 0, f"{log.read_text()[-3000:]}\ncontroller:\n{controller_log.read_text()[-3000:]}"
    for _process, log in workers:
        lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
        report = json.loads(lines[-1])
        assert (report["check"], report["check_contract"]) == ("ok", "exact int32 sum"), report
        assert report["calls_by_path"] == {"switch": 5, "fallback": 0}, report
    # the service address was learnt by ARP from the switch, not set by hand
    for h in d.hosts:
        neigh = run(*d.in_host(h, "ip", "neigh", "show", SERVICE_IP)).stdout
        assert SERVICE_MAC in neigh and "PERMANENT" not in neigh, neigh
