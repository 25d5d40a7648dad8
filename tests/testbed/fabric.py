"""Test harness: the compiled p4reduce program on p4sim's engine, configured the way the
controller configures it, run in lockstep with testbed.switch_model.SwitchModel (every output frame
must be byte-identical to the model's)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from p4reduce.controller.engine_writer import EngineJobWriter
from p4reduce.controller.job_entries import JobSpec, MemberSpec, ParentLink
from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC
from p4reduce.protocol.constants import Mode
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.wire import Layout
from testbed.switch_model import SwitchModel

if TYPE_CHECKING:
    from p4sim.engine import Engine


@dataclasses.dataclass
class WorkerEnd:
    """A worker as the fabric's frames see it: `port` is its UDP port, `switch_port` the switch's."""
    job_id: int
    rank: int
    ip: str
    port: int
    mac: str
    switch_port: int


class Fabric:
    """One p4reduce switch (engine + model) and the workers attached to it."""

    def __init__(self, switch: Engine, layout: Layout, slots: int = C.SLOTS,
                 max_workers: int = C.MAX_WORKERS, check_model: bool = True):
        self.sw = switch
        self.model = SwitchModel(layout, slots, max_workers)
        self.layout = layout
        self.check_model = check_model
        self.writer = EngineJobWriter(switch)
        self.jobs: dict[int, JobSpec] = {}
        self.ends: dict[tuple[int, int], WorkerEnd] = {}
        self.by_addr: dict[tuple[str, int], WorkerEnd] = {}
        self.mismatches: list[str] = []

    # ---- control plane, as the controller does it -------------------------------------------
    def add_job(self, job_id: int, num_workers: int, slot_base: int, slot_count: int,
                mode: Mode = Mode.DENSE, ports: list[int] | None = None, wire_token: int = 0) -> None:
        """A job and its workers (rank r on switch port ports[r], default r+1), in each job its own
        addresses (10.<job>.x.y), written as the controller writes them (controller.job_entries)."""
        ports = ports or [r + 1 for r in range(num_workers)]
        self.install_job(JobSpec(job_id, num_workers, slot_base, slot_count, Mode(mode), wire_token))
        for r in range(num_workers):
            self.add_worker(WorkerEnd(job_id, r, f"10.{job_id % 256}.{r // 200}.{r % 200 + 1}", 40000 + r,
                                      f"02:00:{job_id >> 8:02x}:{job_id & 255:02x}:00:{r + 1:02x}", ports[r]))

    def install_job(self, job: JobSpec) -> None:
        """A job's jobs-table entry (slots cleared), without workers, in switch and model."""
        self.jobs[job.job_id] = job
        self.writer.install_job(job)
        self.model.add_job(job.job_id, job.slot_base, job.slot_count, job.workers, job.mode,
                           job.multicast_group, job.wire_token)

    def add_worker(self, end: WorkerEnd) -> None:
        """One worker of a job added before (its entries, and the job's multicast group)."""
        self.writer.add_member(self.jobs[end.job_id], MemberSpec(end.rank, end.ip, end.port, end.mac, end.switch_port))
        self.model.add_worker(end.job_id, end.rank, end.ip, end.port, end.mac, end.switch_port)
        self.ends[(end.job_id, end.rank)] = end
        self.by_addr[(end.ip, end.port)] = end

    def set_tree(self, job_id: int, children: int, parent: ParentLink | None) -> None:
        """The job's place in a tree of switches (table tree), in switch and model."""
        self.writer.set_tree(job_id, children, parent)
        self.model.set_tree(job_id, children, parent)

    def guard(self, port: int, ip: str) -> None:
        """Bind a host-facing port to its host's IPv4 source (source_guard), in switch and model."""
        self.sw.table_add(N.SOURCE_GUARD, {N.SOURCE_GUARD_KEY[0]: port}, N.HOST_SOURCE, {"ip": ip})
        self.model.add_source_guard(port, ip)

    # ---- data plane -------------------------------------------------------------------------
    def frame(self, job_id: int, rank: int, payload: bytes, **kw) -> tuple[int, bytes]:
        end = self.ends[(job_id, rank)]
        return end.switch_port, udp_frame(end.mac, SERVICE_MAC, end.ip, SERVICE_IP, end.port,
                                          C.AGG_UDP_PORT, payload, **kw)

    def inject(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """One frame through the switch (and the model); returns the switch's output frames."""
        out = self.sw.process(port, frame)
        if self.sw.last_internal_error is not None:
            raise AssertionError(f"engine internal error: {self.sw.last_internal_error!r}")
        if self.check_model:
            want = self.model.process(port, frame)
            if sorted(out) != sorted(want):
                self.mismatches.append(f"frame {frame.hex()}:\n switch {[(p, f.hex()) for p, f in out]}\n"
                                       f" model  {[(p, f.hex()) for p, f in want]}")
                raise AssertionError(self.mismatches[-1])
        return out

    def send(self, job_id: int, rank: int, payload: bytes) -> list[tuple[int, int, bytes]]:
        """A worker's UDP payload in, the results out as (job, rank, payload) (LossyNetwork's switch)."""
        results = []
        for port, frame in self.inject(*self.frame(job_id, rank, payload)):
            udp = parse_udp_frame(frame, strict=True)
            end = self.by_addr[(udp.dst_ip, udp.dport)]
            assert port == end.switch_port, f"result for {end} left on port {port}"
            assert (udp.src_ip, udp.sport) == (SERVICE_IP, C.AGG_UDP_PORT)
            assert udp.dst_mac == end.mac and udp.src_mac == SERVICE_MAC
            results.append((end.job_id, end.rank, udp.payload))
        return results

    # ---- counters ---------------------------------------------------------------------------
    def drops(self) -> dict[int, int]:
        """Non-zero ingress drop counters (packets) by reason."""
        out = {}
        for reason in range(C.DROP_REASONS_SIZE):
            packets, _ = self.sw.counter_read(N.DROP_REASONS, reason)
            if packets:
                out[reason] = packets
        return out

    def events(self) -> dict[int, int]:
        return {e: self.sw.counter_read(N.AGG_EVENTS, e)[0] for e in range(C.AGG_EVENTS_SIZE)}

    def assert_counters_match_model(self) -> None:
        model_drops = {int(i): int(v) for i, v in enumerate(self.model.drop_counts)
                       if v and i != C.DropReason.NO_WORKER_ADDR}
        assert self.drops() == model_drops
        model_events = {e: int(self.model.event_counts[e]) for e in range(C.AGG_EVENTS_SIZE)}
        model_events[C.AggEvent.FORWARDED] = self.events()[C.AggEvent.FORWARDED]
        assert self.events() == model_events
