"""bench/float_path.py: the fused and the generic float path of one worker against the reflector,
both checked against the input by the harness."""
import json
import subprocess
import sys


def test_float_path_measures_both_paths():
    res = subprocess.run([sys.executable, "-m", "lab.bench.float_path", "--quick", "--sparse", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert {(r["path"], r["case"]) for r in doc["rows"]} == {
        (p, f"float32 {m}") for p in ("fused", "generic") for m in ("dense", "sparse")}
    for row in doc["rows"]:
        assert row["ms_best"] > 0 and row["cpu_ns_per_element"] > 0 and row["loop"] == "native"
