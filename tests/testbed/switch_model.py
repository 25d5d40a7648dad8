"""Pure-Python reference model of the switch's aggregation state machine (docs/protocol.md
section 5): the oracle in tests, and a fake switch for worker development.

Two entry points:
  * `receive(src_ip, src_port, payload)` -> Outcome with deliveries as (ip, port, payload):
    what a worker's UDP socket would see (a fake switch). A UDP fake has no switch ports, so the
    ingress-port binding (SPOOFED_PORT) and the source guard (SPOOFED_SOURCE) are checked only
    when `ingress_port` is given.
  * `process(ingress_port, frame)` -> list of (egress_port, frame): byte-exact frames, as the P4
    program emits them (the oracle for p4sim runs). The source guard applies to every IPv4
    frame (a spoofed one is dropped whatever it carries); past it, only aggregation frames are
    modelled, and
    the switch has no routes: a contribution for a job not in its table is dropped as UNKNOWN_JOB
    (the P4 program forwards it when a route exists, docs/protocol.md section 5).

A job's tree entry (`set_tree`, docs/protocol.md section 11) makes the model an interior switch
(a completed round goes up to the parent as one contribution, the parent's result comes down) or
a root (a round completes after its children), as the program's `tree` table does.
"""
from __future__ import annotations

import dataclasses
import struct

import numpy as np

from p4reduce.controller.job_entries import JobSpec, ParentLink
from p4reduce.protocol import constants as C
from p4reduce.protocol.constants import AggEvent, DropReason, Flags, Mode, MsgType
from p4reduce.protocol.frames import FrameError, ip_int, ip_str, ipv4_checksum, ipv4_source, mac_bytes, parse_udp_frame
from p4reduce.protocol.wire import DEFAULT_LAYOUT, Header, Layout, encode_subblocks, read_subblocks


@dataclasses.dataclass
class WorkerAddr:
    job_id: int
    rank: int
    ip: str
    port: int
    mac: str = "00:00:00:00:00:00"
    switch_port: int = 0        # where its packets arrive and its results leave (set_rank's port)


@dataclasses.dataclass
class Delivery:
    """One result leaving the switch."""
    job_id: int
    rank: int
    ip: str
    port: int
    payload: bytes
    unicast: bool


@dataclasses.dataclass
class Outcome:
    """What the switch did with one packet: a drop reason, or an event and its deliveries; `up`:
    the contribution payload a tree child sends its parent (out of the parent link's port)."""
    drop: DropReason | None = None
    event: AggEvent | None = None
    deliveries: list[Delivery] = dataclasses.field(default_factory=list)
    up: bytes | None = None
    down: bool = False          # the deliveries are the parent's result (their IPv4 source is kept)


