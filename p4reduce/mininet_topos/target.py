"""Which P4 target binary a switch node runs, and its command line.

The real `simple_switch_grpc` is preferred when it is on PATH (the P4 tutorials' target); otherwise
the embedded `p4sim-switch` from this project's venv, which takes the same flags (see
docs/architecture.md "Contract 3"). `P4REDUCE_SWITCH` (a path or a command name) overrides both.
"""
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REAL_TARGET = "simple_switch_grpc"
EMBEDDED_TARGET = "p4sim-switch"
DEFAULT_CPU_PORT = 64


class TargetError(RuntimeError):
    """The requested switch target cannot be found or configured."""


def find_target(choice: str = "auto") -> list[str]:
    """Argv prefix of the switch target: choice is 'auto', 'bmv2', 'p4sim' or a path/command."""
    override = os.environ.get("P4REDUCE_SWITCH")
    if choice == "auto" and override:
        choice = override
    if choice in ("auto", "bmv2"):
        real = shutil.which(REAL_TARGET)
        if real:
            return [real]
        if choice == "bmv2":
            raise TargetError(f"--target bmv2: {REAL_TARGET} is not on PATH")
        choice = "p4sim"
    if choice == "p4sim":
        script = Path(sys.executable).with_name(EMBEDDED_TARGET)
        if script.exists():
            return [str(script)]
        found = shutil.which(EMBEDDED_TARGET)
        if found:
            return [found]
        return [sys.executable, "-m", "p4sim.simple_switch"]
    found = shutil.which(choice)
    if not found:
        raise TargetError(f"switch target {choice!r}: not found (give 'auto', 'bmv2', 'p4sim' or a path)")
    return [found]


def target_name(argv0: Sequence[str]) -> str:
    """Short name of a target argv prefix ('simple_switch_grpc' or 'p4sim-switch')."""
    if list(argv0[-2:]) == ["-m", "p4sim.simple_switch"]:
        return EMBEDDED_TARGET
    return os.path.basename(argv0[0])


def describe_target(argv0: Sequence[str]) -> str:
    """What a person reads for a target argv prefix: which switch really runs the program."""
    name = target_name(argv0)
    if name == EMBEDDED_TARGET:
        return f"{EMBEDDED_TARGET} (the embedded target)"
    if name == REAL_TARGET:
        return f"{REAL_TARGET} (BMv2, {argv0[0]})"
    return f"{name} ({argv0[0]})"


@dataclass
class SwitchCommand:
    """Everything simple_switch_grpc / p4sim-switch is started with."""

    ports: list[tuple[int, str]]            # (port number, interface name)
    device_id: int
    grpc_addr: str                           # HOST:PORT
    thrift_port: int
    log_file: str
    pcap_dir: str | None = None
    json_path: str | None = None          # None -> --no-p4 (pipeline pushed over P4Runtime)
    cpu_port: int | None = DEFAULT_CPU_PORT
    log_level: str | None = None          # -L trace|debug|info|warn|error|off
    extra: list[str] = field(default_factory=list)

    def argv(self, prefix: Sequence[str]) -> list[str]:
        """The full command line, in simple_switch_grpc's order (general options -- target options)."""
        args = list(prefix)
        for number, intf in self.ports:
            args += ["-i", f"{number}@{intf}"]
        args += ["--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
                 "--log-file", self.log_file]
        if self.log_level:
            args += ["-L", self.log_level]
        if self.pcap_dir:
            # BMv2's --pcap has an implicit value: the directory must be attached with '='.
            args.append(f"--pcap={self.pcap_dir}")
        args += [self.json_path] if self.json_path else ["--no-p4"]
        args += ["--", "--grpc-server-addr", self.grpc_addr]
        if self.cpu_port is not None:
            args += ["--cpu-port", str(self.cpu_port)]
        return args + list(self.extra)
