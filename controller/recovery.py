"""Surviving a switch restart: reconnect, re-push the pipeline, reinstall forwarding and jobs.

A SwitchWatchdog waits for the P4Runtime stream of its switch to break (the switch process died
or restarted). It then reconnects (retrying until stopped), makes sure the switch runs the program
again, reinstalls forwarding and, on the aggregating switch, replays every job the controller
manages, so workers that keep retransmitting see aggregation resume. A switch that kept its
pipeline (only the connection broke) keeps its entries and nothing is replayed.
"""
import threading

from p4reduce.controller.errors import SwitchError
from p4reduce.controller.forwarding import install_forwarding


class SwitchWatchdog:
    def __init__(self, controller, switch_name, retry_s=2.0):
        self.ctl = controller
        self.name = switch_name
        self.retry_s = retry_s
        self._stop = threading.Event()
        self.recoveries = 0
        self._thread = threading.Thread(target=self._run, name=f"watchdog-{switch_name}", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self):
        conn = self.ctl.connections[self.name]
        while not self._stop.is_set():
            if not conn.lost.wait(timeout=0.2):
                continue
            if self._stop.is_set():
                return
            self.ctl.report(f"switch {self.name}: connection lost; reconnecting every {self.retry_s:g} s")
            if self._reconnect(conn):
                self.recoveries += 1

    def _reconnect(self, conn):
        while not self._stop.is_set():
            try:
                conn.connect(self.retry_s, require_primary=True, report=lambda msg: None)
                break
            except SwitchError as e:
                if e.code == "not_primary":
                    self.ctl.report(f"switch {self.name}: {e.message}; giving it up")
                    return False
                if self._stop.wait(0.1):
                    return False
        if self._stop.is_set():
            return False
        try:
            if self.ctl.p4info and self.ctl.device_config:
                pushed = conn.ensure_pipeline(self.ctl.p4info, self.ctl.device_config, report=self.ctl.report)
            else:
                index, _ = conn.fetch_pipeline()
                if index is None:
                    self.ctl.report(f"switch {self.name}: back without a program, and this controller was "
                                    f"started without one to push (--p4info/--bmv2-json)")
                    return False
                pushed = False
            install_forwarding(conn, self.ctl.topology, self.name, report=self.ctl.report)
            if pushed and self.name == self.ctl.topology.aggregation_switch.name:
                self.ctl.reopen_registers()
                n = self.ctl.manager.replay()
                self.ctl.report(f"switch {self.name}: {n} job(s) reinstalled")
            self.ctl.report(f"switch {self.name}: recovered")
            return True
        except SwitchError as e:
            self.ctl.report(f"switch {self.name}: recovery failed: {e.message}")
            conn.lost.set()  # try again
            return False
