"""bench/hierarchy.py without Mininet: the plan, the uplinks read from a topology description, the
link bound, the comparisons and issue #23's targets judged from synthetic cells, and the section's
table, target lines and chart in the bench's report."""
import pytest

from lab.bench import charts, hierarchy, markdown, report, results

MI = 1 << 20
MACHINE = {"cpu_model": "Test CPU", "cores": 2, "kernel": "6.1", "python": "3.11.7"}


def test_full_plan_every_network_link_system_and_size_then_the_loss_cells():
    plan = hierarchy.make_plan(quick=False)
    loss_free = [(s.shape.name, s.links.name) for s in plan.steps if s.links.uplink.loss_pct == 0]
    assert loss_free == [("two-tier", "uplinks-100mbit"), ("two-tier", "all-100mbit"),
                         ("tree", "uplinks-100mbit"), ("tree", "all-100mbit")]
    for s in plan.steps[:4]:
        assert s.systems == ("p4reduce-tree", "p4reduce-root", "gloo") and s.sizes == (MI, 4 * MI, 16 * MI)
    loss = [(s.shape.name, s.links.uplink.loss_pct, s.systems, s.sizes) for s in plan.steps[4:]]
    assert loss == [("two-tier", 1.0, ("p4reduce-tree", "p4reduce-root"), (4 * MI,)),
                    ("two-tier", 5.0, ("p4reduce-tree", "p4reduce-root"), (4 * MI,))]
    assert plan.cells == 4 * 3 * 3 + 2 * 2
    links = hierarchy.LINKSETS
    assert links["uplinks-100mbit"].host.bw_mbps is None and links["uplinks-100mbit"].uplink.bw_mbps == 100
    assert links["all-100mbit"].host.bw_mbps == 100 and links["all-100mbit"].uplink.bw_mbps == 100


def test_quick_plan_two_tier_one_small_size_and_a_loss_cell():
    plan = hierarchy.make_plan(quick=True)
    assert [(s.shape.name, s.links.name, s.sizes) for s in plan.steps] == [
        ("two-tier", "uplinks-100mbit", (256 * 1024,)), ("two-tier", "uplinks-100mbit-loss5pct", (256 * 1024,))]
    assert hierarchy.make_plan(quick=False, networks=["tree"]).cells == 2 * 3 * 3   # no loss cells off two-tier


def _description():
    """A depth-3 tree as mininet_topos/description.py writes it (bench prefix `b`), 1 host per leaf."""
    def sw(name, role, parent, ports, uplink):
        return {"name": name, "role": role, "parent": parent, "uplink_port": uplink,
                "ports": [{"port": i + 1, "intf": f"{name}-eth{i + 1}", "peer": p} for i, p in enumerate(ports)]}
    return {"hosts": [{"name": f"bh{i}"} for i in (1, 2, 3, 4)],
            "switches": [sw("bleaf1", "leaf", "bagg1", ["bh1", "bagg1"], 2),
                         sw("bleaf2", "leaf", "bagg1", ["bh2", "bagg1"], 2),
                         sw("bleaf3", "leaf", "bagg2", ["bh3", "bagg2"], 2),
                         sw("bleaf4", "leaf", "bagg2", ["bh4", "bagg2"], 2),
                         sw("bagg1", "aggregation", "broot", ["bleaf1", "bleaf2", "broot"], 3),
                         sw("bagg2", "aggregation", "broot", ["bleaf3", "bleaf4", "broot"], 3),
                         sw("broot", "root", None, ["bagg1", "bagg2"], None)]}


def test_uplinks_from_the_description_leaves_first_with_the_hosts_below():
    ups = hierarchy.uplink_ports(_description())
    assert [(u["switch"], u["role"], u["parent"], u["intf"], u["hosts_below"]) for u in ups] == [
        ("leaf1", "leaf", "agg1", "bleaf1-eth2", 1), ("leaf2", "leaf", "agg1", "bleaf2-eth2", 1),
        ("leaf3", "leaf", "agg2", "bleaf3-eth2", 1), ("leaf4", "leaf", "agg2", "bleaf4-eth2", 1),
        ("agg1", "aggregation", "root", "bagg1-eth3", 2), ("agg2", "aggregation", "root", "bagg2-eth3", 2)]


def _cell(system, time_s, leaf_up, *, network="two-tier", link="uplinks-100mbit", size=MI, loss=0.0,
          status="ok", verified=True, hosts_per_leaf=4):
    tensor = size * 4
    uplinks = [{"switch": f"leaf{i}", "role": "leaf", "up_bytes": leaf_up * tensor, "down_bytes": leaf_up * tensor,
                "up_over_tensor": leaf_up, "down_over_tensor": leaf_up} for i in (1, 2)]
    c = {"section": "hierarchy", "system": system, "network": network, "link": link, "size": size,
         "workers": 8, "density": 1.0, "uplink_loss_pct": loss, "hosts_per_leaf": hosts_per_leaf,
         "status": status, "link_applied": {"hosts": "unshaped veth", "uplinks": "100 Mbit/s (tbf, 10 ms queue)"}}
    if status == "ok" or status == "wrong-result":
        c.update(time_s={"median": time_s}, verified=verified, uplinks=uplinks,
                 leaf_up_over_tensor=leaf_up, leaf_down_over_tensor=leaf_up,
                 wire_tx_bytes_per_worker={"per_worker": [1.06 * tensor] * 8},
                 wire_rx_bytes_per_worker={"per_worker": [1.06 * tensor] * 8})
        hierarchy.add_bound(c, hierarchy.LINKSETS[link if link in hierarchy.LINKSETS else "uplinks-100mbit"])
    else:
        c["error"] = "bh1: exit status 1"
    return c


