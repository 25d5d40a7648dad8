"""What a p4reduce process group needs beyond torch's rank, size and store: where the job is and
how to send (``pg_options=Options(...)``, or the environment for a script with no p4reduce line)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

DEFAULT_CONTROLLER = "127.0.0.1:8090"   # the controller as `make run` hosts reach it (the job-API relay)
DEFAULT_JOB = "default"                 # the job `make run` creates for its hosts
ENV = {"controller": "P4REDUCE_CONTROLLER", "job": "P4REDUCE_JOB", "compressor": "P4REDUCE_COMPRESSOR",
       "mode": "P4REDUCE_MODE", "slots": "P4REDUCE_SLOTS", "loop": "P4REDUCE_WORKER_LOOP",
       "switch": "P4REDUCE_SWITCH", "bind_ip": "P4REDUCE_BIND_IP", "switch_timeout_s": "P4REDUCE_SWITCH_TIMEOUT"}


@dataclass
class Options:
    """``controller``: HOST:PORT of the job API; ``job``: the job's name (created by rank 0, for the
    group's size, when it does not exist or has ended); ``credential``: the job's API credential
    (None: the worker's usual sources, then the one rank 0 got by creating the job); ``compressor``:
    a worker compressor name (default fixedpoint: exact enough for training, no lossy step);
    ``compressor_options``: its parameters; ``mode``/``slots``: for a job rank 0 creates;
    ``loop``: the worker loop (native or python); ``switch``: HOST:PORT where packets go instead
    of the job's switch (a stand-in or a tunnel); ``bind_ip``: the worker's UDP address;
    ``switch_timeout_s``: how long a call may go without progress on the switch before the group
    moves to the host fallback (default the worker's, 1.5 s; at least 1)."""

    controller: str | None = None
    job: str | None = None
    credential: str | None = None
    compressor: str | None = None
    compressor_options: dict[str, Any] = field(default_factory=dict)
    mode: str | None = None
    slots: int | None = None
    loop: str | None = None
    switch: str | None = None
    bind_ip: str | None = None
    switch_timeout_s: float | str | None = None

    def resolved(self, environ: os._Environ[str] | dict[str, str] | None = None) -> Settings:
        """These options with every unset one taken from the environment, then the defaults;
        a malformed value is a ValueError naming the option and where it came from."""
        env = os.environ if environ is None else environ
        out = Options(**{f.name: getattr(self, f.name) for f in fields(self)})
        for name, var in ENV.items():
            if getattr(out, name) is None and env.get(var):
                setattr(out, name, env[var])
        if isinstance(out.slots, str):
            try:
                out.slots = int(out.slots)
            except ValueError:
                raise ValueError(f"{ENV['slots']}={out.slots!r}: must be a whole number of slots") from None
        if out.slots is not None and (isinstance(out.slots, bool) or not 1 <= out.slots <= 32767):
            raise ValueError(f"slots={out.slots!r}: must be 1..32767")
        if isinstance(out.switch_timeout_s, str):
            try:
                out.switch_timeout_s = float(out.switch_timeout_s)
            except ValueError:
                raise ValueError(f"{ENV['switch_timeout_s']}={out.switch_timeout_s!r}: must be seconds") from None
        if out.switch_timeout_s is not None and (isinstance(out.switch_timeout_s, bool)
                                                 or not 1.0 <= out.switch_timeout_s <= 3600):
            raise ValueError(f"switch_timeout_s={out.switch_timeout_s!r}: must be 1..3600 seconds")
        if out.mode is not None and out.mode not in ("dense", "sparse"):
            raise ValueError(f"mode={out.mode!r}: must be dense or sparse")
        if not isinstance(out.compressor_options, dict):
            raise ValueError(f"compressor_options={out.compressor_options!r}: must be a dict")
        if out.switch is not None:
            host, _, port = out.switch.rpartition(":")
            if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
                raise ValueError(f"switch={out.switch!r}: expected HOST:PORT ({ENV['switch']})")
        return Settings(controller=out.controller or DEFAULT_CONTROLLER, job=out.job or DEFAULT_JOB,
                        credential=out.credential, compressor=out.compressor or "fixedpoint",
                        compressor_options=dict(out.compressor_options), mode=out.mode, slots=out.slots,
                        loop=out.loop, switch=out.switch, bind_ip=out.bind_ip or "0.0.0.0",
                        switch_timeout_s=None if out.switch_timeout_s is None else float(out.switch_timeout_s))


@dataclass(frozen=True)
class Settings:
    """Options with every default applied: what the process group runs with."""

    controller: str
    job: str
    credential: str | None
    compressor: str
    compressor_options: dict[str, Any]
    mode: str | None
    slots: int | None
    loop: str | None
    switch: str | None
    bind_ip: str
    switch_timeout_s: float | None = None

    def switch_addr(self) -> tuple[str, int] | None:
        if not self.switch:
            return None
        host, _, port = self.switch.rpartition(":")
        return host, int(port)
