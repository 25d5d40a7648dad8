"""A p4sim-switch subprocess wired to hosts in network namespaces through veth pairs.

Every name carries a per-test unique prefix; `close()` always removes the namespaces and veths it
created and stops only the switch process it started."""
import itertools
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

from p4reduce.mininet_topos.ports import free_port

REPO = pathlib.Path(__file__).resolve().parents[3]
PYTHON = sys.executable
NS_IO = str(pathlib.Path(__file__).with_name("ns_io.py"))
_counter = itertools.count()


def run(*command, check=True):
    return subprocess.run(command, check=check, capture_output=True, text=True)


class VethSwitch:
    def __init__(self, hosts, tmp_path, extra_args=(), cpu_port=64):
        self.uid = f"{os.getpid() % 10000}{next(_counter)}"
        self.namespaces = []
        self.switch_ifaces = []
        self.process = None
        self.tmp_path = tmp_path
        self.pcap_dir = tmp_path / "pcap"
        self.log_path = tmp_path / "switch.out"
        try:
            for index in range(1, hosts + 1):
                self._add_host(index)
            self.grpc_port = free_port()
            self.address = f"127.0.0.1:{self.grpc_port}"
            command = [PYTHON, "-m", "p4sim.simple_switch"]
            for index, iface in enumerate(self.switch_ifaces, start=1):
                command += ["-i", f"{index}@{iface}"]
            command += ["--pcap", str(self.pcap_dir), "--thrift-port", str(free_port()),
                        *extra_args, "--no-p4", "--",
                        "--grpc-server-addr", self.address, "--cpu-port", str(cpu_port)]
            self.log = open(self.log_path, "w")
            self.process = subprocess.Popen(command, cwd=REPO, stdout=self.log,
                                            stderr=subprocess.STDOUT)
            self._wait_ready()
        except BaseException:
            self.close()
            raise

    def _add_host(self, index):
        namespace = f"p4rt{self.uid}n{index}"
        switch_side = f"p4rt{self.uid}s{index}"
        host_side = f"p4rt{self.uid}h{index}"
        run("ip", "netns", "add", namespace)
        self.namespaces.append(namespace)
        run("ip", "link", "add", switch_side, "type", "veth", "peer", "name", host_side)
        self.switch_ifaces.append(switch_side)
        run("ip", "link", "set", host_side, "netns", namespace)
        run("ip", "netns", "exec", namespace, "ip", "link", "set", host_side, "name", "eth0")
        for prefix in ((), ("ip", "netns", "exec", namespace)):
            iface = "eth0" if prefix else switch_side
            run(*prefix, "sysctl", "-qw", f"net.ipv6.conf.{iface}.disable_ipv6=1", check=False)
            run(*prefix, "ip", "link", "set", iface, "up")

    def _wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"p4sim-switch exited with {self.process.returncode}: "
                                   f"{self.log_path.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("p4sim-switch did not open its gRPC port")

    # -- traffic -------------------------------------------------------------------------------
    def send(self, host, *frames):
        run("ip", "netns", "exec", self.namespaces[host - 1], PYTHON, NS_IO, "send", "eth0",
            *[f.hex() for f in frames])

    def capture(self, host, marker: bytes, seconds=3.0, limit=10):
        """Start a capture on a host; returns a handle for `frames()`."""
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespaces[host - 1], PYTHON, NS_IO, "recv", "eth0",
             marker.hex(), str(seconds), str(limit)], stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "READY"
        return process

    @staticmethod
    def frames(capture):
        out, _ = capture.communicate(timeout=30)
        return [bytes.fromhex(line) for line in out.split()]

    # -- teardown ------------------------------------------------------------------------------
    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Signal the switch and return its exit code."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def close(self):
        self.stop()
        if getattr(self, "log", None):
            self.log.close()
        for iface in self.switch_ifaces:
            run("ip", "link", "del", iface, check=False)
        for namespace in self.namespaces:
            run("ip", "netns", "del", namespace, check=False)
