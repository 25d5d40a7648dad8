"""A running job as in production, in one process, without Mininet: the real controller
(service.Controller: P4Runtime session, job API server, lease reaper, watchdog) programming a p4sim
P4Runtime server on loopback, whose engine runs p4reduce.p4; a UDP front puts the workers' datagrams
into that engine as the frames their hosts would send (host rank+1 of the address plan on switch
port rank+1) and delivers the results; four worker Agents allreduce through it."""
from __future__ import annotations

import socket
import threading
import time

import numpy as np
from testbed.udp_stand_in import UdpStandIn

from p4reduce.controller.service import Controller
from p4reduce.controller.topology import from_dict
from p4reduce.protocol import constants as C
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.job_api import JobApiClient
from p4reduce.worker.agent import Agent
from p4reduce.worker.streaming import RetryPolicy

WORKERS = 4


def topology(grpc_addr: str):
    hosts = {}
    for k in range(1, WORKERS + 1):
        h = host_address(k)
        hosts[f"h{k}"] = {"ip": h.ip, "mac": h.mac, "switch": "s1", "port": k}
    return from_dict({"switches": {"s1": {"grpc_addr": grpc_addr, "ip": SERVICE_IP, "mac": SERVICE_MAC}},
                      "hosts": hosts})


class EngineFront(UdpStandIn):
    """UDP on loopback in front of a P4Runtime server's engine. `members` maps a worker's loopback
    UDP port to (ip, mac, switch port) of the host it stands for."""

    def __init__(self, server):
        self.server = server
        self.members: dict[int, tuple[str, str, int]] = {}
        self.errors: list[str] = []
        super().__init__(rcvbuf=4 << 20, name="engine-front")   # a burst of 4 windows fits: no drops here

    def _serve(self):
        while not self._stop.is_set():
            try:
                data, (_, sport) = self.sock.recvfrom(65536)
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                continue
            who = self.members.get(sport)
            engine = self.server.device.engine
            if who is None or engine is None:
                continue
            ip, mac, port = who
            frame = udp_frame(mac, SERVICE_MAC, ip, SERVICE_IP, sport, C.AGG_UDP_PORT, data)
            try:
                outs = engine.process(port, frame)
            except Exception as e:   # the engine swapped under us, or a bug: counted, the loop goes on
                self.errors.append(f"{type(e).__name__}: {e}")
                continue
            for _egress, out in outs:
                try:
                    f = parse_udp_frame(out)
                except ValueError:
                    continue
                if f.dport in self.members:
                    try:
                        self.sock.sendto(f.payload, ("127.0.0.1", f.dport))
                    except OSError as e:     # a worker's socket gone, a full buffer: lost, as on a wire
                        self.errors.append(f"send to {f.dport}: {e}")


class LiveJob:
    """Controller + switch + front; `run(name, rounds, size)` runs a 4-worker job to the end and
    returns each worker's check (True: every allreduce exact)."""

    def __init__(self, build, lease_s: float = 2.0, election_id: int = 10):
        from p4sim.runtime import P4RuntimeServer
        self.server = P4RuntimeServer("127.0.0.1:0")
        port = self.server.start()
        self.grpc_addr = f"127.0.0.1:{port}"
        p4info, bmv2 = build
        self.logs: list[str] = []
        self.controller = Controller(topology(self.grpc_addr), p4info, bmv2, election_id=election_id,
                                     connect_timeout=20, api_address=("127.0.0.1", 0), lease_s=lease_s,
                                     report=self.logs.append)
        self.controller.start()
        assert self.controller.api_server is not None and self.controller.manager is not None
        self.api = self.controller.api_server.address
        self.manager = self.controller.manager
        self.front = EngineFront(self.server).start()

    def close(self):
        self.front.stop()
        self.controller.stop()
        self.server.stop(0.2)

    def run(self, name: str, rounds: int, size: int, deadline: float = 10.0, on_running=None) -> list:
        credential = JobApiClient(self.api).create(name, WORKERS)["credential"]
        socks = []
        for _ in range(WORKERS):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        results: list = [None] * WORKERS
        agents: list = [None] * WORKERS

        def worker(k):
            port = socks[k].getsockname()[1]
            socks[k].close()     # the Agent binds the same port
            host = host_address(k + 1)
            self.front.members[port] = (host.ip, host.mac, k + 1)
            try:
                agent = Agent(self.api, name, bind_ip="127.0.0.1", udp_port=port, advertise_ip=host.ip,
                              switch_addr=self.front.addr, credential=credential,
                              retry=RetryPolicy(deadline=deadline), wait_timeout=30,
                              fallback=False)   # the hosts they stand for are addresses, not machines
            except Exception as e:
                results[k] = e
                return
            agents[k] = agent
            try:
                ok = True
                for i in range(rounds):
                    rng = np.random.default_rng(1000 * i + agent.rank)
                    xs = [np.random.default_rng(1000 * i + r).integers(-1000, 1000, size, dtype=np.int32)
                          for r in range(WORKERS)]
                    mine = rng.integers(-1000, 1000, size, dtype=np.int32)
                    got = agent.allreduce(mine)
                    ok = ok and bool(np.array_equal(got, np.sum(np.array(xs, dtype=np.int64), axis=0)))
                results[k] = ok
            except Exception as e:
                results[k] = e
            finally:
                agent.close()

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(WORKERS)]
        for t in threads:
            t.start()
        if on_running is not None:
            deadline_t = time.monotonic() + 30
            while not (name in self.manager.jobs and self.manager.jobs[name].state == "running"):
                assert time.monotonic() < deadline_t, "the job did not start"
                time.sleep(0.05)
            on_running()
        for t in threads:
            t.join(300)
        return results
