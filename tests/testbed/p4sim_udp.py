"""The real P4 program on p4sim's engine, in-process, behind a UDP socket on loopback.

Lets workers aggregate through p4src/p4reduce.p4 without Mininet, namespaces or root: tests,
local experiments (``python -m testbed.training.experiment --through p4sim``) and debugging.
The control-plane entries are those of docs/protocol.md section 3, written with the engine's API
(what the controller does over P4Runtime).
"""
from __future__ import annotations

import os

from p4reduce.controller.engine_writer import EngineJobWriter
from p4reduce.controller.job_entries import JobSpec, MemberSpec
from p4reduce.protocol import constants as C
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address
from p4reduce.protocol.constants import Mode
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.p4names import lane_layout
from p4reduce.protocol.wire import Layout
from testbed.udp_stand_in import UdpStandIn


class P4SimUdpSwitch(UdpStandIn):
    """The real P4 program (compiled by p4sim-compile, run by p4sim's engine) behind a UDP socket.

    Workers live on 127.0.0.1 with distinct UDP ports; inside the switch each is host rank+1 of
    the address plan (protocol.addressing) on port rank+1. A datagram from a worker becomes the
    Ethernet/IPv4/UDP frame that host would send to the switch; each frame the program emits is
    delivered by UDP to the worker owning its destination port. The entries are the controller's
    (controller.job_entries), written into the engine by EngineJobWriter.
    """

    def __init__(self, bmv2_json: dict | str | bytes | os.PathLike, drop_every: int = 0) -> None:
        from p4sim.engine import Switch
        from p4sim.engine.program_loader import load_json
        program = load_json(bmv2_json)
        num_subblocks, subblock = lane_layout([r["name"] for r in program["register_arrays"]])
        self.layout = Layout(num_subblocks * subblock, subblock)   # what the program was built for
        self.sw = Switch(program)
        self.writer = EngineJobWriter(self.sw)
        self.jobs: dict[int, JobSpec] = {}
        self.by_port: dict[int, MemberSpec] = {}   # loopback UDP port -> the worker inside the switch
        self.wrong_port = 0        # frames emitted on a port that does not lead to their destination
        self.drop_every = drop_every
        super().__init__(name="p4sim-udp")

    def add_job(self, job_id: int, n_workers: int, slot_count: int, sparse: bool = False,
                slot_base: int = 0, wire_token: int = 0) -> None:
        self.jobs[job_id] = JobSpec(job_id, n_workers, slot_base, slot_count, Mode.SPARSE if sparse else Mode.DENSE,
                                    wire_token)
        self.writer.install_job(self.jobs[job_id])

    def add_worker(self, job_id: int, rank: int, ip: str, udp_port: int) -> None:
        """Rank `rank` of the job, sending from 127.0.0.1:`udp_port` (`ip` is where it really is)."""
        host = host_address(rank + 1)
        member = MemberSpec(rank, host.ip, udp_port, host.mac, port=rank + 1)
        self.by_port[udp_port] = member
        self.writer.add_member(self.jobs[job_id], member)

    def counter(self, name: str, index: int) -> int:
        return self.sw.counter_read(name, index)[0]

    def _serve(self):
        while not self._stop.is_set():
            try:
                data, (_, sport) = self.sock.recvfrom(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            self.received += 1
            if self.drop_every and self.received % self.drop_every == 0:
                continue  # deterministic loss
            who = self.by_port.get(sport)
            if who is None:
                continue
            frame = udp_frame(who.mac, SERVICE_MAC, who.ip, SERVICE_IP, sport, C.AGG_UDP_PORT, data)
            for egress, out in self.sw.process(who.port, frame):
                f = parse_udp_frame(out)
                dest = self.by_port.get(f.dport)
                if dest is None or dest.port != egress or dest.ip != f.dst_ip:
                    self.wrong_port += 1
                    continue
                self.sock.sendto(f.payload, ("127.0.0.1", f.dport))
