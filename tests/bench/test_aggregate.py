"""Result aggregation: slowest-worker completion time, per-worker bytes, consistency checks."""
import pytest

from lab.bench import aggregate


def rec(rank, times, tx, rx, reps=None, verified=True):
    return {"rank": rank, "times_s": times, "reps": reps or len(times), "verified": verified,
            "mismatches": 0 if verified else 3,
            "counters": {"tx_bytes": tx, "rx_bytes": rx, "tx_packets": 10 * len(times), "rx_packets": 0}}


def test_completion_is_slowest_worker_per_rep_then_median():
    records = [rec(0, [1.0, 5.0, 2.0], 300, 600), rec(1, [3.0, 1.0, 2.5], 900, 300)]
    cell = aggregate.aggregate_cell(records, tensor_bytes=100)
    assert aggregate.per_rep_completion(records) == [3.0, 5.0, 2.5]
    assert cell["time_s"]["median"] == 3.0
    assert cell["time_s"]["min"] == 2.5 and cell["time_s"]["max"] == 5.0
    # bytes per worker per allreduce: 300/3=100 and 900/3=300 -> mean 200
    assert cell["wire_tx_bytes_per_worker"]["per_worker"] == [100, 300]
    assert cell["wire_tx_bytes_per_worker"]["mean"] == 200
    assert cell["wire_rx_bytes_per_worker"]["mean"] == 150
    assert cell["wire_bytes_per_worker"] == 350
    assert cell["tx_over_tensor"] == 2.0
    assert cell["verified"] is True
    assert cell["throughput_gbps"] == pytest.approx(100 * 8 / 3.0 / 1e9)


def test_one_wrong_worker_marks_cell_unverified():
    cell = aggregate.aggregate_cell([rec(0, [1.0], 1, 1), rec(1, [1.0], 1, 1, verified=False)],
                                    tensor_bytes=4)
    assert cell["verified"] is False and cell["mismatches"] == 3


def test_server_bytes_are_per_round():
    server = {"rounds": 4, "counters": {"tx_bytes": 4000, "rx_bytes": 2000}}
    cell = aggregate.aggregate_cell([rec(0, [1.0], 1, 1), rec(1, [1.0], 1, 1)], tensor_bytes=4,
                                    server=server)
    assert cell["server_wire_tx_bytes"] == 1000 and cell["server_wire_rx_bytes"] == 500


@pytest.mark.parametrize("records,msg", [
    ([], "no worker records"),
    ([rec(0, [1.0], 1, 1), rec(1, [1.0, 2.0], 1, 1)], "different repetition counts"),
    ([rec(0, [1.0], 1, 1), rec(2, [1.0], 1, 1)], "ranks are not 0..1"),
    ([{"rank": 0, "times_s": [1.0]}], "lacks counters, verified, reps"),
])
def test_inconsistent_records_are_rejected(records, msg):
    with pytest.raises(aggregate.AggregationError, match=msg):
        aggregate.aggregate_cell(records, tensor_bytes=4)


def test_speedup():
    assert aggregate.speedup(10.0, 2.5) == 4.0
    assert aggregate.speedup(None, 1.0) is None and aggregate.speedup(1.0, 0) is None


def test_link_rate_bound_counts_what_must_cross_the_busiest_link():
    from lab.bench import bounds
    mib = 1 << 20
    # p4reduce dense: each block once, in frames of 42 + 24 + 4 x lanes bytes
    assert bounds.busiest_link_bytes("p4reduce", 8, mib, lanes=256) == 4096 * (42 + 24 + 1024)
    assert bounds.busiest_link_bytes("p4reduce", 8, mib, lanes=256, density=0.25) == 1024 * (42 + 24 + 1024)
    # the ring: 2 (N - 1) / N tensors in 1514-byte frames of 1448 bytes
    ring = bounds.busiest_link_bytes("gloo", 8, mib)
    assert ring == pytest.approx(2 * 7 / 8 * 4 * mib * 1514 / 1448)
    # the parameter server's own link carries all N tensors
    assert bounds.busiest_link_bytes("ps-tcp", 8, mib) == pytest.approx(8 * 4 * mib * 1514 / 1448)
    assert bounds.link_bound_s("gloo", 8, mib, 100) == pytest.approx(ring * 8 / 100e6)
    with pytest.raises(ValueError, match="no link-rate bound for system 'nccl'"):
        bounds.busiest_link_bytes("nccl", 4, 10)


def test_cells_on_shaped_links_get_the_bound_and_the_ratio():
    from lab.bench.cells import add_link_bound
    summary = {"workers": 4, "time_s": {"median": 0.9}}
    add_link_bound(summary, "p4reduce", 100, 1 << 20, 1.0, lanes=256)
    assert summary["link_bound_s"] == pytest.approx(4096 * 1090 * 8 / 100e6)
    assert summary["time_over_link_bound"] == pytest.approx(0.9 / summary["link_bound_s"])
    unshaped = {"workers": 4, "time_s": {"median": 0.9}}
    add_link_bound(unshaped, "gloo", None, 1 << 20, 1.0, lanes=None)
    assert "link_bound_s" not in unshaped


def test_p4reduce_records_give_the_retransmitted_fraction():
    records = [{**rec(0, [1.0], 100, 100), "packets_sent": 1000, "retransmissions": 4},
               {**rec(1, [1.0], 100, 100), "packets_sent": 1000, "retransmissions": 6}]
    cell = aggregate.aggregate_cell(records, tensor_bytes=100)
    assert cell["retransmitted_fraction"] == 0.005 and cell["retransmissions_per_worker"] == 5
    assert "retransmitted_fraction" not in aggregate.aggregate_cell([rec(0, [1.0], 1, 1)], tensor_bytes=1)


def test_p4reduce_records_split_retransmissions_by_what_triggered_them():
    records = [{**rec(r, [1.0], 100, 100), "packets_sent": 1000, "retransmissions": 10,
                "fast_retransmissions": 6 + r, "tail_probes": 2 * r,
                "window_decreases": r, "timeouts_loss": 1, "timeouts_stall": 3 - r} for r in range(2)]
    cell = aggregate.aggregate_cell(records, tensor_bytes=100)
    assert cell["fast_retransmitted_fraction"] == 13 / 2000 and cell["tail_probes_per_worker"] == 1
    assert cell["timeouts_per_worker"] == {"congestion": 0.5, "loss": 1, "stall": 2.5}
    del records[1]["tail_probes"]           # an older worker's record: no figure rather than a wrong one
    assert "tail_probes_per_worker" not in aggregate.aggregate_cell(records, tensor_bytes=100)
