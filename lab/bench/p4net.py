"""The benchmark star on the project's P4 switch: mininet_topos' Session (network + controller).

The same network every p4reduce user gets from `make run` (P4 switch node running
simple_switch_grpc or p4sim-switch, the controller pushing build/p4reduce.json and the forwarding
entries, the job API relayed into each host), with bench-private names (hosts bh1..bhN+1, switch
bs1), free ports, logs under logs/bench/ and state under run/bench/, so a benchmark never collides
with a `make run` session. The baselines' TCP traffic crosses the same switch through the
program's L3 forwarding.
"""
from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

from lab.bench import aggregation_program as progmod
from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.mininet_topos.ports import free_port

if TYPE_CHECKING:
    from p4reduce.mininet_topos.session import Session


REPO = progmod.REPO
PREFIX = "b"
LOG_DIR = REPO / "logs" / "bench"
RUN_DIR = REPO / "run" / "bench"
SWITCH_LOG_LEVEL = "warn"


class P4Net:
    """Start/stop a bench-private mininet_topos Session; expose its hosts and API address."""

    def __init__(self, hosts: int, link: LinkOptions, program: pathlib.Path = progmod.DEFAULT,
                 supervise: bool = False, topo: str = "star", uplink: LinkOptions = LinkOptions(),
                 topo_options: dict[str, Any] | None = None):
        """`supervise`: restart a switch or controller process that dies, as `make run` does (the
        faults section kills the switch). `topo`, `uplink`, `topo_options`: another topology than
        the star (the hierarchy section's two-tier and tree), its switch-to-switch links' options
        and its shape (mininet_topos' Session)."""
        self.nhosts = hosts
        self.supervise = supervise
        self.link = link
        self.topo = topo
        self.uplink = uplink
        self.topo_options = dict(topo_options or {})
        self.program = pathlib.Path(program)
        self.session: Session | None = None
        self.api_addr: str | None = None

    def start(self) -> Any:
        """Start the network and the controller; returns the Mininet network."""
        from p4reduce.mininet_topos.session import Session  # Mininet: imported once a network is built
        api_port = free_port()
        grpc_port = free_port()
        thrift_port = free_port()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        session = Session(topo=self.topo, workers=self.nhosts, link=self.link,
                          program=str(self.program), api_port=api_port, grpc_base=grpc_port,
                          thrift_base=thrift_port, prefix=PREFIX, log_dir=str(LOG_DIR),
                          pcap_dir=None, run_dir=str(RUN_DIR), supervise=self.supervise,
                          uplink=self.uplink, topo_options=self.topo_options or None)
        # A switch logging every packet (BMv2's and p4sim's default with --log-file: trace) runs
        # several times slower; the benchmark measures the switch, not its logging.
        for name in session.network.topo.switches():
            session.network.topo.nodeInfo(name)["log_level"] = SWITCH_LOG_LEVEL
        self.api_addr = session.api_addr
        session.start()
        self.session = session
        return session.network.net

    def started(self) -> Session:
        """The running session (start() first)."""
        if self.session is None:
            raise RuntimeError("the benchmark network is not started")
        return self.session

    def stop(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            session.stop()

    @property
    def hosts(self) -> list:
        return sorted(self.started().network.hosts, key=lambda h: h.params.get("index", 0))

    def describe(self) -> str:
        switches = self.started().network.switches
        sw = switches[0]
        info = sw.describe()
        target = info.get("target")
        if target == "p4sim-switch":   # which packet path it runs (the default unless told)
            from p4sim.engine.native.backend import default_backend
            target = f"{target} ({default_backend()} backend)"
        if len(switches) > 1:
            names = ", ".join(s.name for s in switches)
            return (f"{len(switches)} P4 switches ({names}): {target} each, running "
                    f"{progmod.display(self.program)}, programmed by the controller")
        return (f"P4 switch {sw.name}: {target} running "
                f"{progmod.display(self.program)}, programmed by the controller")

