"""Workers on Mininet hosts allreduce through p4sim-switch running p4reduce.p4, bit-exactly."""
import pytest

from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.protocol.program import compile_program

from .workers import assert_exact, by_index, run_job

pytestmark = pytest.mark.root


def test_dense_and_sparse_allreduce_are_bit_exact(session_factory):
    session = session_factory(workers=4)
    hosts = session.network.hosts
    dense = run_job(session, hosts, "e2e-dense", "dense", elements=8192, tensors=2)
    assert_exact(dense)
    sparse = run_job(session, hosts, "e2e-sparse", "sparse", elements=8192, tensors=2, density=0.1)
    assert_exact(sparse)
    # OmniReduce: zero blocks are not sent, so sparse data costs far less than dense streaming.
    for r in sparse:
        assert r.result["bytes_sent"] < 0.5 * r.result["bytes_dense"], r.result
    for r in dense:
        assert r.result["bytes_sent"] >= r.result["bytes_dense"], r.result


def test_allreduce_is_exact_with_two_percent_loss_on_every_link(session_factory):
    session = session_factory(workers=4, link=LinkOptions(loss_pct=2))
    hosts = session.network.hosts
    for kind in ("dense", "sparse"):
        runs = run_job(session, hosts, f"e2e-lossy-{kind}", kind, elements=4096, tensors=2, density=0.2)
        assert_exact(runs)
        # Loss really happened and was repaired by retransmission.
        assert sum(r.result["retransmissions"] for r in runs) > 0


def test_two_jobs_at_once_stay_separate(session_factory):
    session = session_factory(workers=4)
    h1, h2, h3, h4 = by_index(session.network.hosts)
    first = run_job(session, [h1, h2], "e2e-job-a", "dense", elements=8192, tensors=2, start_only=True)
    second = run_job(session, [h3, h4], "e2e-job-b", "sparse", elements=8192, tensors=2, density=0.2,
                     extra=["--seed", "11"], start_only=True)
    from p4reduce.mininet_topos.hostproc import follow
    follow(first + second, timeout=120)
    assert_exact(first)
    assert_exact(second)


def test_two_tier_allreduce_is_exact_across_leaves(session_factory):
    session = session_factory(workers=4, topo="two-tier")
    topo_hosts = {h.name: h for h in session.network.hosts}
    assert len(session.network.switches) == 3 and len(topo_hosts) == 4
    assert_exact(run_job(session, session.network.hosts, "e2e-two-tier", "dense", elements=4096, tensors=2))


@pytest.mark.parametrize("lanes,subblock", [(64, 8), (128, 32)])
def test_unchanged_workers_follow_the_layout_the_switch_was_built_with(session_factory, tmp_path,
                                                                        lanes, subblock):
    """The controller reads the layout from the program it loaded and hands it to workers in the
    job description: the same worker code is exact on a switch built with another layout."""
    built = compile_program(tmp_path / "build", defines=[f"LANES={lanes}", f"SUBBLOCK={subblock}"])
    session = session_factory(workers=2, program=str(built.json_path))
    hosts = session.network.hosts
    for kind in ("dense", "sparse"):
        runs = run_job(session, hosts, f"e2e-layout-{lanes}-{kind}", kind, elements=5000, tensors=2, density=0.3)
        assert_exact(runs)
        assert all((r.result["lanes"], r.result["subblock"]) == (lanes, subblock) for r in runs)
        if kind == "dense":   # every packet carried `lanes` lanes: blocks of the switch's size on the wire
            assert all(r.result["packets_sent"] >= 2 * -(-5000 // lanes) for r in runs)
