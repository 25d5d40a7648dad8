"""`python -m lab.bench --quick` end to end in Mininet: the harness runs and its numbers are plausible."""
import json
import subprocess
import sys

import pytest

from lab.bench import results

pytestmark = pytest.mark.root

TENSOR_BYTES = 64 * 1024 * 4


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, p4reduce_program, jumbo_program):
    """The quick mode on the real P4 path: Mininet, p4sim-switch, controller, worker agents."""
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run([sys.executable, "-m", "lab.bench", "--quick", "--no-progress", "--out", str(out),
                           "--name", "quick", "--switch", "p4", "--program", str(p4reduce_program),
                           "--jumbo-program", str(jumbo_program)],
                          capture_output=True, text=True, timeout=900)
    doc_path = out / "quick.json"
    assert doc_path.exists(), f"no result JSON; stderr:\n{proc.stderr[-3000:]}"
    return proc, results.load(doc_path), out


def test_exit_status_and_printed_table(quick_run):
    proc, doc, _ = quick_run
    assert proc.returncode == 0, f"{results.problems(doc)}\n{proc.stderr[-2000:]}"
    assert "== allreduce" in proc.stdout and "time/allreduce" in proc.stdout
    assert "gloo" in proc.stdout and "ps-tcp" in proc.stdout


def test_document_describes_machine_and_grid(quick_run):
    _, doc, out = quick_run
    assert doc["schema"] == "p4reduce-bench/1" and doc["mode"] == "quick"
    m = doc["machine"]
    assert m["cores"] >= 1 and m["cpu_model"] and m["kernel"] and m["python"].count(".") == 2
    assert doc["grid"]["workers"] == [4] and doc["grid"]["sizes"] == [65536]
    latest = out / "latest"
    assert json.loads((latest / "quick.json").read_text())["created"] == doc["created"]
    assert (latest / "quick.md").read_text().startswith("Measured ")
    assert (latest / "quick-allreduce-time.png").exists()


def _cells(doc, system):
    return [c for c in doc["sections"]["allreduce"]["cells"] if c["system"] == system]


@pytest.mark.parametrize("system,min_tx_ratio,max_tx_ratio", [
    # ring allreduce sends 2(N-1)/N of the tensor; a parameter-server worker sends it once; the
    # upper bound leaves room for headers and TCP retransmissions (incast at the shaped server link)
    ("gloo", 1.5, 3.0),
    ("ps-tcp", 1.0, 3.0),
])
def test_baselines_measured_with_plausible_numbers(quick_run, system, min_tx_ratio, max_tx_ratio):
    _, doc, _ = quick_run
    cells = _cells(doc, system)
    assert {c["link"] for c in cells} == {"unshaped", "100mbit-1ms"}
    for c in cells:
        assert c["status"] == "ok", c
        assert c["verified"] and c["workers"] == 4 and c["reps"] == 2
        assert c["tensor_bytes"] == TENSOR_BYTES
        tx = c["wire_tx_bytes_per_worker"]
        # counters, not computation: at least the payload, not wildly more
        assert min_tx_ratio * TENSOR_BYTES <= tx["min"] and tx["max"] <= max_tx_ratio * TENSOR_BYTES, tx
        assert c["wire_rx_bytes_per_worker"]["min"] >= TENSOR_BYTES
        assert c["packets_tx_per_worker"] > 0
        assert 0 < c["time_s"]["min"] <= c["time_s"]["median"] <= c["time_s"]["max"] < 30
    shaped = next(c for c in cells if c["link"] == "100mbit-1ms")
    # at 100 Mbit/s a worker cannot push its bytes faster than the link allows
    assert shaped["time_s"]["min"] >= shaped["wire_tx_bytes_per_worker"]["max"] * 8 / 100e6 * 0.9


def test_switch_side_counters_agree_with_host_side(quick_run):
    """The switch ports (/sys/class/net, root namespace) saw at least what the hosts counted sending
    in the timed loop (the port totals also cover setup and warm-up)."""
    _, doc, _ = quick_run
    for section in ("allreduce", "sparsity"):
        for c in doc["sections"][section]["cells"]:
            totals = c["switch_port_cell_totals"]
            assert totals["ports"] == [f"bs1-eth{i}" for i in range(1, 5)]
            for rank, rx in enumerate(totals["rx_bytes"]):
                sent = c["wire_tx_bytes_per_worker"]["per_worker"][rank] * c["reps"]
                assert rx >= sent, (c["system"], rank, rx, sent)


