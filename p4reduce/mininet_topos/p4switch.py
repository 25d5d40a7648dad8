"""A Mininet switch node that runs a P4 target (simple_switch_grpc or p4sim-switch).

The node starts the target with one `-i PORT@IFACE` per Mininet link, waits (bounded) until its
gRPC port accepts connections, and stops exactly the process it started, by PID. It never touches
other switches' processes (never a global Mininet cleanup, never a kill by process name).
"""
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mininet.node import Switch

from p4reduce.mininet_topos.ports import port_open
from p4reduce.mininet_topos.processes import stop_process
from p4reduce.mininet_topos.target import DEFAULT_CPU_PORT, SwitchCommand, find_target, target_name

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
PIPELINE_LOADED = "Pipeline loaded: packets run on the "  # p4sim-switch's console line (p4sim/simple_switch.py)


class P4SwitchError(RuntimeError):
    """The P4 target did not start (or died); the message carries its log's tail."""


def log_tail(paths: Iterable[str | Path], lines: int = 20) -> str:
    """The last lines of the first existing file among paths (BMv2 may add '.txt' to --log-file)."""
    chunks = []
    for path in paths:
        for candidate in (Path(path), Path(str(path) + ".txt")):
            if candidate.is_file() and candidate.stat().st_size:
                text = candidate.read_text(errors="replace").splitlines()[-lines:]
                chunks.append(f"--- {candidate} (last {len(text)} lines)\n" + "\n".join(text))
    return "\n".join(chunks) if chunks else "(the target wrote no log)"


