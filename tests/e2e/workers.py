"""Run the demo worker (mininet_topos.demo_worker) on Mininet hosts and collect its reports."""
import pathlib
import sys

from p4reduce.mininet_topos.hostproc import follow, start_on_hosts


def by_index(hosts):
    return sorted(hosts, key=lambda h: h.params["index"])


HELD_WORKER = pathlib.Path(__file__).with_name("held_worker.py")


def run_job(session, hosts, job, kind="dense", elements=4096, tensors=2, density=0.1, timeout=120,
            extra=(), create=True, start_only=False, slots=8, held=None):
    """Run one job on `hosts`; returns the HostRun list (events, result, error) once all finished.
    `held` = (host, release_file): that host's worker waits for the file before its first
    allreduce (tests/e2e/held_worker.py)."""
    mode = "sparse" if kind == "sparse" else "dense"
    if create:
        session.create_job(job, len(hosts), mode, slots=slots, hosts=hosts)

    def command(host):
        if held is not None and host is held[0]:
            start = [sys.executable, str(HELD_WORKER), str(held[1])]
        else:
            start = [sys.executable, "-m", "lab.demo.worker"]
        return start + [kind, "--controller", session.api_addr,
                        "--job", job, "--workers", str(len(hosts)), "--advertise-ip", host.IP(),
                        "--elements", str(elements), "--tensors", str(tensors), "--density", str(density),
                        "--timeout", str(timeout)] + list(extra)

    runs = start_on_hosts(by_index(hosts), command)
    return runs if start_only else follow(runs, timeout=timeout)


def assert_exact(runs):
    problems = [f"{r.host}: {r.error or r.text[-5:]}" for r in runs if r.error or not r.result]
    assert not problems, "\n".join(problems)
    assert sorted(r.result["rank"] for r in runs) == list(range(len(runs)))
    assert all(r.result["exact"] for r in runs), [r.result for r in runs]
