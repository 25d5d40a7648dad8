"""The engine runs real p4c's JSON and p4sim-compile's JSON of the same program identically.

For each ground-truth program, both JSONs are loaded with the same control-plane state and fed the
same mutated packets (bit flips, truncations, odd ports); outputs and final register contents must
be equal.  A difference points at the compiler or at an engine dependence on compiler details.
"""
import json
import random
import subprocess
import sys

import pytest

from p4sim.engine import Switch

from .test_compiled_programs import REPO


@pytest.mark.parametrize("name", ["agg_mini", "fwd_basic", "hash_csum", "loopback", "match_kinds",
                                  "parse_mix", "rep_clone", "stacks_errors"])
def test_same_behaviour_on_both_jsons(reference_dir, tmp_path, name):
    ours = tmp_path / f"{name}.json"
    r = subprocess.run([sys.executable, "-m", "p4sim.compile", "-o", str(ours),
                        str(reference_dir / "programs" / f"{name}.p4")],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    case = json.loads((reference_dir / "programs" / f"{name}.case.json").read_text())
    switches = [Switch(reference_dir / "p4c-out" / f"{name}.json"), Switch(ours)]
    for sw in switches:
        for e in case.get("entries", []):
            sw.table_add(e["table"], e["match"], e["action"], e.get("params", {}), e.get("priority"))
        for m in case.get("multicast", []):
            sw.mc_group_set(m["group"], [tuple(x) for x in m["replicas"]])
    packets = [bytes.fromhex(h) for _, h in case["packets"]]
    rnd = random.Random(name)
    for i in range(600):
        frame = bytearray(rnd.choice(packets))
        for _ in range(rnd.randrange(0, 4)):
            if frame:
                frame[rnd.randrange(len(frame))] = rnd.getrandbits(8)
        if rnd.random() < 0.2:
            frame = frame[:rnd.randrange(len(frame) + 1)]
        port = rnd.randrange(0, 6)
        outs = [sw.process(port, bytes(frame)) for sw in switches]
        assert outs[0] == outs[1], f"{name}: packet {i} on port {port}: {bytes(frame).hex()}"
    for reg in switches[0].program.registers:
        assert switches[0].register_read(reg) == switches[1].register_read(reg), reg
    assert next(sw.stats for sw in switches) == switches[1].stats
    assert switches[0].stats["internal_errors"] == 0