class P4Switch(Switch):
    """One P4 target process per Mininet switch; its ports are the Mininet links' interfaces."""

    def __init__(self, name: str, json_path: str | None = None, grpc_port: int = 9559,
                 thrift_port: int = 9090, device_id: int = 0, cpu_port: int | None = DEFAULT_CPU_PORT,
                 log_dir: str = "logs", pcap_dir: str | None = "pcaps", target: str = "auto",
                 log_level: str | None = None, start_timeout: float = START_TIMEOUT_S,
                 target_args: list[str] | None = None, **params: Any):
        params.setdefault("dpid", "%016x" % (device_id + 1))
        super().__init__(name, **params)
        self.json_path = json_path
        self.grpc_port = grpc_port
        self.thrift_port = thrift_port
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.log_dir = Path(log_dir)
        self.pcap_dir = pcap_dir
        self.target = target
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.target_args = list(target_args or [])   # after `--`: e.g. the TLS options (certs.py)
        self.process: subprocess.Popen | None = None
        self.argv: list[str] = []

    # -- what the topology description reads -------------------------------------------------
    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def log_file(self) -> Path:
        return self.log_dir / f"{self.name}.log"

    @property
    def console_file(self) -> Path:
        return self.log_dir / f"{self.name}.out"

    def engine(self) -> str | None:
        """What runs this switch's packets, as p4sim-switch last said on its console at a pipeline
        load ('native backend (generated C)', 'Python engine (...)'); None before any program is
        loaded or for a target that does not say (simple_switch_grpc)."""
        try:
            lines = self.console_file.read_text(errors="replace").splitlines()
        except OSError:
            return None
        said = [line[len(PIPELINE_LOADED):] for line in lines if line.startswith(PIPELINE_LOADED)]
        return said[-1] if said else None

    def label(self) -> str:
        """'s1 (p4sim-switch, native backend (generated C), pid 123)' for people."""
        parts = [target_name(self.argv) if self.argv else "not started", self.engine(),
                 f"pid {self.target_pid}" if self.target_pid else None]
        return f"{self.name} ({', '.join(p for p in parts if p)})"

    def data_ports(self) -> list[tuple[int, Any]]:
        """(port number, interface) of every data-plane link, in port order (no loopback)."""
        return sorted((port, intf) for intf, port in self.ports.items() if intf.name != "lo")

    @property
    def target_pid(self) -> int | None:
        """PID of the P4 target process (mininet's Node.pid is the node's shell)."""
        return self.process.pid if self.process else None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, controllers: list[Any]) -> None:
        """Start the target and wait until its gRPC server accepts connections."""
        if port_open("127.0.0.1", self.grpc_port):
            raise P4SwitchError(f"{self.name}: gRPC port {self.grpc_port} is already in use "
                                "(another switch running? `make stop` stops a previous `make run`)")
        for _port, intf in self.data_ports():
            self._quiet_interface(intf.name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.pcap_dir:
            Path(self.pcap_dir).mkdir(parents=True, exist_ok=True)
        command = SwitchCommand(
            ports=[(port, intf.name) for port, intf in self.data_ports()], device_id=self.device_id,
            grpc_addr=self.grpc_addr, thrift_port=self.thrift_port, log_file=str(self.log_file),
            pcap_dir=self.pcap_dir, json_path=self.json_path, cpu_port=self.cpu_port,
            log_level=self.log_level, extra=self.target_args)
        self.argv = command.argv(find_target(self.target))
        self._spawn("wb")
        self._wait_ready()

    def _spawn(self, mode: str) -> subprocess.Popen:
        with open(self.console_file, mode) as console:
            console.write((" ".join(self.argv) + "\n").encode())
            console.flush()
            self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=console,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        return self.process

    def restart(self) -> subprocess.Popen:
        """Start the target again after it died, with the same command line: the same ports on
        the same interfaces (`-i PORT@IFACE`: the veths outlive the process), gRPC and Thrift
        ports, log file and console file (both appended). It starts with no program, as at first
        (the controller pushes it again). Does not wait until it is ready: the supervisor watches."""
        if self.process is not None and self.process.poll() is None:
            raise P4SwitchError(f"{self.name}: its target (pid {self.process.pid}) still runs")
        if not self.argv:
            raise P4SwitchError(f"{self.name}: never started")
        return self._spawn("ab")

    def _quiet_interface(self, name: str) -> None:
        """No IPv6 chatter and no checksum offload on a switch port: the target sees real frames."""
        self.cmd(f"sysctl -qw net.ipv6.conf.{name}.disable_ipv6=1")
        self.cmd(f"ethtool -K {name} rx off tx off sg off tso off gso off gro off >/dev/null 2>&1")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            status = self.process.poll() if self.process is not None else "not started"
            if status is not None:
                raise P4SwitchError(
                    f"{self.name}: {target_name(self.argv)} exited with status {status} "
                    f"while starting.\ncommand: {' '.join(self.argv)}\n"
                    + log_tail([self.console_file, self.log_file]))
            if port_open("127.0.0.1", self.grpc_port):
                return
            time.sleep(0.1)
        self._terminate()
        raise P4SwitchError(
            f"{self.name}: {target_name(self.argv)} did not open gRPC port {self.grpc_port} within "
            f"{self.start_timeout:.0f} s.\ncommand: {' '.join(self.argv)}\n"
            + log_tail([self.console_file, self.log_file]))

    def _terminate(self) -> None:
        """SIGTERM the process this node started, then SIGKILL it if it lingers."""
        proc, self.process = self.process, None
        stop_process(proc, STOP_TIMEOUT_S)

    def stop(self, deleteIntfs: bool = True) -> None:
        self._terminate()
        super().stop(deleteIntfs)

    def describe(self) -> dict:
        """This switch in the topology description file."""
        return {"name": self.name, "device_id": self.device_id, "grpc_addr": self.grpc_addr,
                "thrift_port": self.thrift_port, "cpu_port": self.cpu_port,
                "target": target_name(self.argv) if self.argv else None, "pid": self.target_pid,
                "log_file": str(self.log_file), "pcap_dir": self.pcap_dir,
                "program": self.json_path, "p4runtime_tls": "--grpc-server-ssl" in self.target_args}
