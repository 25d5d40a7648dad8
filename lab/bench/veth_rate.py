"""Switch packet rate on veth pairs: a P4 target process on the switch side, a traffic generator
written in C (bench/vethgen.c) on the host side, each pinned to its own core, so the figure is
the switch's, not the generator's.

    python -m lab.bench.veth_rate [--seconds S] [--backends native,python] [--lanes 32,256]
                                       [--window W] [--repeat N] [--json]

* aggregation, closed loop: N workers keep `window` slots busy each; the switch aggregates and
  multicasts results; figure = contributions aggregated per second (results' lanes checked).
* L2 forwarding, open loop: frames out of one pair as fast as the generator sends them, those the
  switch forwards counted on the other pair's kernel counter; figure = frames forwarded per second.

The same rig runs any simple_switch_grpc-compatible target: p4sim-switch (--backend native or
python) and simple_switch_grpc when it is on PATH, in the same run, reported as a ratio. Only
what this module creates is touched: veth pairs named ``b4r<tag>w<i>{s,h}`` (switch side / host
side, in the root namespace, no addresses) and the target process it started (stopped by PID).
Programs are pushed and jobs installed over P4Runtime with the controller's library, as the
controller does it.  Without a C compiler the generator falls back to the Python one
(bench/aggtraffic.py), which is slower than a native switch.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from typing import TYPE_CHECKING

from lab.bench import aggregation_program as progmod
from lab.bench import aggtraffic
from p4reduce.mininet_topos.ports import free_port, port_open
from p4reduce.mininet_topos.processes import stop_process

if TYPE_CHECKING:
    from p4reduce.protocol.wire import Layout

PROGRAM = progmod.DEFAULT
JOB_ID = 1
SERVICE = aggtraffic.Service()


class RigError(RuntimeError):
    """The rig cannot be built or the target did not come up (message has the target's log)."""


def _ip(*args) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RigError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


SWITCH_CPU, GENERATOR_CPU = 0, 1


def _pinned(argv: list[str], cpu: int) -> list[str]:
    """argv run on one CPU (when the machine has two and taskset is there)."""
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", str(cpu), *argv]
    return argv


class VethRig:
    """N veth pairs plus one target process; a context manager that removes both.

    backend: "native" or "python" for p4sim-switch (None: its default); window: slots each
    worker keeps busy (the job gets that many slots); layout: the program's lanes/sub-block."""

    def __init__(self, workers: int, target: str = "p4sim", program: pathlib.Path = PROGRAM,
                 backend: str | None = None, window: int = 64, layout: Layout | None = None,
                 pin: bool = True) -> None:
        from p4reduce.protocol.wire import DEFAULT_LAYOUT
        self.workers = workers
        self.target = target
        self.backend = backend
        self.window = window
        self.layout = layout or DEFAULT_LAYOUT
        self.pin = pin
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
        prefix = find_target(self.target)
        self.target_name = target_name(prefix)
        if self.target_name == "p4sim-switch" and self.backend:
            prefix = [*prefix, "--backend", self.backend]
        self.argv = cmd.argv(prefix)
        if self.pin:
            self.argv = _pinned(self.argv, SWITCH_CPU)
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
        self.window = min(self.window, C.SLOTS)
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
        """Closed-loop aggregation over `duration_s`: contributions aggregated per second (pps),
        results received, contributions sent, wrong results (lanes not the expected sum)."""
        window = window or self.window
        generator = vethgen()
        if generator is None:
            result = aggtraffic.run(self.endpoints(), SERVICE, JOB_ID, window, duration_s=duration_s)
            result["generator"] = "Python (bench/aggtraffic.py)"
        else:
            spec = self.workdir / "agg.spec"
            spec.write_bytes(_aggregation_spec(self.endpoints(), window, self.layout, duration_s))
            doc = _run_generator(generator, spec, self.pin)
            result = {"workers": self.workers, "window": window, "duration_s": doc["seconds"],
                      "results_received": doc["results"], "contributions_sent": doc["sent"],
                      "retransmissions": doc["retransmissions"], "wrong_results": doc["wrong_results"],
                      "rounds_per_s": doc["rounds_per_s"], "pps": doc["contributions_per_s"],
                      "generator": "C (bench/vethgen.c)"}
        result["target"] = self.target_name
        result["backend"] = self.backend if self.target_name == "p4sim-switch" else None
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


# ---- the C traffic generator ----------------------------------------------------------------------
def vethgen() -> str | None:
    """Path of the compiled generator (built once into p4sim's cache), None without a C compiler."""
    from p4sim.engine.native import NativeBuildError, toolchain
    try:
        return toolchain.build_executable(str(pathlib.Path(__file__).with_name("vethgen.c")), "vethgen")
    except NativeBuildError:
        return None


def _frame(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def _spec_head(mode: int, duration_s: float, warmup_s: float, ifaces: list[str]) -> bytes:
    out = b"VGEN" + struct.pack("<IIII", mode, int(duration_s * 1000), int(warmup_s * 1000), len(ifaces))
    return out + b"".join(name.encode().ljust(16, b"\0") for name in ifaces)


def _aggregation_spec(endpoints, window: int, layout, duration_s: float, warmup_s: float = 0.5,
                      retx_ms: int = 200) -> bytes:
    """Dense contributions (every lane of rank r is r + 1) for every worker, slot and version."""
    import numpy as np

    from p4reduce.protocol import constants as C
    from p4reduce.protocol import frames, wire
    n = len(endpoints)
    out = [_spec_head(2, duration_s, warmup_s, [ep.iface for ep in endpoints]),
           struct.pack("<IIIIII", window, C.FRAME_HEADER_BYTES, int(C.MsgType.RESULT),
                       _field_offset(wire.HEADER_DTYPE, "slot_ver"), wire.SLOT_BITS, retx_ms)]
    out.append(_frame(np.full(layout.lanes, n * (n + 1) // 2, dtype=">i4").tobytes()))
    out.append(struct.pack("<I", C.FRAME_HEADER_BYTES + C.HEADER_BYTES))
    for ep in endpoints:
        lanes = np.full(layout.lanes, ep.rank + 1, dtype=np.int32)
        for slot in range(window):
            offset = slot * layout.lanes
            for ver in (0, 1):
                header = wire.Header(job_id=JOB_ID, rank=ep.rank, ver=ver, slot=slot, offset=offset,
                                     next_offset=offset + window * layout.lanes, bitmap=layout.full_bitmap)
                payload = wire.encode(header, lanes, layout)
                out.append(_frame(frames.udp_frame(ep.mac, SERVICE.mac, ep.ip, SERVICE.ip, ep.udp_port,
                                                   SERVICE.udp_port, payload)))
    return b"".join(out)


def _field_offset(dtype, name: str) -> int:
    fields = dtype.fields
    if fields is None:
        raise RigError(f"header dtype has no field {name}")
    return int(fields[name][1])


def _run_generator(generator: str, spec: pathlib.Path, pin: bool) -> dict:
    argv = [generator, str(spec)]
    proc = subprocess.run(_pinned(argv, GENERATOR_CPU) if pin else argv, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        raise RigError(f"traffic generator failed: {proc.stderr.strip() or proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])



# ---- L2 forwarding ----------------------------------------------------------------------------------
class L2Rig(VethRig):
    """Two veth pairs and the L2 program of bench/switch_rate.py: every destination forwards from
    switch port 1 to switch port 2."""

    def __init__(self, target: str = "p4sim", backend: str | None = None, pin: bool = True):
        super().__init__(2, target=target, program=PROGRAM, backend=backend, pin=pin)
        self.program = self.workdir / "l2.json"

    def _start_target(self) -> None:
        from lab.bench.switch_rate import l2_build
        program, _ = l2_build()
        self.program.write_text(json.dumps(program))
        super()._start_target()

    def _program(self) -> None:
        from p4.v1 import p4runtime_pb2

        from lab.bench.switch_rate import L2_ACTION, L2_TABLE, l2_build, l2_entries
        from p4reduce.controller.connection import SwitchConnection
        _, p4info = l2_build()
        self.conn = SwitchConnection(self.grpc_addr, device_id=0, election_id=1)
        self.conn.connect(timeout=30)
        self.conn.push_pipeline(p4info, self.program.read_bytes())
        table = next(t for t in p4info.tables if t.preamble.name == L2_TABLE)
        action = next(a for a in p4info.actions if a.preamble.name == L2_ACTION)
        updates = []
        for mac, _port in l2_entries(ports=(2,)):
            entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
            entry.match.add(field_id=table.match_fields[0].id).exact.value = mac.to_bytes(6, "big").lstrip(b"\0")
            entry.action.action.action_id = action.preamble.id
            entry.action.action.params.add(param_id=action.params[0].id, value=b"\x02")
            updates.append(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT,
                                                entity=p4runtime_pb2.Entity(table_entry=entry)))
        self.conn.write(updates)

    def measure(self, duration_s: float, window: int | None = None) -> dict:
        """Open loop: frames/s the switch forwards from pair 0 to pair 1."""
        from lab.bench.switch_rate import L2_DESTINATIONS, l2_frame
        generator = vethgen()
        if generator is None:
            raise RigError("the L2 benchmark needs the C traffic generator (gcc)")
        spec = self.workdir / "l2.spec"
        frames = [l2_frame(i) for i in range(L2_DESTINATIONS)]
        spec.write_bytes(_spec_head(1, duration_s, 0.5, [h for _s, h in self.pairs])
                         + struct.pack("<I", len(frames)) + b"".join(_frame(f) for f in frames))
        doc = _run_generator(generator, spec, self.pin)
        return {"target": self.target_name, "backend": self.backend if self.target_name == "p4sim-switch" else None,
                "duration_s": doc["seconds"], "offered_per_s": doc["sent_per_s"], "pps": doc["forwarded_per_s"],
                "forwarded": doc["forwarded"], "generator": "C (bench/vethgen.c)"}


# ---- the command line -------------------------------------------------------------------------------
def _targets(backends):
    """[(target, backend, label)] to measure: p4sim-switch per backend, simple_switch_grpc if on PATH."""
    out = [("p4sim", b, f"p4sim-switch --backend {b}") for b in backends]
    if shutil.which("simple_switch_grpc"):
        out.append(("bmv2", None, "simple_switch_grpc"))
    return out


def _best(make_rig, duration_s, repeat, window=None):
    runs = []
    for _ in range(repeat):
        rig = make_rig()
        with rig:
            try:
                runs.append(rig.measure(duration_s, window=window))
            finally:
                rig.close_connection()
    return max(runs, key=lambda r: r["pps"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement")
    ap.add_argument("--backends", default="native,python", help="p4sim-switch backends: native, python")
    ap.add_argument("--cases", default="aggregation,l2,aggregation256", help="aggregation, l2, aggregation256")
    ap.add_argument("--window", type=int, default=128, help="slots each worker keeps busy")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best counts")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON document")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("veth_rate: needs root (veth pairs, AF_PACKET)", file=sys.stderr)
        return 2
    from lab.bench.switch_rate import LANES_32, LANES_256, compile_p4reduce
    from p4reduce.protocol.wire import Layout
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    programs = {"aggregation": (compile_p4reduce(LANES_32), Layout(32, 8)),
                "aggregation256": (compile_p4reduce(LANES_256), Layout(256, 16))}
    rows = []
    for case in cases:
        for target, backend, label in _targets(backends):
            try:
                if case == "l2":
                    best = _best(lambda t=target, b=backend: L2Rig(t, b), args.seconds, args.repeat)
                    what, unit = "L2 forwarding (1 exact table, 256 entries), 64-byte frames", "packets/s"
                else:
                    path, layout = programs[case]
                    best = _best(lambda t=target, b=backend, p=path, lay=layout: VethRig(
                        args.workers, target=t, program=p, backend=b, window=args.window, layout=lay),
                        args.seconds, args.repeat)
                    what = f"aggregation closed loop ({layout.lanes} lanes, {args.workers} workers, dense)"
                    unit = "contributions/s"
                rows.append({**best, "case": what, "target": label, "unit": unit})
            except Exception as exc:  # one target failing does not lose the others' figures
                rows.append({"case": case, "target": label, "status": "failed",
                             "error": f"{type(exc).__name__}: {exc}"})
    for row in rows:  # simple_switch_grpc in the same run: the ratio
        ref = next((r for r in rows if r.get("case") == row.get("case") and r["target"] == "simple_switch_grpc"
                    and r.get("pps")), None)
        if ref is not None and row.get("pps"):
            row["ratio_over_simple_switch_grpc"] = round(row["pps"] / ref["pps"], 1)
    doc = {"rows": rows, "method": f"best of {args.repeat} runs of {args.seconds:g} s; switch pinned to CPU "
           f"{SWITCH_CPU}, C traffic generator to CPU {GENERATOR_CPU}"}
    if args.json:
        print(json.dumps(doc))
        return 0
    for row in rows:
        if "pps" in row:
            ratio = f"  ({row['ratio_over_simple_switch_grpc']}x simple_switch_grpc)" \
                if "ratio_over_simple_switch_grpc" in row else ""
            print(f"{row['target']:<30} {row['case']:<62} {row['pps']:>10,} {row['unit']}{ratio}")
        else:
            print(f"{row['target']:<30} {row['case']:<62} failed: {row['error']}")
    print(doc["method"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
