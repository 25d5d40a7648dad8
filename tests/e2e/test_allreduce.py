"""Workers on Mininet hosts allreduce through p4sim-switch running p4reduce.p4, bit-exactly."""
import pytest

from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.p4src.build import compile_program

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
        # 256 blocks per tensor: the sparse job's ~1,000 frames all pass 2 % loss with odds of 1e-9
        # (4,096 elements, 16 blocks: ~160 frames, 4 %; a clean-clone rehearsal met it)
        runs = run_job(session, hosts, f"e2e-lossy-{kind}", kind, elements=65536, tensors=2, density=0.2)
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


def test_jumbo_links_carry_1024_lane_packets_across_two_tiers(session_factory, tmp_path):
    """--mtu 9000 reaches every interface (hosts, leaf and spine ports, the leaf-spine links), a
    program built for it (1024 lanes, 4148-byte packets) aggregates exactly across the tiers, and
    a job that names no slot count gets the slots of 64 KiB in flight (16 at 1024 lanes)."""
    built = compile_program(tmp_path / "build", defines=["LANES=1024", "SUBBLOCK=64", "IPV4_MTU=9000"])
    session = session_factory(workers=4, topo="two-tier", program=str(built.json_path),
                              link=LinkOptions(mtu=9000))
    hosts = session.network.hosts
    mtus = {f"{h.name}:{h.defaultIntf().name}": h.cmd(f"ip -o link show dev {h.defaultIntf().name}")
            for h in hosts}
    for sw in session.network.switches:
        for intf in sw.intfList():
            if intf.name != "lo":
                mtus[f"{sw.name}:{intf.name}"] = sw.cmd(f"ip -o link show dev {intf.name}")
    assert len(mtus) == 4 + 4 + 2 * 2, sorted(mtus)          # hosts, host ports, both ends of two uplinks
    assert all(" mtu 9000 " in line for line in mtus.values()), mtus
    for kind in ("dense", "sparse"):
        runs = run_job(session, hosts, f"e2e-jumbo-{kind}", kind, elements=20000, tensors=2, density=0.3,
                       slots=None)
        assert_exact(runs)
        assert all((r.result["lanes"], r.result["subblock"], r.result["slots"]) == (1024, 64, 16) for r in runs)
        if kind == "dense":      # 20 blocks of 1024 lanes per tensor, not 79 of 256
            assert all(2 * 20 <= r.result["packets_sent"] < 2 * 20 * 1.5 + 8 for r in runs), \
                [r.result["packets_sent"] for r in runs]


def test_a_program_wider_than_the_links_is_refused_before_anything_starts(tmp_path):
    """A 1024-lane program on links of the default MTU: a clear error naming the MTU it needs."""
    from p4reduce.mininet_topos.session import Session, SessionError
    built = compile_program(tmp_path / "build", defines=["LANES=1024", "SUBBLOCK=64", "IPV4_MTU=9000"])
    with pytest.raises(SessionError, match=r"4148 bytes of IPv4\) does not fit the links' MTU of 1500 "
                                           r"bytes: run with --mtu 4148 or more"):
        Session(program=str(built.json_path), run_dir=str(tmp_path / "run"))
    Session(program=str(built.json_path), link=LinkOptions(mtu=4148), run_dir=str(tmp_path / "run"))
