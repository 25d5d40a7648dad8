"""The allreduce implementations under test, each as the host processes that run one cell.

A system turns (network, tensor size, repetitions) into HostJobs for ``bench.hostrun``; every job
prints a ``bench.hostside`` record, so all systems are timed and counted identically.
"""
from __future__ import annotations

import itertools

from lab.bench.hostrun import HostJob
from lab.bench.star_topology import P4, BenchNet

_ports = itertools.count(29500)


def next_port() -> int:
    """A fresh TCP port per cell, so no cell waits on the previous one's TIME_WAIT sockets."""
    return next(_ports)


class System:
    name = ""
    description = ""
    density = 1.0          # non-zero block density of its tensors in the allreduce grid

    def unavailable_reason(self, bn: BenchNet) -> str | None:
        return None

    def jobs(self, bn: BenchNet, size: int, reps: int, warmup: int, density: float = 1.0) -> list[HostJob]:
        raise NotImplementedError


class Gloo(System):
    name = "gloo"
    description = "torch.distributed gloo ring allreduce over TCP"

    def unavailable_reason(self, bn: BenchNet) -> str | None:
        try:
            import torch.distributed as dist
        except ImportError:
            return "torch is not installed"
        if not dist.is_gloo_available():
            return "torch was built without gloo"
        return None

    def jobs(self, bn: BenchNet, size: int, reps: int, warmup: int, density: float = 1.0) -> list[HostJob]:
        master = f"{bn.ip(bn.workers[0])}:{next_port()}"
        return [HostJob(h, "lab.bench.baselines.gloo_allreduce",
                        ["--rank", r, "--world", len(bn.workers), "--master", master,
                         "--iface", bn.iface(h), "--size", size, "--reps", reps, "--warmup", warmup])
                for r, h in enumerate(bn.workers)]


class ParamServer(System):
    name = "ps-tcp"
    description = "one parameter server host over TCP"

    def jobs(self, bn: BenchNet, size: int, reps: int, warmup: int, density: float = 1.0) -> list[HostJob]:
        port = next_port()
        world = len(bn.workers)
        common = ["--world", world, "--size", size]
        server = HostJob(bn.server, "lab.bench.baselines.param_server",
                         ["server", *common, "--port", port, "--iface", bn.iface(bn.server)], wait=False)
        workers = [HostJob(h, "lab.bench.baselines.param_server",
                           ["worker", *common, "--rank", r, "--server", f"{bn.ip(bn.server)}:{port}",
                            "--iface", bn.iface(h), "--reps", reps, "--warmup", warmup])
                   for r, h in enumerate(bn.workers)]
        return [server, *workers]


class P4Reduce(System):
    name = "p4reduce"
    description = "p4reduce: integer aggregation in the P4 switch"
    aggregation: str | None = None   # the job's: "tree", "root", or the controller's default (tree)

    def unavailable_reason(self, bn: BenchNet) -> str | None:
        if bn.switch_kind != P4:
            return f"needs the P4 switch, the network runs on {bn.switch_kind}"
        return None

    def jobs(self, bn: BenchNet, size: int, reps: int, warmup: int, density: float = 1.0) -> list[HostJob]:
        """One bench.p4reduce_worker per worker host, all joining one fresh job."""
        if bn.p4 is None or bn.p4.api_addr is None:
            raise RuntimeError("p4reduce needs the P4 switch's controller (see unavailable_reason)")
        api_addr = bn.p4.api_addr
        mode = "dense" if density >= 1.0 else "sparse"
        job = f"bench-{mode}-{len(bn.workers)}w-{size}-{next_port()}"
        bn.p4.started().create_job(job, len(bn.workers), mode, hosts=bn.workers,   # the relay adds its credential
                                   aggregation=self.aggregation)
        return [HostJob(h, "lab.bench.p4reduce_worker",
                        ["--rank", r, "--world", len(bn.workers), "--controller", api_addr,
                         "--job", job, "--mode", mode, "--density", density, "--iface", bn.iface(h),
                         "--ip", bn.ip(h), "--size", size, "--reps", reps, "--warmup", warmup])
                for r, h in enumerate(bn.workers)]


class P4ReduceSparse(P4Reduce):
    """p4reduce in sparse mode (OmniReduce), in the allreduce grid at a fixed block density."""
    name = "p4reduce-sparse"
    description = "p4reduce sparse mode: zero blocks skipped"
    density = 0.1


SYSTEMS = {s.name: s for s in (P4Reduce(), P4ReduceSparse(), Gloo(), ParamServer())}