def test_parameter_server_link_carries_every_worker(quick_run):
    _, doc, _ = quick_run
    for c in _cells(doc, "ps-tcp"):
        assert c["server_wire_tx_bytes"] >= 4 * TENSOR_BYTES
        assert c["server_wire_rx_bytes"] >= 4 * TENSOR_BYTES


def test_everything_crossed_the_p4_switch(quick_run):
    _, doc, _ = quick_run
    for section in ("allreduce", "sparsity"):
        nets = doc["sections"][section]["networks"]
        assert nets and all(n["switch"] == "p4" for n in nets), doc["sections"][section].get("error")
        assert all(c["switch"] == "p4" for c in doc["sections"][section]["cells"])


def test_p4reduce_dense_is_exact_and_sends_the_tensor_once(quick_run):
    _, doc, _ = quick_run
    cells = _cells(doc, "p4reduce")
    assert {c["link"] for c in cells} == {"unshaped", "100mbit-1ms"}
    for c in cells:
        assert c["status"] == "ok", c.get("error")
        assert c["verified"] and c["mismatches"] == 0
        # 256 int32 lanes per 1090-byte frame: the payload and 6 % of headers, a little more for
        # the barriers and any retransmission
        assert TENSOR_BYTES <= c["wire_tx_bytes_per_worker"]["min"] <= 1.25 * TENSOR_BYTES
        assert c["wire_rx_bytes_per_worker"]["min"] >= TENSOR_BYTES
        assert c["time_s"]["median"] > 0
        assert 0 <= c["retransmitted_fraction"] < 0.5 and c["packets_tx_per_worker"] > 0
    shaped = next(c for c in cells if c["link"] == "100mbit-1ms")
    # the link-rate bound: 256 blocks of 1090 bytes at 100 Mbit/s; nothing beats it
    assert shaped["link_bound_s"] == pytest.approx(256 * 1090 * 8 / 100e6)
    assert shaped["time_over_link_bound"] >= 0.9


def test_jumbo_section_runs_1024_lane_packets_on_mtu_9000_links(quick_run):
    """p4reduce and gloo again on links of MTU 9000, p4reduce with the 1024-lane build: exact,
    and its 4162-byte frames carry 4096 bytes of lanes (1.6 % of headers, 6 % at 256 lanes)."""
    proc, doc, out = quick_run
    section = doc["sections"]["jumbo"]
    assert section["status"] == "ok", section.get("error")
    assert [n["link"]["applied"] for n in section["networks"]] == ["unshaped veth, MTU 9000"]
    cells = {c["system"]: c for c in section["cells"]}
    assert set(cells) == {"p4reduce", "gloo"}
    for c in cells.values():
        assert c["status"] == "ok" and c["verified"] and c["link"] == "unshaped-mtu9000", c.get("error")
    p4r = cells["p4reduce"]
    # 64 blocks of 1024 lanes, 4162 bytes each on the wire, once (plus the exponent pre-round, the
    # barriers and the rare retransmission)
    assert 64 * 4162 <= p4r["wire_tx_bytes_per_worker"]["min"] <= 1.25 * 64 * 4162
    dense = next(c for c in _cells(doc, "p4reduce") if c["link"] == "unshaped")
    assert p4r["packets_tx_per_worker"] < dense["packets_tx_per_worker"] / 3
    assert "== jumbo" in proc.stdout
    assert "jumbo-frame links" in (out / "latest" / "quick.md").read_text()


def test_p4reduce_sparse_in_the_grid_sends_its_density(quick_run):
    _, doc, _ = quick_run
    dense = {c["link"]: c for c in _cells(doc, "p4reduce")}
    for c in _cells(doc, "p4reduce-sparse"):
        assert c["status"] == "ok", c.get("error")
        assert c["density"] == 0.1 and c["verified"]
        assert c["wire_tx_bytes_per_worker"]["mean"] < 0.3 * dense[c["link"]]["wire_tx_bytes_per_worker"]["mean"]


