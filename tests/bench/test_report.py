"""Printed tables, Markdown summary, charts and exit status from a synthetic result document."""
import json

import pytest

from lab.bench import charts, markdown, report, results

MACHINE = {"cpu_model": "Test CPU", "cores": 2, "kernel": "6.1", "python": "3.11.7"}
LINK = {"name": "unshaped", "applied": "unshaped veth"}


def cell(system, time_s, tx, size=65536, density=1.0, status="ok", section="allreduce"):
    c = {"section": section, "system": system, "workers": 4, "size": size, "density": density,
         "link": "unshaped", "link_applied": "unshaped veth", "switch": "p4", "status": status}
    if status in ("ok", "wrong-result"):
        c.update({"time_s": {"median": time_s}, "tensor_bytes": size * 4, "reps": 3,
                  "wire_tx_bytes_per_worker": {"mean": tx}, "wire_rx_bytes_per_worker": {"mean": tx},
                  "tx_over_tensor": tx / (size * 4), "verified": status == "ok"})
    else:
        c["error"] = "needs the P4 switch"
    return c


@pytest.fixture
def doc():
    net = {"switch": "p4", "switch_detail": "P4 switch bs1", "link": LINK}
    return {
        "schema": "p4reduce-bench/1", "created": "2026-01-01T00:00:00+00:00", "mode": "quick",
        "command": "python -m lab.bench --quick", "machine": MACHINE,
        "sections": {
            "allreduce": {"status": "ok", "networks": [net], "cells": [
                cell("gloo", 0.2, 400000), cell("p4reduce", 0.1, 390000),
                cell("ps-tcp", 0.4, 270000, status="wrong-result"),
                cell("gloo", 0.8, 1600000, size=262144), cell("p4reduce", 0.4, 1560000, size=262144)]},
            "sparsity": {"status": "ok", "networks": [net], "cells": [
                cell("p4reduce", 1.0, 400000, section="sparsity"),
                cell("p4reduce", 0.5, 110000, density=0.25, section="sparsity"),
                cell("p4reduce", 0.1, 8000, density=0.01, section="sparsity")]},
            "switch-rate": {"veth": {"status": "ok", "rows": [{"case": "p4sim-switch veth", "pps": 9000.0}],
                                     "ratio_p4sim_over_simple_switch_grpc": 3.2}},
            "loss": {"status": "ok", "networks": [net], "cells": [
                {**cell("p4reduce", 0.5, 400000, section="loss"), "retransmitted_fraction": 0.001},
                {**cell("p4reduce", 0.6, 410000, section="loss"), "link": "loss-1pct",
                 "retransmitted_fraction": 0.021}]},
            "training": {"status": "ok", "networks": [net], "cells": [
                {"section": "training", "link": "unshaped", "size": 1126410, "density": 1.0,
                 "system": "gloo", "model": "mlp", "status": "ok", "workers": 4, "parameters": 1126410,
                 "iterations": 80, "iteration_s": 0.05, "compute_s": 0.01, "communication_s": 0.04,
                 "metric": "accuracy", "final_metric": 0.97, "accuracy": 0.97, "time_to_target_s": 0.5,
                 "time_to_target_iterations": 10, "wire_tx_bytes_per_iteration": 7e6},
                {"section": "training", "link": "unshaped", "size": 0, "density": 1.0, "workers": 4,
                 "system": "p4reduce", "model": "mlp", "status": "failed", "error": "switch gone"}]},
            "encode": {"status": "skipped", "error": "bench/worker_encode.py not present"},
        },
    }


def test_text_report_shows_speedups_statuses_and_reasons(doc):
    text = report.render(doc)
    p4_line = next(l for l in text.splitlines() if l.startswith("p4reduce") and "64K" in l)
    assert "100.0 ms" in p4_line and "0.50x" in p4_line  # p4reduce 0.1 s / gloo 0.2 s
    assert "wrong-result" in next(l for l in text.splitlines() if l.startswith("ps-tcp"))
    sparse = next(l for l in text.splitlines() if l.lstrip().startswith("unshaped") and "1%" in l)
    assert "10.00x" in sparse and "100x" in sparse
    assert "bench/worker_encode.py not present" in text
    assert "ratio_p4sim_over_simple_switch_grpc: 3.2" in text


def test_markdown_summary_quotes_command_machine_and_tables(doc):
    md = markdown.render(doc)
    assert "`python -m lab.bench --quick`" in md and "Test CPU (2 cores)" in md
    assert "| p4reduce | 4 | unshaped | 256K | 400.0 ms | 1.56 MB | 1.49 | 0.50x | - | - | - | ok |" in md
    assert "| loss-1pct | 64K | 600.0 ms | 1.20x | 2.10% | ok |" in md        # against the loss-free cell
    assert ("| gloo | mlp | 4 | unshaped | 1,126,410 | 80 | 50.0 ms | 10.0 ms | 40.0 ms | - | 7.00 MB | 97.00 % "
            "| 500.0 ms (10 it) | - | ok |") in md
    assert "| p4reduce | mlp | 4 | unshaped | - | - | - | - | - | - | - | - | - | - | failed: switch gone |" in md
    assert "| unshaped | 1% | 100.0 ms | 8.00 kB | 10.0x | 50.0x | 100x | ok |" in md
    assert "p4sim-switch / simple_switch_grpc on veth: 3.20" in md


def test_charts_are_pngs_and_skip_empty_sections(doc, tmp_path):
    written = charts.write_all(doc, tmp_path, "t")
    names = sorted(p.rsplit("/", 1)[-1] for p in written)
    assert names == ["t-allreduce-bytes.png", "t-allreduce-time.png", "t-sparsity.png", "t-switch-rate.png",
                     "t-training.png"]
    for p in written:
        assert open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    doc["sections"]["sparsity"]["cells"] = []
    assert charts.sparsity_chart([], tmp_path / "x.png") is None


def test_save_load_and_exit_status(doc, tmp_path):
    path = results.save(doc, tmp_path, "run1")
    assert results.load(path)["created"] == doc["created"]
    chart = tmp_path / "charts" / "run1-sparsity.png"
    chart.parent.mkdir()
    chart.write_bytes(b"png")
    latest = results.publish_latest(doc, path, [chart])
    assert sorted(p.name for p in latest.iterdir()) == ["quick-sparsity.png", "quick.json", "quick.md"]
    assert results.exit_status(doc) == 1  # the wrong ps-tcp result
    assert any("ps-tcp" in p and "wrong-result" in p for p in results.problems(doc))
    assert any("training p4reduce" in p and "switch gone" in p for p in results.problems(doc))
    doc["sections"]["allreduce"]["cells"][2]["status"] = "ok"
    doc["sections"]["training"]["cells"][1]["status"] = "skipped"
    assert results.exit_status(doc) == 0  # skips are not failures
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"x": 1}))
    with pytest.raises(ValueError, match="not a p4reduce benchmark result"):
        results.load(bad)
