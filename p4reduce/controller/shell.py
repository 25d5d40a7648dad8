"""`python -m p4reduce.controller shell` (`make shell`): p4runtime-shell's IPython shell with
p4reduce commands added.

p4runtime-shell provides the P4Runtime objects (table_entry, counter_entry, multicast_group_entry,
...). We connect it as a *backup* client (low election id) so it never takes the primary role from
the running controller, and add read-only commands over our own inspector. The commands, as
`help_p4reduce()` prints them (with the program's register, counter and table names after them):
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from p4reduce.controller import report
from p4reduce.controller.connection import parse_election_id
from p4reduce.controller.inspection import SwitchInspector
from p4reduce.controller.registers import open_register_access, thrift_address
from p4reduce.protocol.job_api import JobApiClient

if TYPE_CHECKING:
    from p4reduce.controller.cli import SwitchTarget

COMMANDS = (
    ("jobs()", "jobs on the switch (from the job API with --api-addr)"),
    ("slots()", "which job owns which slots (also slotmap())"),
    ("registers()", "the program's registers: name, size, type"),
    ('reg("count", 4)', "one register cell; reg(name, range(0, 16)) a range, reg(name) all cells;"),
    ("", 'names in full or by a unique suffix ("count", "sb0.l3"); lanes are shown signed'),
    ("slot(3, job=\"default\")", "a whole slot (both shadow copies) decoded: state and every lane"),
    ("watch_slot(3, job=\"default\")", "the same, reprinted every second until Ctrl-C (interval=, count=)"),
    ("counters()", "drop reasons and aggregation events; counters(name) one counter"),
    ("entries()", 'table entries; entries("workers") one table'),
    ("groups()", "multicast groups"),
    ("help_p4reduce()", "this help"),
)
COMMAND_NAMES = ("jobs", "slots", "slotmap", "registers", "reg", "slot", "watch_slot", "counters", "entries",
                 "groups", "help_p4reduce")


class ShellCommands:
    """The functions placed in the shell's namespace; each prints text (and returns nothing, so
    IPython does not echo the data after it)."""

    def __init__(self, inspector: SwitchInspector, api_client: JobApiClient | None = None,
                 out: TextIO | None = None, switch: str = ""):
        self.insp = inspector
        self.api = api_client
        self.out = out or sys.stdout
        self.switch = switch

    def _print(self, text: str) -> None:
        print(text, file=self.out)

    def jobs(self) -> None:
        data = self.api.jobs() if self.api is not None else self.insp.jobs()
        self._print(report.jobs_text(data))

    def slots(self) -> None:
        """The slot map: what the controller allocated (with the job API) and what the switch's
        tables hold; a job allocated but not (yet) on the switch is said."""
        self._print(report.slot_map_text(self._slot_map()))

    def _slot_map(self) -> list[dict[str, Any]]:
        if self.api is None:
            return self.insp.slot_map()
        on_switch = {j["name"] for j in self.insp.jobs()}
        allocated = [j for j in self.api.jobs() if isinstance(j.get("slots"), dict)]
        return self.insp.slot_map(extra=[
            {"name": j["name"] if j["name"] in on_switch else f"{j['name']} (allocated, not on the switch)",
             "slots": j["slots"]} for j in allocated if j["name"] not in on_switch])

    slotmap = slots

    def registers(self, name: str | None = None, index: int | range | tuple[int, int] | None = None) -> None:
        """Without a name, the list of registers; with one, as reg(name, index)."""
        if name is None:
            self._print(report.register_list_text(self.insp.register_list()))
        else:
            self.reg(name, index)

    def reg(self, name: str, index: int | range | tuple[int, int] | None = None) -> None:
        if isinstance(index, range):
            if index.step != 1:
                raise ValueError("reg(): ranges must have step 1")
            data = self.insp.register(name, start=index.start, stop=index.stop)
        elif isinstance(index, tuple):
            data = self.insp.register(name, start=index[0], stop=index[1])
        else:
            data = self.insp.register(name, index)
        self._print(report.register_text(data))

    def slot(self, slot: int, job: str | None = None, ver: int | None = None) -> None:
        self._print(report.slot_text(self.insp.slot(slot, ver, job)))

    def watch_slot(self, slot: int, job: str | None = None, ver: int | None = None, interval: float = 1.0,
                   count: int | None = None) -> None:
        """Reprint a decoded slot every `interval` s (Ctrl-C stops), to watch aggregation happen."""
        printed = 0
        try:
            while count is None or printed < count:
                self._print(f"--- {time.strftime('%H:%M:%S')} ---")
                self.slot(slot, job, ver)
                printed += 1
                if count is None or printed < count:
                    time.sleep(interval)
        except KeyboardInterrupt:
            pass

    def counters(self, name: str | None = None) -> None:
        self._print(report.counters_text(self.insp.counters(name)))

    def entries(self, table: str | None = None) -> None:
        self._print(report.entries_text(self.insp.entries(table)))

    def groups(self) -> None:
        self._print(report.groups_text(self.insp.multicast_groups()))

    def help_p4reduce(self) -> None:
        width = max(len(c) for c, _ in COMMANDS)
        lines = [f"p4reduce commands{' on switch ' + self.switch if self.switch else ''} (read-only):"]
        lines += [f"  {cmd:<{width}}  {what}" for cmd, what in COMMANDS]
        lines.append(report.register_list_text(self.insp.register_list()))
        lines.append(report.counter_list_text(self.insp.counter_list()))
        tables = sorted(t.preamble.name for t in self.insp.index.all("table"))
        lines.append("tables (entries(NAME), or p4runtime-shell's table_entry[NAME]):")
        lines += [f"  {t}" for t in tables]
        lines.append("p4runtime-shell's own objects are there too: tables, actions, table_entry, counter_entry, "
                     "multicast_group_entry, ...")
        self._print("\n".join(lines))

    def namespace(self) -> dict[str, Callable[..., None]]:
        """name -> callable, wrapped so errors print one line instead of a traceback."""
        def safe(fn: Callable[..., None]) -> Callable[..., None]:
            def call(*a: Any, **kw: Any) -> None:
                try:
                    fn(*a, **kw)
                except Exception as e:
                    self._print(f"error: {getattr(e, 'message', None) or e}")
            call.__doc__ = fn.__doc__
            call.__name__ = fn.__name__
            return call
        return {n: safe(getattr(self, n)) for n in COMMAND_NAMES}


def run_shell(args: argparse.Namespace, target: SwitchTarget, inspector: SwitchInspector) -> None:
    """Start p4runtime-shell's IPython shell with our commands in its namespace. `target` is the
    switch (controller/cli.py's SwitchTarget) and `inspector` an open SwitchInspector on it."""
    from p4runtime_sh import shell as p4sh  # IPython and friends: only when a shell is wanted

    try:
        inspector.registers = open_register_access(inspector.conn,
                                                   thrift_address(target.grpc_addr, target.thrift_port))
    except Exception as e:
        print(f"note: registers unavailable: {getattr(e, 'message', e)}")
    commands = ShellCommands(inspector, JobApiClient(args.api_addr) if args.api_addr else None,
                             switch=target.label)
    high, low = parse_election_id(args.election_id)

    real_start = p4sh.start_ipython

    def start_with_commands(user_ns: dict[str, Any] | None = None, config: Any = None, argv: Any = None) -> Any:
        user_ns = dict(user_ns or {})
        user_ns.update(commands.namespace())
        if config is not None:
            config.TerminalInteractiveShell.banner1 = (
                f"*** p4reduce shell on {target.label}: P4Runtime (p4runtime-shell) + p4reduce commands; "
                "help_p4reduce() lists them, with the program's registers and counters ***")
        return real_start(user_ns=user_ns, config=config, argv=argv)

    p4sh.start_ipython = start_with_commands
    sys.argv = ["p4runtime-sh", "--grpc-addr", target.grpc_addr, "--device-id", str(target.device_id),
                "--election-id", f"{high},{low}"]
    if target.tls is not None:    # p4runtime-shell's TLS options
        sys.argv += ["--ssl", "--cacert", target.tls.ca]
        if target.tls.cert and target.tls.key:
            sys.argv += ["--cert", target.tls.cert, "--private-key", target.tls.key]
    p4sh.main()
