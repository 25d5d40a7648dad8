"""Differential fuzzing: the native backend against the Python engine (the reference).

For every program -- examples/p4, tests/p4sim/engine/programs, p4src/p4reduce.p4, the shared reference
programs compiled by p4sim-compile and as real p4c wrote them -- both engines get the same
control-plane state (the reference case's entries where there is one, random entries,
multicast groups, clone sessions, register cells and value-set members otherwise) and the same
packets: random walks through the program's parse graph that take each select case with field
values drawn from the pools the table keys use, the reference case's packets, mutations of
both (bit flips, truncation, growth) and plain random bytes, on random ports.  Every packet's
outputs, and at the end every register cell, counter and direct counter, must be identical.

Clocks and random numbers are frozen in both engines so the comparison is deterministic.

    python tests/p4sim/native/fuzz.py [--packets N] [--seed S] [--only NAME]   (run from the repository)

Also imported by test_differential_fuzz.py, which runs it in process and, once, under
AddressSanitizer + UBSan in a subprocess.
"""
import argparse
import json
import pathlib
import random
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
REFERENCE = next((d / "shared" / "p4-reference" for d in (REPO.parent, REPO.parent.parent)
                  if (d / "shared" / "p4-reference").is_dir()), None)
BATCH = 2048


# ---- programs ------------------------------------------------------------------------------------
def program_names():
    """Names of every program the fuzz covers (cheap: nothing compiled)."""
    names = [p.stem for p in sorted((REPO / "examples" / "p4").glob("*.p4"))]
    names += [p.stem for p in sorted((REPO / "tests" / "p4sim" / "engine" / "programs").glob("*.p4"))]
    names.append("p4reduce")
    if REFERENCE is not None:
        for p in sorted((REFERENCE / "programs").glob("*.p4")):
            names += [f"{p.stem} (p4sim-compile)", f"{p.stem} (p4c)"]
    return names


def load(name):
    """(BMv2 JSON dict, case) of one program: the reference case, AGGREGATION for p4reduce, or None."""
    from p4sim.compiler import compile_file
    if name == "p4reduce":
        return compile_file(str(REPO / "p4reduce" / "p4src" / "p4reduce.p4")).bmv2, AGGREGATION
    stem, _, kind = name.partition(" (")
    if kind:
        case = json.loads((REFERENCE / "programs" / f"{stem}.case.json").read_text())
        if kind == "p4c)":
            return json.loads((REFERENCE / "p4c-out" / f"{stem}.json").read_text()), case
        return compile_file(str(REFERENCE / "programs" / f"{stem}.p4")).bmv2, case
    for folder in (REPO / "examples" / "p4", REPO / "tests" / "p4sim" / "engine" / "programs"):
        if (folder / f"{stem}.p4").exists():
            return compile_file(str(folder / f"{stem}.p4")).bmv2, None
    raise KeyError(name)


# ---- deterministic engines -----------------------------------------------------------------------
class _FrozenClock:
    @staticmethod
    def monotonic():
        return 1000.0


def frozen_pair(program):
    """(Python engine, native) switches with packet clocks at 0 and random() at its lower bound."""
    from p4sim.engine import hashes
    from p4sim.engine import switch as python_switch
    from p4sim.engine.native.switch import NativeSwitch
    saved = python_switch.time
    python_switch.time = _FrozenClock
    try:
        py = python_switch.Switch(program)
    finally:
        python_switch.time = saved
    ns = py._code.ns
    ns["_randint"] = lambda lo, hi: lo
    for key, value in list(ns.items()):
        if value is hashes.rand:
            ns[key] = lambda data: 0
    py._t0 = 1000.0
    nat = NativeSwitch(program)
    nat.set_determinism(frozen_us=0, fixed_random=True)
    return py, nat


class FrozenTime:
    """Context manager: the Python engine's packet clock reads 1000.0 s (timestamps 0)."""

    def __enter__(self):
        from p4sim.engine import switch as python_switch
        self.module, self.saved = python_switch, python_switch.time
        python_switch.time = _FrozenClock

    def __exit__(self, *exc):
        self.module.time = self.saved


