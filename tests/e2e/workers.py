"""Run the demo worker (mininet_topos.demo_worker) on Mininet hosts and collect its reports."""
import sys

from p4reduce.mininet_topos.hostproc import follow, start_on_hosts


def by_index(hosts):
    return sorted(hosts, key=lambda h: h.params["index"])


def run_job(session, hosts, job, kind="dense", elements=4096, tensors=2, density=0.1, timeout=120,
            extra=(), create=True, start_only=False, slots=8):
    """Run one job on `hosts`; returns the HostRun list (events, result, error) once all finished."""
    mode = "sparse" if kind == "sparse" else "dense"
    if create:
        session.create_job(job, len(hosts), mode, slots=slots, hosts=hosts)

    def command(host):
        return [sys.executable, "-m", "p4reduce.mininet_topos.demo_worker", kind, "--controller", session.api_addr,
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