class SwitchModel:
    """The aggregation part of p4src/p4reduce.p4, register for register."""

    # a stand-in for a switch: its layout is its program's build setting, by default the default build's
    def __init__(self, layout: Layout = DEFAULT_LAYOUT, slots: int = C.SLOTS,
                 max_workers: int = C.MAX_WORKERS):
        self.layout = layout
        self.slots = slots
        self.max_workers = max_workers
        size = 2 * slots
        self.seen = np.zeros(size, np.uint64)
        self.count = np.zeros(size, np.int64)
        self.round_offset = np.zeros(size, np.int64)
        self.union_bitmap = np.zeros(size, np.int64)
        self.have_result = np.zeros(size, np.int64)
        self.min_next = np.zeros(size, np.int64)
        self.max_exp = np.zeros(size, np.int64)
        self.lanes = np.zeros((size, layout.lanes), np.int64)
        self.jobs: dict[int, JobSpec] = {}     # as the controller describes them (set_job's entry)
        self.workers: dict[tuple[int, int, int], WorkerAddr] = {}   # (ip, port, job) -> addr
        self.source_guard: dict[int, int] = {}      # switch port -> the IPv4 its host must send from
        self.trees: dict[int, tuple[int, ParentLink | None]] = {}   # job -> (children, parent)
        self.drop_counts = np.zeros(C.DROP_REASONS_SIZE, np.int64)
        self.event_counts = np.zeros(C.AGG_EVENTS_SIZE, np.int64)

    # ---- control plane ----------------------------------------------------------------------
    def add_job(self, job_id: int, slot_base: int, slot_count: int, num_workers: int,
                mode: Mode = Mode.DENSE, mcast_grp: int = 0, wire_token: int = 0) -> JobSpec:
        """The job's set_job entry. Its multicast group is the controller's numbering
        (JobSpec.multicast_group); `mcast_grp` (0: that one) must agree with it."""
        if slot_base + slot_count > self.slots:
            raise ValueError(f"job {job_id}: slots [{slot_base}, {slot_base + slot_count}) exceed SLOTS={self.slots}")
        if not 1 <= num_workers <= self.max_workers:
            raise ValueError(f"job {job_id}: num_workers={num_workers} must be 1..{self.max_workers}")
        job = JobSpec(job_id, num_workers, slot_base, slot_count, Mode(mode), wire_token)
        if mcast_grp and mcast_grp != job.multicast_group:
            raise ValueError(f"job {job_id}: multicast group {mcast_grp:#x} is not the controller's "
                             f"{job.multicast_group:#x}")
        self.jobs[job_id] = job
        self.clear_slots(slot_base, slot_count)
        return job

    def add_worker(self, job_id: int, rank: int, ip: str, port: int, mac: str = "00:00:00:00:00:00",
                   switch_port: int = 0) -> WorkerAddr:
        addr = WorkerAddr(job_id, rank, ip, port, mac, switch_port)
        self.workers[(ip_int(ip), port, job_id)] = addr
        return addr

    def set_tree(self, job_id: int, children: int, parent: ParentLink | None) -> None:
        """The job's tree entry: aggregate_root(children) when parent is None, else aggregate_child."""
        self.trees[job_id] = (children, parent)

    def add_source_guard(self, switch_port: int, ip: str) -> None:
        """Bind a host-facing port to its host's IPv4 address (table source_guard)."""
        self.source_guard[switch_port] = ip_int(ip)

    def clear_slots(self, slot_base: int, slot_count: int) -> None:
        """The controller's duty before a job uses slots: clear seen and count of both copies."""
        sl = slice(2 * slot_base, 2 * (slot_base + slot_count))
        self.seen[sl] = 0
        self.count[sl] = 0

    def worker_of(self, job_id: int, rank: int) -> WorkerAddr:
        for addr in self.workers.values():
            if addr.job_id == job_id and addr.rank == rank:
                return addr
        raise KeyError(f"job {job_id} has no worker of rank {rank}")

    # ---- data plane -------------------------------------------------------------------------
    def receive(self, src_ip: str, src_port: int, payload: bytes,
                ingress_port: int | None = None) -> Outcome:
        """A payload as sent by a worker's UDP socket (lengths and checksum are right by construction).
        With `ingress_port`, a known worker's packet arriving on another port is SPOOFED_PORT, and
        a source other than the guarded port's host is SPOOFED_SOURCE."""
        if self._spoofed_source(ingress_port, ip_int(src_ip)):
            return self._drop(DropReason.SPOOFED_SOURCE)
        return self._aggregate(ip_int(src_ip), src_port, payload, lengths_ok=True, checksum_ok=True,
                               ingress_port=ingress_port)

    def process(self, ingress_port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """An aggregation frame -> the frames the P4 program emits, as (egress_port, bytes)."""
        source = ipv4_source(frame)
        if source is not None and self._spoofed_source(ingress_port, source):
            self._drop(DropReason.SPOOFED_SOURCE)
            return []
        try:
            udp = parse_udp_frame(frame, strict=False)
        except FrameError:
            udp = None
        if udp is None or udp.dport != C.AGG_UDP_PORT:
            raise ValueError("SwitchModel.process models aggregation frames only (IPv4 IHL 5, UDP to AGG_UDP_PORT)")
        payload = frame[C.FRAME_HEADER_BYTES:]   # all of it: bytes past the UDP length count as wrong lengths
        lengths_ok = udp.lengths_ok(len(frame))
        if len(payload) >= C.HEADER_BYTES:
            bitmap = Header.unpack(payload).bitmap & self.layout.full_bitmap
            lengths_ok = lengths_ok and udp.udp_len == C.UDP_HEADER_BYTES + self.layout.payload_bytes(bitmap)
        outcome = self._aggregate(ip_int(udp.src_ip), udp.sport, payload, lengths_ok, udp.checksum_ok, ingress_port)
        eth, ip = frame[:C.ETH_HEADER_BYTES], frame[C.ETH_HEADER_BYTES:C.ETH_HEADER_BYTES + C.IPV4_HEADER_BYTES]
        frames = []
        if outcome.up is not None:
            _, parent = self.trees[Header.unpack(payload).job_id]
            assert parent is not None
            frames.append((parent.port, _up_frame(eth, ip, parent, outcome.up)))
        for d in outcome.deliveries:
            if d.unicast:
                port, dst_mac = ingress_port, eth[6:12]
            else:
                addr = self.worker_of(d.job_id, d.rank)
                port, dst_mac = addr.switch_port, mac_bytes(addr.mac)
            src_ip = ip[12:16] if outcome.down else ip[16:20]
            frames.append((port, _result_frame(eth, ip, dst_mac, ip_int(d.ip), d.port, d.payload, src_ip)))
        return frames

    def _spoofed_source(self, ingress_port: int | None, src_ip: int) -> bool:
        """The source guard: the port has a host bound to it, and this is not its address."""
        want = self.source_guard.get(ingress_port) if ingress_port is not None else None
        return want is not None and src_ip != want

    def _aggregate(self, src_ip: int, src_port: int, payload: bytes, lengths_ok: bool,
                   checksum_ok: bool, ingress_port: int | None = None) -> Outcome:
        lay = self.layout
        if len(payload) < C.HEADER_BYTES:
            return self._drop(DropReason.TRUNCATED)
        h = Header.unpack(payload)
        if len(payload) < lay.payload_bytes(h.bitmap & lay.full_bitmap):
            return self._drop(DropReason.TRUNCATED)
        if not checksum_ok:
            return self._drop(DropReason.BAD_CHECKSUM)
        if h.msg_type not in (MsgType.CONTRIB, MsgType.RESULT):
            return self._drop(DropReason.BAD_TYPE)
        from_parent = h.msg_type == MsgType.RESULT
        job = self.jobs.get(h.job_id)
        if job is None:
            return self._drop(DropReason.BAD_TYPE if from_parent else DropReason.UNKNOWN_JOB)
        children, parent = self.trees.get(h.job_id, (job.workers, None))
        if from_parent:
            # only an interior switch takes a result, and only on its uplink
            if parent is None or ingress_port != parent.port:
                return self._drop(DropReason.BAD_TYPE)
        else:
            worker = self.workers.get((src_ip, src_port, h.job_id))
            if worker is None:
                return self._drop(DropReason.UNKNOWN_WORKER)
            if ingress_port is not None and ingress_port != worker.switch_port:
                return self._drop(DropReason.SPOOFED_PORT)
            if h.rank != worker.rank:
                return self._drop(DropReason.BAD_RANK)
            if worker.rank >= job.workers or worker.rank >= self.max_workers:
                return self._drop(DropReason.RANK_RANGE)
        if h.slot >= job.slot_count:
            return self._drop(DropReason.SLOT_RANGE)
        if h.bitmap & ~lay.full_bitmap or (job.mode == Mode.DENSE and h.bitmap != lay.full_bitmap):
            return self._drop(DropReason.BAD_BITMAP)
        if not lengths_ok or len(payload) != lay.payload_bytes(h.bitmap):
            return self._drop(DropReason.BAD_LENGTH)
        if h.wire_token != job.wire_token:
            return self._drop(DropReason.BAD_WIRE_TOKEN)

        i = 2 * (job.slot_base + h.slot) + h.ver
        if from_parent:
            return self._result_from_parent(h, i, job, payload)
        me = np.uint64(1 << h.rank)
        if self.seen[i] & me:
            if self.count[i] == 0:
                if parent is not None and not self.have_result[i]:
                    # no result came down yet: the partial sum goes up again
                    return self._send_up(h, i, job, parent, AggEvent.RESENT_UP, Flags.RETX)
                self.event_counts[AggEvent.RESULT_UNICAST] += 1
                out = self._result(h, i, job, Flags.RETX, h.rank)
                return Outcome(event=AggEvent.RESULT_UNICAST,
                               deliveries=[Delivery(h.job_id, h.rank, ip_str(src_ip), src_port, out, True)])
            return self._drop(DropReason.DUPLICATE_PENDING)
        first = self.count[i] == 0
        if first and self.count[i ^ 1] != 0:
            return self._drop(DropReason.STALE_COPY)
        if not first and h.offset != self.round_offset[i]:
            return self._drop(DropReason.OFFSET_MISMATCH)
        self.seen[i ^ 1] &= ~me
        self.seen[i] |= me
        old_union = 0 if first else int(self.union_bitmap[i])
        block = _decode_lanes(payload, h.bitmap, lay)
        for k in range(lay.num_subblocks):
            if not h.bitmap >> k & 1:
                continue
            sl = slice(k * lay.subblock, (k + 1) * lay.subblock)
            if old_union >> k & 1:
                self.lanes[i, sl] = np.clip(self.lanes[i, sl] + block[sl], C.LANE_MIN, C.LANE_MAX)
            else:
                self.lanes[i, sl] = block[sl]
        self.union_bitmap[i] = old_union | h.bitmap
        self.min_next[i] = h.next_offset if first else min(int(self.min_next[i]), h.next_offset)
        self.max_exp[i] = h.exponent if first else max(int(self.max_exp[i]), h.exponent)
        if first:
            self.round_offset[i] = h.offset
            self.have_result[i] = 0
        self.count[i] = (self.count[i] + 1) % children
        if self.count[i] != 0:
            self.event_counts[AggEvent.ABSORBED] += 1
            return Outcome(event=AggEvent.ABSORBED)
        if parent is not None:
            return self._send_up(h, i, job, parent, AggEvent.SENT_UP, Flags.NONE)
        self.event_counts[AggEvent.RESULT_MULTICAST] += 1
        return Outcome(event=AggEvent.RESULT_MULTICAST, deliveries=self._multicast(h, i, job))

    def _multicast(self, h: Header, i: int, job: JobSpec) -> list[Delivery]:
        """The result of copy i to every replica of the job's group: every rank of a flat job;
        a tree node's members (its child switches and workers) by rank."""
        if h.job_id in self.trees:
            ranks = sorted(a.rank for a in self.workers.values() if a.job_id == job.job_id)
        else:
            ranks = list(range(job.workers))
        deliveries = []
        for rank in ranks:
            try:
                addr = self.worker_of(job.job_id, rank)
            except KeyError:
                self.drop_counts[DropReason.NO_WORKER_ADDR] += 1
                continue
            result = self._result(h, i, job, Flags.NONE, rank)
            deliveries.append(Delivery(job.job_id, rank, addr.ip, addr.port, result, False))
        return deliveries

    def _send_up(self, h: Header, i: int, job: JobSpec, parent: ParentLink, event: AggEvent,
                 flags: int) -> Outcome:
        """A tree child's round as one contribution of rank parent.rank to its parent."""
        self.event_counts[event] += 1
        union = int(self.union_bitmap[i])
        nxt = int(self.min_next[i])
        flags = int(flags) | (Flags.EOT if nxt == C.NEXT_NONE else 0)
        out = Header(msg_type=MsgType.CONTRIB, flags=flags, job_id=h.job_id, rank=parent.rank, count=0,
                     ver=h.ver, slot=h.slot, offset=int(self.round_offset[i]), next_offset=nxt,
                     exponent=int(self.max_exp[i]), reserved=h.reserved, bitmap=union,
                     wire_token=job.wire_token)
        return Outcome(event=event, up=out.pack() + encode_subblocks(self.lanes[i], union, self.layout))

    def _result_from_parent(self, h: Header, i: int, job: JobSpec, payload: bytes) -> Outcome:
        """The parent's result, taken only by the copy that waits for it (its round sent up at this
        offset, no result yet), stored as the copy's result and multicast to the children."""
        if self.count[i] != 0 or self.have_result[i] or not self.seen[i] or self.round_offset[i] != h.offset:
            return self._drop(DropReason.STALE_RESULT)
        self.have_result[i] = 1
        block = _decode_lanes(payload, h.bitmap, self.layout)
        for k in self.layout.present(h.bitmap):
            sl = slice(k * self.layout.subblock, (k + 1) * self.layout.subblock)
            self.lanes[i, sl] = block[sl]
        self.union_bitmap[i] = h.bitmap
        self.min_next[i] = h.next_offset
        self.max_exp[i] = h.exponent
        self.event_counts[AggEvent.RESULT_DOWN] += 1
        return Outcome(event=AggEvent.RESULT_DOWN, deliveries=self._multicast(h, i, job), down=True)

    def _result(self, h: Header, i: int, job: JobSpec, flags: int, rank: int) -> bytes:
        """The result payload of register index i, as seen by worker `rank`."""
        lay = self.layout
        union = int(self.union_bitmap[i])
        nxt = int(self.min_next[i])
        flags = int(flags) | (Flags.EOT if nxt == C.NEXT_NONE else 0)
        out = Header(msg_type=MsgType.RESULT, flags=flags, job_id=h.job_id, rank=rank,
                     count=job.workers, ver=h.ver, slot=h.slot, offset=int(self.round_offset[i]),
                     next_offset=nxt, exponent=int(self.max_exp[i]), reserved=h.reserved, bitmap=union,
                     wire_token=job.wire_token)
        return out.pack() + encode_subblocks(self.lanes[i], union, lay)

    def _drop(self, reason: DropReason) -> Outcome:
        self.drop_counts[reason] += 1
        return Outcome(drop=reason)

    # ---- inspection -------------------------------------------------------------------------
    def slot_sum(self, job_id: int, slot: int, ver: int) -> np.ndarray:
        """The aggregate a slot copy holds (zeros outside its union bitmap)."""
        job = self.jobs[job_id]
        i = 2 * (job.slot_base + slot) + ver
        out = self.lanes[i].copy().reshape(self.layout.num_subblocks, self.layout.subblock)
        for k in range(self.layout.num_subblocks):
            if not int(self.union_bitmap[i]) >> k & 1:
                out[k] = 0
        return out.reshape(-1).astype(np.int32)


def _decode_lanes(payload: bytes, bitmap: int, lay: Layout) -> np.ndarray:
    """The full block (int64, zeros for absent sub-blocks) of a payload already length-checked."""
    block = np.zeros((lay.num_subblocks, lay.subblock), np.int64)
    read_subblocks(payload, lay.present(bitmap), block, lay)
    return block.reshape(-1)


def _result_frame(eth: bytes, ip: bytes, dst_mac: bytes, dst_ip: int, dst_port: int,
                  payload: bytes, src_ip: bytes) -> bytes:
    """The contribution's frame rewritten into a result, exactly as the P4 program does it: from
    `src_ip` (the address the contribution went to, or the parent's result's own source)."""
    udp_len = C.UDP_HEADER_BYTES + len(payload)
    total = C.IPV4_HEADER_BYTES + udp_len
    src_mac = eth[0:6]
    new_ip = bytearray(ip)
    new_ip[2:4] = struct.pack("!H", total)
    new_ip[8] = C.RESULT_TTL
    new_ip[10:12] = b"\0\0"
    new_ip[12:16] = src_ip
    new_ip[16:20] = dst_ip.to_bytes(4, "big")
    new_ip[10:12] = struct.pack("!H", ipv4_checksum(bytes(new_ip)))
    udp = struct.pack("!HHHH", C.AGG_UDP_PORT, dst_port, udp_len, 0)
    return dst_mac + src_mac + eth[12:14] + bytes(new_ip) + udp + payload


def _up_frame(eth: bytes, ip: bytes, parent: ParentLink, payload: bytes) -> bytes:
    """A tree child's frame to its parent: from its own address and AGG_UDP_PORT to the unchanged
    destination (the service address), as the program's Uplink writes it."""
    udp_len = C.UDP_HEADER_BYTES + len(payload)
    new_ip = bytearray(ip)
    new_ip[2:4] = struct.pack("!H", C.IPV4_HEADER_BYTES + udp_len)
    new_ip[8] = C.RESULT_TTL
    new_ip[10:12] = b"\0\0"
    new_ip[12:16] = ip_int(parent.ip).to_bytes(4, "big")
    new_ip[10:12] = struct.pack("!H", ipv4_checksum(bytes(new_ip)))
    udp = struct.pack("!HHHH", C.AGG_UDP_PORT, C.AGG_UDP_PORT, udp_len, 0)
    return mac_bytes(parent.dst_mac) + mac_bytes(parent.src_mac) + eth[12:14] + bytes(new_ip) + udp + payload