# ---- values --------------------------------------------------------------------------------------
class Pools:
    """Per bit width, a few values both table keys and packet fields draw from (so entries hit),
    including the program's own constants (select cases, const entries, comparisons)."""

    def __init__(self, rng, program=None):
        self.rng = rng
        self.cache = {}
        self.consts = sorted(_constants(program or {}))

    def of(self, width):
        if width not in self.cache:
            m = (1 << width) - 1
            vals = {0, 1 & m, 2 & m, 3 & m, m, (m - 1) & m, 0x0800 & m, 0x11 & m, 0x86DD & m, 0x8100 & m}
            vals |= {self.rng.getrandbits(width) for _ in range(4)}
            vals |= {c for c in self.consts if c <= m}
            self.cache[width] = sorted(vals)
        return self.cache[width]

    def value(self, width, p_pool=0.6):
        if width <= 0:
            return 0
        if self.rng.random() < p_pool:
            return self.rng.choice(self.of(width))
        return self.rng.getrandbits(width)


def _constants(node, found=None):
    """Every hexstr constant of the JSON (select values, const entry keys, operands)."""
    found = set() if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and key in ("value", "key", "start", "end") and value.startswith(("0x", "-0x")):
                v = int(value, 16)
                if 0 <= v < (1 << 64) and len(found) < 256:
                    found.add(v)
            else:
                _constants(value, found)
    elif isinstance(node, list):
        for item in node:
            _constants(item, found)
    return found


# ---- the control plane ---------------------------------------------------------------------------
AGGREGATION = {"aggregation": True}  # p4src/p4reduce.p4: a job installed as the controller does