def test_loss_section_is_exact_and_retransmits(quick_run):
    _, doc, _ = quick_run
    cells = {c["link"]: c for c in doc["sections"]["loss"]["cells"]}
    assert set(cells) == {"unshaped", "loss-5pct"}
    for c in cells.values():
        assert c["status"] == "ok" and c["verified"], c.get("error")
    assert cells["loss-5pct"]["retransmitted_fraction"] > 0


def test_training_every_model_on_every_system(quick_run):
    """The quick grid's training cells: 3 models x gloo DDP, the backend and the hook, 4 workers,
    unshaped links; every number the report shows is measured and plausible."""
    proc, doc, out = quick_run
    section = doc["sections"]["training"]
    cells = {(c["model"], c["system"]): c for c in section["cells"]}
    assert set(cells) == {(m, s) for m in ("mlp", "wide-mlp", "embedding")
                          for s in ("gloo", "p4reduce", "p4reduce-hook")}
    params = {"mlp": 1_126_410, "wide-mlp": 10_780_170, "embedding": 16_777_250}
    for (model, system), c in cells.items():
        assert c["status"] == "ok", (model, system, c.get("error"))
        assert c["workers"] == 4 and c["link"] == "unshaped" and c["parameters"] == params[model]
        assert c["iterations"] == doc["grid"]["training_iterations"][model] and c["replicas_agree"]
        assert 0 < c["compute_s"] <= c["iteration_s"] and c["communication_s"] >= 0
        assert c["iteration_over_gloo"] > 0 and len(c["curve"]) >= 1
        assert c["backend"] == ("p4reduce" if system == "p4reduce" else "gloo")
        if system == "gloo" or model != "embedding":
            # dense: every iteration moves the gradients, at least the model's float32 bytes per worker
            assert c["wire_tx_bytes_per_iteration"] >= 4 * c["parameters"], (model, system)
    for system in ("p4reduce", "p4reduce-hook"):
        emb = cells[("embedding", system)]
        # a sparse job skips the zero blocks of the 64 MB gradient: under 2 % of gloo's bytes
        assert emb["job_mode"] == "sparse" and cells[("mlp", system)]["job_mode"] == "dense"
        assert emb["wire_tx_bytes_per_iteration"] < 0.02 * cells[("embedding", "gloo")]["wire_tx_bytes_per_iteration"]
    # the backend's allreduces went through the switch, not its inner gloo group
    assert cells[("mlp", "p4reduce")]["allreduce_calls"]["switch"] >= doc["grid"]["training_iterations"]["mlp"]
    # fixed point through the switch trains like gloo's float32 allreduce
    assert abs(cells[("mlp", "p4reduce")]["accuracy"] - cells[("mlp", "gloo")]["accuracy"]) < 0.05
    assert [t["name"] for t in section["targets"]] == ["mlp-4w-unshaped", "dense-8w-100mbit", "sparse-100mbit",
                                                      "final-metric"]
    assert section["targets"][0]["met"] in (True, False) and section["targets"][1]["met"] is None
    assert "targets (p4reduce backend vs gloo DDP):" in proc.stdout
    assert "| p4reduce (sparse job) | embedding | 4 | unshaped | 16,777,250 |" in (out / "latest" / "quick.md").read_text()


def test_sparse_sends_fewer_bytes_as_density_drops(quick_run):
    _, doc, _ = quick_run
    cells = sorted(doc["sections"]["sparsity"]["cells"], key=lambda c: -c["density"])
    assert [c["density"] for c in cells] == [1.0, 0.25, 0.01]
    for c in cells:
        assert c["status"] == "ok", c.get("error")
        assert c["wire_tx_bytes_per_worker"]["min"] >= c["density"] * TENSOR_BYTES
    tx = [c["wire_tx_bytes_per_worker"]["mean"] for c in cells]
    assert tx[0] > tx[1] > tx[2]
    assert tx[2] < tx[0] / 10  # 1% density: far less than dense (headers keep it above 1/100)


def test_switch_rate_and_encode_sections(quick_run):
    _, doc, _ = quick_run
    veth = doc["sections"]["switch-rate"]["veth"]
    assert veth["status"] == "ok", veth.get("error")
    (row,) = [r for r in veth["rows"] if r["target"] == "p4sim-switch"]
    assert row["pps"] > 100 and row["wrong_results"] == 0
    assert row["contributions_sent"] >= row["results_received"] > 0
    encode = doc["sections"]["encode"]
    assert encode["status"] in ("ok", "skipped"), encode.get("error")


