"""bench/worker_rate.py: one worker against the reflector, on both loops, every case checked
against its input by the harness (int32 bit for bit)."""
import json
import subprocess
import sys


def test_worker_rate_measures_both_loops_and_every_case():
    res = subprocess.run([sys.executable, "-m", "lab.bench.worker_rate", "--quick", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    cases = {(r["loop"], r["case"]) for r in doc["rows"]}
    assert cases == {(loop, f"{d} {m}") for loop in ("native", "python") for d in ("int32", "float32")
                     for m in ("dense", "sparse")}
    for row in doc["rows"]:
        blocks = -(-row["elements"] // row["lanes"])
        assert row["pps"] > 0 and row["packets"] >= (blocks if "dense" in row["case"] else 1)
    assert doc["worker_int32_dense_pps"] == doc["rows"][0]["pps"] and doc["rows"][0]["loop"] == "native"


def test_worker_rate_refuses_a_bad_loop():
    res = subprocess.run([sys.executable, "-m", "lab.bench.worker_rate", "--loop", "fast"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--loop: invalid choice: 'fast'" in res.stderr
