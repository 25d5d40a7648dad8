"""bench/charts.py: cells not measured are drawn and named as such (skipped apart from failed), and
every title, label and note lies inside the figure (nothing cut off), long labels included."""
import matplotlib.pyplot as plt
import pytest

from lab.bench import charts


def _cell(system, size, status="ok", workers=4, link="unshaped", error=None, t=1.0):
    cell = {"section": "allreduce", "system": system, "workers": workers, "link": link, "size": size,
            "status": status, "density": 1.0}
    if status == "ok":
        cell.update(time_s={"median": t * size / 65536}, wire_tx_bytes_per_worker={"mean": 8.0 * size})
    else:
        cell["error"] = error
    return cell


@pytest.fixture
def figures(monkeypatch):
    """The figures the chart functions save, kept open for inspection."""
    kept = []
    real_save = charts._save

    def keep(fig, path, footnote_lines=0):
        real_close, plt.close = plt.close, lambda *_: None
        try:
            return real_save(fig, path, footnote_lines)
        finally:
            plt.close = real_close
            kept.append(fig)
    monkeypatch.setattr(charts, "_save", keep)
    yield kept
    for fig in kept:
        plt.close(fig)


def _all_inside(fig):
    """Whether everything drawn (titles, labels, notes) lies inside the figure's canvas."""
    fig.canvas.draw()
    tight = fig.get_tightbbox(fig.canvas.get_renderer())      # inches, drawn artists only
    w, h = fig.get_size_inches()
    return tight.x0 >= -0.01 and tight.y0 >= -0.01 and tight.x1 <= w + 0.01 and tight.y1 <= h + 0.01


def test_allreduce_chart_marks_skipped_and_failed_cells(figures, tmp_path):
    cells = [_cell("p4reduce", 65536), _cell("p4reduce", 262144),
             _cell("p4reduce", 1048576, "skipped", error="predicted 182s > budget 90s (raise --budget)"),
             _cell("gloo", 65536), _cell("gloo", 262144, "failed", error="rank 2 timed out"),
             _cell("gloo", 1048576)]
    assert charts.allreduce_chart(cells, tmp_path / "t.png", "time") == tmp_path / "t.png"
    (fig,) = figures
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("skipped") == 1 and labels.count("failed") == 1
    note = " ".join(t.get_text() for t in fig.texts)
    assert "skipped: p4reduce, 4 workers, unshaped: 1M (predicted over the budget 90s (raise --budget))" in note
    assert "failed: gloo, 4 workers, unshaped: 256K (rank 2 timed out)" in note
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64K", "256K", "1M"]   # the skipped size kept
    assert _all_inside(fig)


def test_switch_rate_chart_keeps_long_labels_and_names_skipped_parts(figures, tmp_path):
    doc = {"sections": {"switch-rate": {
        "embedded": {"status": "ok", "rows": [
            {"case": "p4sim in-process aggregation [p4reduce (256 lanes, 4 workers, dense)]", "pps": 40289},
            {"case": "p4sim in-process l2 forwarding", "pps": 248978},
            {"case": "L2 forwarding", "backend": "native", "pps": 1500000},
            {"case": "aggregation (256 lanes)", "backend": "python", "status": "failed", "error": "timed out"}]},
        "veth": {"status": "skipped", "error": "simple_switch_grpc is not on PATH"}}}}
    written = charts.write_all(doc, tmp_path, "t")
    assert [p.rsplit("/", 1)[-1] for p in written] == ["t-switch-rate.png"]
    (fig,) = figures
    ax = fig.axes[0]
    ticks = [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()]
    assert ticks == ["p4sim in-process aggregation [p4reduce (256 lanes, 4 workers, dense)]",
                     "p4sim in-process l2 forwarding", "L2 forwarding, native", "aggregation (256 lanes), python",
                     "veth"]
    values = [t.get_text() for t in ax.texts]
    assert values == ["40,289", "248,978", "1,500,000", "failed: timed out",
                      "skipped: simple_switch_grpc is not on PATH"]
    assert _all_inside(fig)
    assert open(written[0], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