def test_bound_is_the_busiest_shaped_link_host_links_only_when_shaped():
    c = _cell("p4reduce-root", 2.0, 4.2)
    assert c["busiest_link"]["link"] == "leaf1 uplink, up"
    assert c["link_bound_s"] == pytest.approx(4.2 * 4 * MI * 8 / 100e6)
    assert c["time_over_link_bound"] == pytest.approx(2.0 / c["link_bound_s"])
    tree = _cell("p4reduce-tree", 0.5, 1.0, link="all-100mbit")      # host links (1.06x) busier than uplinks
    assert tree["busiest_link"]["link"] == "rank 0's host link, up"
    assert tree["link_bound_s"] == pytest.approx(1.06 * 4 * MI * 8 / 100e6)


def _doc(cells):
    hierarchy.compare(cells)
    section = {"status": "ok", "workers": 8, "reps": 3, "warmup": 1, "cells": cells,
               "targets": hierarchy.targets(cells),
               "networks": [{"network": "two-tier", "shape": "2 leaves x 4 hosts under a spine",
                             "link": "uplinks-100mbit", "switch_detail": "3 P4 switches",
                             "link_applied": {"hosts": "unshaped veth", "uplinks": "100 Mbit/s"}}]}
    return {"schema": "p4reduce-bench/1", "created": "2026-01-01T00:00:00+00:00", "mode": "full",
            "command": "python -m lab.bench --sections hierarchy", "machine": MACHINE,
            "sections": {"hierarchy": section}}


def _targets(doc):
    return {t["name"]: t for t in doc["sections"]["hierarchy"]["targets"]}


def test_targets_met_from_the_cells():
    cells = [_cell("p4reduce-tree", 0.36, 1.06), _cell("p4reduce-root", 1.45, 4.25), _cell("gloo", 0.6, 1.87),
             _cell("p4reduce-tree", 0.5, 1.5, link="uplinks-100mbit-loss1pct", loss=1.0),
             _cell("p4reduce-root", 1.8, 4.9, link="uplinks-100mbit-loss1pct", loss=1.0),
             _cell("p4reduce-tree", 0.6, 1.8, link="uplinks-100mbit-loss5pct", loss=5.0),
             _cell("p4reduce-root", 2.0, 5.3, link="uplinks-100mbit-loss5pct", loss=5.0)]
    doc = _doc(cells)
    t = _targets(doc)
    assert cells[0]["speedup_over_root"] == pytest.approx(1.45 / 0.36)
    assert cells[0]["time_over_gloo"] == pytest.approx(0.36 / 0.6)
    assert t["leaf-uplink-bytes"]["met"] is True          # the loss cells' 1.5x is not judged
    assert [v["value"] for v in t["leaf-uplink-bytes"]["root_only"]] == [4.25]
    assert t["time-over-bound"]["met"] is True            # 0.36 s over 1.06 x 4 MiB at 100 Mbit/s: 1.01x
    assert t["speedup-over-root"]["met"] is True
    assert t["bit-exact"]["met"] is True and t["bit-exact"]["loss_pct_measured"] == [0.0, 1.0, 5.0]
    md = markdown.render(doc)
    assert "| two-tier | uplinks-100mbit | 1M | p4reduce-tree | 360.0 ms | 1.06 / 1.06 | - |" in md
    assert "- MET: bytes up each leaf's uplink <= 1.08x" in md and "root-only 4.25-4.25x" in md
    assert "- MET: bit-exact at 0, 1 and 5 % uplink loss (every p4reduce cell): 6 of 6 p4reduce cells exact" in md
    text = report.render(doc)
    assert "== hierarchy" in text and "targets (issue #23):" in text and "NOT" not in text


def test_targets_not_met_or_not_measured_say_so():
    cells = [_cell("p4reduce-tree", 0.9, 1.2), _cell("p4reduce-root", 1.45, 4.25),
             _cell("p4reduce-tree", 0.6, 1.8, link="uplinks-100mbit-loss5pct", loss=5.0, status="wrong-result",
                   verified=False)]
    doc = _doc(cells)
    t = _targets(doc)
    assert t["leaf-uplink-bytes"]["met"] is False and t["time-over-bound"]["met"] is False
    assert t["speedup-over-root"]["met"] is False          # 1.45 / 0.9 < 3
    assert t["bit-exact"]["met"] is False                  # a wrong result fails it, measured or not at 1 %
    md = markdown.render(doc)
    assert "NOT MET: bit-exact" in md and "NOT exact: p4reduce-tree (two-tier, uplinks-100mbit-loss5pct, 1M)" in md
    assert results.problems(doc)                           # the wrong result fails the run
    only = _doc([_cell("p4reduce-tree", 0.36, 1.06)])      # no root-only cell, no loss cell
    t = _targets(only)
    assert t["speedup-over-root"]["met"] is None and t["bit-exact"]["met"] is None
    assert "NOT MEASURED: bit-exact" in markdown.render(only)


def test_failed_cells_are_listed_and_the_chart_marks_them(tmp_path):
    cells = [_cell("p4reduce-tree", 0.36, 1.06), _cell("p4reduce-root", 1.45, 4.25),
             _cell("gloo", 0, 0, status="failed"), _cell("p4reduce-tree", 1.4, 1.06, size=4 * MI)]
    doc = _doc(cells)
    assert "| gloo | - |" in markdown.render(doc) and "failed: bh1: exit status 1" in markdown.render(doc)
    [path] = [p for p in charts.write_all(doc, tmp_path, "h") if p.endswith("hierarchy.png")]
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