def test_charts_written(quick_run):
    _, doc, _ = quick_run
    charts = doc["charts"]
    for name in ("allreduce-time.png", "allreduce-bytes.png", "jumbo-time.png", "sparsity.png", "switch-rate.png",
                 "training.png"):
        assert any(p.endswith(name) for p in charts), (name, charts)
    for p in charts:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_faults_section_kills_the_switch_and_loses_no_call(quick_run):
    """bench/faults.py in the quick run: the switch killed twice, every call exact on either path,
    each kill detected and the switch restored; a job without slots exact on the fallback."""
    f = quick_run[1]["sections"]["faults"]
    assert f["status"] == "ok" and f["errors"] == [] and f["lost_or_wrong_calls"] == 0, f
    assert len(f["kills"]) == 2 and all("error" not in k for k in f["kills"]), f["kills"]
    for k in f["kills"]:
        assert 0.5 < k["detect_first_s"] <= k["detect_last_s"] < 10 and k["restore_s"] is not None, k
    assert f["kills"][0]["back_on_switch"], f["kills"]
    slots = f["slots_exhausted"]
    assert slots["exact"] and slots["on_fallback"] and slots["fallback_call_s"] > 0, slots
    assert f["met"]["no lost or wrong call"]


def test_hierarchy_section_sums_at_each_leaf_and_is_exact_under_uplink_loss(quick_run):
    """bench/hierarchy.py in the quick run: 8 workers on the two-tier network (2 leaves x 4 hosts),
    uplinks 100 Mbit/s. Through the tree each leaf's uplink carries the tensor about once each way;
    at the root only, every host's packets (4x); every p4reduce result exact, at 5 % uplink loss too."""
    proc, doc, out = quick_run
    h = doc["sections"]["hierarchy"]
    assert h["status"] == "ok" and h["errors"] == [], h.get("error")
    assert [(n["network"], n["link"]) for n in h["networks"]] == [("two-tier", "uplinks-100mbit"),
                                                                 ("two-tier", "uplinks-100mbit-loss5pct")]
    cells = {(c["system"], c["link"]): c for c in h["cells"]}
    assert set(cells) == {("p4reduce-tree", "uplinks-100mbit"), ("p4reduce-root", "uplinks-100mbit"),
                          ("gloo", "uplinks-100mbit"), ("p4reduce-tree", "uplinks-100mbit-loss5pct"),
                          ("p4reduce-root", "uplinks-100mbit-loss5pct")}
    for key, c in cells.items():
        assert c["status"] == "ok" and c["verified"] and c["workers"] == 8 and c["hosts_per_leaf"] == 4, (key, c)
        assert [u["switch"] for u in c["uplinks"]] == ["leaf1", "leaf2"], key
    tree, root = cells[("p4reduce-tree", "uplinks-100mbit")], cells[("p4reduce-root", "uplinks-100mbit")]
    for u in tree["uplinks"]:
        assert 1.0 <= u["up_over_tensor"] <= 1.15 and 1.0 <= u["down_over_tensor"] <= 1.15, u
    for u in root["uplinks"]:
        assert u["up_over_tensor"] >= 3 and u["down_over_tensor"] >= 3, u
    gloo = cells[("gloo", "uplinks-100mbit")]
    # the ring crosses each uplink once each way: 2 (N - 1) / N = 1.75 tensors, and TCP's headers
    assert all(1.5 <= u["up_over_tensor"] <= 3 for u in gloo["uplinks"]), gloo["uplinks"]
    # the uplinks are shaped: nothing crossed them faster than 100 Mbit/s
    for c in cells.values():
        assert c["time_over_link_bound"] >= 0.9, (c["system"], c["link"], c["time_over_link_bound"])
    lossy = cells[("p4reduce-tree", "uplinks-100mbit-loss5pct")]
    assert lossy["retransmitted_fraction"] > 0
    met = h["met"]
    assert met["leaf-uplink-bytes"] in (True, False) and met["bit-exact"] is None   # no 1 % cell in quick
    assert "== hierarchy" in proc.stdout and "targets (issue #23):" in proc.stdout
    assert "Aggregation across switches (issue #23)" in (out / "latest" / "quick.md").read_text()
    assert any(p.endswith("hierarchy.png") for p in doc["charts"])