def aggregation_case(rng, workers=4, slots=8):
    """(install(switch), seed frames) for p4reduce.p4: a dense job with `workers` members, and
    contributions of every rank to every slot, both shadow versions, dense and sparse bitmaps."""
    from p4reduce.controller.engine_writer import EngineJobWriter
    from p4reduce.controller.job_entries import JobSpec, MemberSpec
    from p4reduce.protocol import constants as PC
    from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address
    from p4reduce.protocol.frames import udp_frame
    from p4reduce.protocol.wire import Header, encode

    hosts = [host_address(r + 1) for r in range(workers)]
    members = [MemberSpec(r, hosts[r].ip, 5000, hosts[r].mac, port=r + 1) for r in range(workers)]
    spec = JobSpec(1, workers, 0, slots, PC.Mode.DENSE)

    def install(sw):
        EngineJobWriter(sw).install(spec, members)

    frames = []
    for k in range(4 * slots):
        slot, ver = k % slots, (k // slots) % 2
        for r in range(workers):
            bitmap = PC.full_bitmap() if rng.random() < 0.7 else rng.getrandbits(PC.LANES // PC.SUBBLOCK)
            lanes = [rng.choice([0, 1, -1, 2**31 - 1, -2**31, rng.getrandbits(31)]) for _ in range(PC.LANES)]
            hdr = Header(job_id=1, rank=r, slot=slot, ver=ver, offset=k * PC.LANES,
                         next_offset=(k + slots) * PC.LANES, bitmap=bitmap)
            import numpy as np
            frames.append((r + 1, udp_frame(hosts[r].mac, SERVICE_MAC, hosts[r].ip, SERVICE_IP, 5000,
                                            PC.AGG_UDP_PORT, encode(hdr, np.array(lanes, dtype=np.int32)))))
    return install, frames


def control_plane(prog, case, rng, pools):
    """A list of (method, args, kwargs) to apply to both switches, in order."""
    ops = []
    if case is AGGREGATION:
        return ops
    if case is not None:
        for e in case.get("entries", []):
            ops.append(("table_add", (e["table"], e["match"], e["action"], e.get("params", {})),
                        {"priority": e.get("priority")}))
        for d in case.get("defaults", []):
            ops.append(("table_set_default", (d["table"], d["action"], d.get("params", {})), {}))
        for m in case.get("multicast", []):
            ops.append(("mc_group_set", (m["group"], [tuple(r) for r in m["replicas"]]), {}))
        for c in case.get("clone_sessions", []):
            ops.append(("clone_session_set", (c["session"], [tuple(r) for r in c["replicas"]]), {}))
        return ops
    for info in prog.tables.values():
        if info.is_const or not info.action_ids:
            continue
        for i in range(rng.randrange(0, min(info.max_size, 24) + 1)):
            match = [_key_value(k, rng, pools, i) for k in info.keys]
            action = prog.actions[rng.choice(info.action_ids)]
            params = [_param(p.width, rng, pools) for p in action.params]
            prio = rng.randrange(1, 200) if info.needs_priority else None
            ops.append(("table_add", (info.name, match, action.name, params), {"priority": prio}))
        if rng.random() < 0.5:
            action = prog.actions[rng.choice(info.action_ids)]
            ops.append(("table_set_default", (info.name, action.name,
                                              [_param(p.width, rng, pools) for p in action.params]), {}))
    for group in range(1, rng.randrange(1, 6)):
        ops.append(("mc_group_set", (group, [(rng.randrange(0, 8), rng.randrange(0, 6))
                                             for _ in range(rng.randrange(0, 5))]), {}))
    for session in range(0, rng.randrange(1, 10)):
        if rng.random() < 0.7:
            ops.append(("clone_session_set", (session, [(rng.randrange(0, 8), rng.randrange(0, 4))
                                                        for _ in range(rng.randrange(0, 3))]),
                        {"packet_length_bytes": rng.choice([0, 0, 0, 20, 64])}))
    for name, reg in prog.registers.items():
        for _ in range(min(reg.size, 4)):
            ops.append(("register_write", (name, rng.randrange(reg.size), pools.value(reg.width)), {}))
    for name, width in prog.parse_vsets.items():
        ops.append(("parse_vset_set", (name, [pools.value(width) for _ in range(rng.randrange(0, 4))]), {}))
    return ops


def _param(width, rng, pools):
    if width == 9:  # ports: keep them on the few ports packets come from
        return rng.choice([0, 1, 2, 3, 4, 5, 64, 511])
    if rng.random() < 0.4:  # small numbers: indices, counts, bases
        return rng.randrange(0, 4) & ((1 << width) - 1)
    return pools.value(width, 0.7)


def _key_value(k, rng, pools, i):
    w = k.width
    full = (1 << w) - 1
    v = rng.randrange(0, 6) & full if rng.random() < 0.3 else pools.value(w, 0.8)
    if k.match_type in ("exact", "valid"):
        return (i if rng.random() < 0.4 else v) & full  # 0, 1, 2, ...: indices computed by hashes
    if k.match_type == "lpm":
        return (v, rng.choice([w, w, 0, w // 2, max(w - 8, 0), rng.randrange(0, w + 1)]))
    if k.match_type == "ternary":
        return (v, rng.choice([full, full, 0, rng.getrandbits(w), full ^ ((1 << (w // 2)) - 1)]))
    if k.match_type == "optional":
        return None if rng.random() < 0.3 else v
    if k.match_type == "range":
        lo = max(0, v - rng.randrange(0, 4))
        return (lo, min(full, v + rng.randrange(0, 4)))
    return v


def apply(ops, switches):
    """Each operation on both switches; both must succeed or fail with the same error class."""
    for method, args, kwargs in ops:
        results = []
        for sw in switches:
            try:
                getattr(sw, method)(*args, **kwargs)
                results.append(None)
            except ValueError as exc:  # EngineError and its subclasses
                results.append(type(exc).__name__)
        if results[0] != results[1]:
            raise AssertionError(f"{method}{args}: python {results[0]}, native {results[1]}")


# ---- packets -------------------------------------------------------------------------------------
class Walker:
    """Random walks through the parse graph that build bytes taking the chosen select cases."""

    def __init__(self, prog, rng, pools):
        self.prog, self.rng, self.pools = prog, rng, pools
        parsers = prog.json.get("parsers", [])
        self.parser = parsers[0] if parsers else None
        self.states = {s["name"]: s for s in (self.parser or {}).get("parse_states", [])}
        self.types = {ht["name"]: ht for ht in prog.json.get("header_types", [])}

    def header_layout(self, hname):
        h = self.prog.headers[hname]
        offs, bo = {}, 0
        for f in h.fields:
            offs[f.name] = (bo, f.width)
            bo += f.width
        return offs, bo // 8

    def walk(self):
        buf = bytearray()
        where = {}      # header name -> byte offset
        looked = {}     # metadata field set from a lookahead -> (bit position, width)
        stack_last = {}
        off = 0
        state = self.parser.get("init_state") if self.parser else None
        for _ in range(24):
            st = self.states.get(state)
            if st is None:
                break
            for op in st.get("parser_ops", []):
                kind, ps = op.get("op"), op.get("parameters", [])
                if kind == "extract" and ps:
                    t, v = ps[0].get("type"), ps[0].get("value")
                    if t == "stack":
                        stk = self.prog.stacks.get(v)
                        if stk is None:
                            continue
                        hname = stk.headers[min(stack_last.get(v, -1) + 1, stk.size - 1)]
                        stack_last[v] = stack_last.get(v, -1) + 1
                    else:
                        hname = v
                    if hname not in self.prog.headers:
                        continue
                    layout, nbytes = self.header_layout(hname)
                    self._fill(buf, off, layout, nbytes)
                    where[hname] = off
                    if t == "stack":
                        where[v + "[last]"] = off
                    off += nbytes
                elif kind == "set" and len(ps) == 2 and ps[1].get("type") == "lookahead" \
                        and ps[0].get("type") == "field":
                    bo, bw = ps[1]["value"]
                    looked[tuple(ps[0]["value"])] = (off * 8 + bo, bw)
                elif kind in ("advance", "shift") and ps and ps[0].get("type") == "hexstr":
                    n = int(ps[0]["value"], 16) // (8 if kind == "advance" else 1)
                    self._grow(buf, off + max(0, n))
                    off += max(0, n)
            trans = st.get("transitions", [])
            if not trans:
                break
            tt = self.rng.choice(trans)
            if tt.get("type") == "hexstr":
                self._constrain(buf, off, st.get("transition_key", []), tt, where, looked)
            state = tt.get("next_state")
            if state is None:
                break
        self._grow(buf, off + self.rng.randrange(0, 24))
        return bytes(buf)

    def _grow(self, buf, end):
        if len(buf) < end:
            buf.extend(self.rng.getrandbits(8) for _ in range(end - len(buf)))

    def _fill(self, buf, off, layout, nbytes):
        """Header bytes at off (fields from the pools); bytes already there (set by a lookahead
        constraint) are kept."""
        have = max(0, len(buf) - off)
        fresh = bytearray(nbytes)
        for bo, width in layout.values():
            _put(fresh, bo, width, self.pools.value(width))
        if have < nbytes:
            fresh[:have] = buf[off:off + have]
            del buf[off:]
            buf.extend(fresh)

    def _constrain(self, buf, off, keys, tt, where, looked):
        """Set the key bits so that this select case matches."""
        value = int(tt["value"], 16)
        mask = int(tt["mask"], 16) if tt.get("mask") else None
        parts = []
        for k in keys:
            kt, kv = k.get("type"), k.get("value")
            if kt == "field" and tuple(kv) in looked:
                parts.append(looked[tuple(kv)])
                continue
            if kt == "field" and kv[0] in where:
                layout, _ = self.header_layout(kv[0])
                if kv[1] in layout:
                    bo, w = layout[kv[1]]
                    parts.append((where[kv[0]] * 8 + bo, w))
                    continue
            if kt == "stack_field" and kv[0] + "[last]" in where:
                stk = self.prog.stacks[kv[0]]
                layout, _ = self.header_layout(stk.headers[0])
                if kv[1] in layout:
                    bo, w = layout[kv[1]]
                    parts.append((where[kv[0] + "[last]"] * 8 + bo, w))
                    continue
            if kt == "lookahead":
                bo, w = kv
                parts.append((off * 8 + bo, w))
                continue
            return  # a metadata key: cannot be steered from the packet
        shift = sum((w + 7) // 8 * 8 for _, w in parts)
        for bitpos, w in parts:
            shift -= (w + 7) // 8 * 8
            pv = (value >> shift) & ((1 << w) - 1)
            pm = ((mask >> shift) & ((1 << w) - 1)) if mask is not None else (1 << w) - 1
            self._grow(buf, (bitpos + w + 7) // 8)
            old = _get(buf, bitpos, w)
            _set(buf, bitpos, w, (old & ~pm) | (pv & pm))


def _get(buf, bitpos, w):
    first, last = bitpos // 8, (bitpos + w + 7) // 8
    x = int.from_bytes(buf[first:last], "big")
    return (x >> ((last - first) * 8 - (bitpos % 8) - w)) & ((1 << w) - 1)


def _set(buf, bitpos, w, v):
    first, last = bitpos // 8, (bitpos + w + 7) // 8
    nbits = (last - first) * 8
    shift = nbits - (bitpos % 8) - w
    x = int.from_bytes(buf[first:last], "big")
    x = (x & ~(((1 << w) - 1) << shift)) | ((v & ((1 << w) - 1)) << shift)
    buf[first:last] = x.to_bytes(last - first, "big")


def _put(buf, bitpos, w, v):
    if w:
        _set(buf, bitpos, w, v)


def mutate(rng, frame):
    data = bytearray(frame)
    for _ in range(rng.randrange(1, 4)):
        r = rng.random()
        if r < 0.45 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif r < 0.65 and data:
            data[rng.randrange(len(data))] = rng.getrandbits(8)
        elif r < 0.85:
            del data[rng.randrange(len(data) + 1):]
        else:
            data.extend(rng.getrandbits(8) for _ in range(rng.randrange(1, 16)))
    return bytes(data)


def packet_stream(prog, case, rng, pools, n, seeds=None):
    walker = Walker(prog, rng, pools)
    walks = [walker.walk() for _ in range(256)] if walker.parser else [b""]
    if seeds is None:  # (port, frame)
        seeds = [(port, bytes.fromhex(h)) for port, h in (case or {}).get("packets", [])]
    ports = [0, 1, 1, 2, 2, 3, 4, 5, 64]
    out = []
    replay = 0
    for _ in range(n):
        r = rng.random()
        port = rng.choice(ports) if rng.random() < 0.9 else rng.randrange(0, 512)
        if seeds and r < 0.15:  # the seeds in their order (e.g. complete aggregation rounds)
            out.append(seeds[replay % len(seeds)])
            replay += 1
            continue
        if r < 0.3:
            frame = rng.choice(walks)
        elif r < 0.5:
            frame = mutate(rng, rng.choice(walks))
        elif r < 0.75 and seeds:
            seed_port, frame = rng.choice(seeds)
            if rng.random() < 0.5:
                frame = mutate(rng, frame)
            if rng.random() < 0.8:
                port = seed_port
        elif r < 0.9:
            frame = mutate(rng, mutate(rng, rng.choice(walks)))
        else:
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 96)))
        out.append((port, frame))
    return out


# ---- one program ---------------------------------------------------------------------------------
def state_of(sw):
    prog = sw.program
    regs = {name: sw.register_read(name) for name in prog.registers}
    ctrs = {c.name: sw.counter_read(c.name) for c in prog.counters.values() if not c.direct}
    direct = {t.name: [(e.handle, e.packets, e.bytes) for e in sw.table_entries(t.name)]
              for t in prog.tables.values() if t.direct_counter}
    return regs, ctrs, direct


def fuzz_program(name, program, case, packets, seed):
    """Run `packets` packets through both engines; AssertionError naming the first difference."""
    from p4sim.engine.native.switch import NativeSwitch
    from p4sim.engine.program_loader import build_program, load_json
    rng = random.Random(f"{seed}:{name}")
    pools = Pools(rng, program)
    prog = build_program(load_json(program))
    with FrozenTime():
        py, nat = frozen_pair(program)
    assert isinstance(nat, NativeSwitch)
    apply(control_plane(prog, case, rng, pools), (py, nat))
    seeds = None
    if case is AGGREGATION:
        install, seeds = aggregation_case(rng)
        for sw in (py, nat):
            install(sw)
    stream = packet_stream(prog, case, rng, pools, packets, seeds)
    with FrozenTime():
        for start in range(0, len(stream), BATCH):
            chunk = stream[start:start + BATCH]
            got = nat.process_batch(chunk)
            for i, (port, frame) in enumerate(chunk):
                want = py.process(port, frame)
                if got[i] != want:
                    raise AssertionError(
                        f"{name}: packet {start + i} (port {port}, {frame.hex()}): native {got[i]!r} != "
                        f"python {want!r}")
    for key in ("emitted", "dropped", "internal_errors", "dropped_parser_loop", "dropped_pass_limit"):
        assert nat.stats[key] == py.stats.get(key, 0), f"{name}: stats[{key}] native {nat.stats[key]} != " \
                                                        f"python {py.stats.get(key, 0)}"
    assert state_of(nat) == state_of(py), f"{name}: register/counter state differs after {packets} packets"
    return nat.stats


def main(argv=None):
    ap = argparse.ArgumentParser(description="differential fuzz: native backend vs the Python engine")
    ap.add_argument("--packets", type=int, default=100_000, help="packets per program")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--only", help="one program (its file name without .p4)")
    args = ap.parse_args(argv)
    total = 0
    t0 = time.monotonic()
    for name in program_names():
        if args.only and name.partition(" (")[0] != args.only:
            continue
        t = time.monotonic()
        program, case = load(name)
        stats = fuzz_program(name, program, case, args.packets, args.seed)
        total += args.packets
        print(f"{name}: {args.packets} packets identical ({stats['emitted']} emitted, {stats['dropped']} dropped) "
              f"in {time.monotonic() - t:.1f} s", flush=True)
    print(f"all programs: {total} packets identical in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    sys.exit(main())
