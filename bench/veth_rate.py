"""Switch packet rate on veth: a P4 target process, N veth pairs, closed-loop aggregation traffic.

The same rig runs any simple_switch_grpc-compatible target (p4sim-switch, and simple_switch_grpc
when it is on PATH), so their rates on the same program, traffic and machine can be compared as a
ratio. Only what this module creates is touched: veth pairs named ``b4r<tag>w<i>{s,h}`` (switch
side / host side, in the root namespace, no addresses) and the target process it started (stopped
by PID). The program is pushed and the job installed over P4Runtime with the controller's
library, as the controller does it.
"""
from __future__ import annotations

import pathlib
import subprocess
import tempfile
import time
import uuid

from p4reduce.bench import aggtraffic
from p4reduce.bench import program as progmod
from p4reduce.mininet_topos.ports import free_port, port_open
from p4reduce.mininet_topos.processes import stop_process

PROGRAM = progmod.DEFAULT
JOB_ID = 1
SERVICE = aggtraffic.Service()


class RigError(RuntimeError):
    """The rig cannot be built or the target did not come up (message has the target's log)."""


def _ip(*args) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RigError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


class VethRig:
    """N veth pairs plus one target process; a context manager that removes both."""

    def __init__(self, workers: int, target: str = "p4sim", program: pathlib.Path = PROGRAM):
        self.workers = workers
        self.target = target
        self.program = pathlib.Path(program)
        self.tag = uuid.uuid4().hex[:4]
        self.pairs = [(f"b4r{self.tag}w{i}s", f"b4r{self.tag}w{i}h") for i in range(workers)]
        self.created: list[str] = []
        self.proc: subprocess.Popen | None = None
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="p4reduce-bench-veth-"))
        self.grpc_addr = f"127.0.0.1:{free_port()}"
        self.argv: list[str] = []
        self.target_name = target

    def endpoints(self) -> list[aggtraffic.Endpoint]:
        return [aggtraffic.Endpoint.of_rank(i, h, udp_port=40000 + i) for i, (_s, h) in enumerate(self.pairs)]

    def __enter__(self) -> VethRig:
        try:
            for sw, host in self.pairs:
                _ip("link", "add", sw, "type", "veth", "peer", "name", host)
                self.created.append(sw)
                for name in (sw, host):
                    subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                                   capture_output=True)
                    subprocess.run(["ethtool", "-K", name, "rx", "off", "tx", "off", "sg", "off",
                                    "tso", "off", "gso", "off", "gro", "off"], capture_output=True)
                    _ip("link", "set", name, "up")
            self._start_target()
            self._program()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc)
        for name in self.created:
            subprocess.run(["ip", "link", "del", name], capture_output=True)
        self.created = []

    def _log_tail(self) -> str:
        lines = []
        for path in sorted(self.workdir.glob("*")):
            if path.is_file():
                lines += path.read_text(errors="replace").splitlines()[-10:]
        return "\n".join(lines)

    def _start_target(self) -> None:
        from p4reduce.mininet_topos.target import SwitchCommand, find_target, target_name
        cmd = SwitchCommand(ports=[(i + 1, sw) for i, (sw, _h) in enumerate(self.pairs)],
                            device_id=0, grpc_addr=self.grpc_addr, thrift_port=free_port(),
                            log_file=str(self.workdir / "switch.log"), json_path=str(self.program),
                            cpu_port=None, log_level="error")
        self.argv = cmd.argv(find_target(self.target))
        self.target_name = target_name(self.argv)
        with open(self.workdir / "switch.out", "wb") as out:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        host, port = self.grpc_addr.split(":")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RigError(f"{self.target_name} exited with {self.proc.returncode}:\n{self._log_tail()}")
            if port_open(host, int(port)):
                return
            time.sleep(0.1)
        raise RigError(f"{self.target_name} did not open {self.grpc_addr} in 60 s:\n{self._log_tail()}")

    def _program(self) -> None:
        """Pipeline, then one dense job with a slot window and its workers, installed by the
        controller's own JobProgrammer, so the entries follow the program as it evolves."""
        from p4reduce.controller.connection import SwitchConnection
        from p4reduce.controller.job_programmer import JobProgrammer
        from p4reduce.controller.jobs import Job, Member
        from p4reduce.controller.slots import SlotRange
        from p4reduce.protocol import constants as C

        self.conn = SwitchConnection(self.grpc_addr, device_id=0, election_id=1)
        self.conn.connect(timeout=30)
        self.conn.push_pipeline(str(progmod.p4info_for(self.program)), str(self.program))
        self.window = min(64, C.SLOTS)
        now = time.monotonic()
        job = Job("bench-veth-rate", JOB_ID, self.workers, "dense", SlotRange(0, self.window),
                  lease_s=3600.0, now=now, wall=time.time())
        programmer = JobProgrammer(self.conn)  # fresh switch: registers are already zero
        programmer.install_job(job)
        for ep in self.endpoints():
            member = Member(ep.rank, ep.ip, ep.udp_port, ep.mac, port=ep.rank + 1, now=now)
            job.members[ep.rank] = member
            programmer.add_member(job, member)

    def measure(self, duration_s: float, window: int | None = None) -> dict:
        result = aggtraffic.run(self.endpoints(), SERVICE, JOB_ID, window or self.window,
                                duration_s=duration_s)
        result["target"] = self.target_name
        return result

    def close_connection(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()


def measure_target(target: str, workers: int, duration_s: float, window: int = 16,
                   program: pathlib.Path = PROGRAM) -> dict:
    """Packet rate of `target` ('p4sim', 'bmv2' or a path) on a fresh rig."""
    rig = VethRig(workers, target=target, program=program)
    with rig:
        try:
            return rig.measure(duration_s, window=window)
        finally:
            rig.close_connection()
