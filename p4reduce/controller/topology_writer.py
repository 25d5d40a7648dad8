"""`python -m p4reduce.controller topology`: write the topology file of a one-switch deployment on
real hosts (docs/deploy.md) from what is given on the command line.

    python -m p4reduce.controller topology -o topology.json --switch s1 --grpc 127.0.0.1:9559 \\
        --service-ip 10.0.0.254 --service-mac 02:00:00:00:01:fe \\
        --host h1=10.0.0.1,02:00:00:00:00:01,1,192.168.77.11 \\
        --host h2=10.0.0.2,02:00:00:00:00:02,2,192.168.77.12

`--host NAME=IP,MAC,PORT[,API_SOURCE]`: the host's data-plane address and MAC, the switch port it
is cabled to, and optionally the (management) address its workers call the job API from, when that
is not IP. With API_SOURCE the controller knows the host a join comes from, so a worker needs only
the controller's address, the job name and its credential.

Every value is checked here, and again by the controller's own reader (controller/topology.py) on
the written file; a bad one is one line naming the argument, exit status 2.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import pathlib
import re
import sys
import tempfile
from typing import Any

from p4reduce.controller import topology as topo
from p4reduce.controller.codec import parse_mac
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,31}\Z")
MAX_PORT = 510          # BMv2 port numbers the controller accepts (511 is the drop port)
MAX_HOSTS = 255


class ArgumentError(ValueError):
    """A bad command-line value: `argument`, and what is wrong with it."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"argument {argument}: {message}")
        self.argument = argument


def _shown(value: str) -> str:
    """A value as quoted in an error: repr (control characters escaped), long ones cut."""
    return repr(value if len(value) <= 80 else value[:77] + "...")


def _name(value: str, argument: str) -> str:
    if not NAME.match(value):
        raise ArgumentError(argument, f"name {_shown(value)}: expected a letter, then up to 31 letters, "
                                      "digits, '_', '.' or '-'")
    return value


def _unicast_ip(value: str, argument: str, what: str) -> str:
    try:
        ip = ipaddress.IPv4Address(value.strip() if value.strip() == value else "x")
    except ValueError:
        raise ArgumentError(argument, f"{what} {_shown(value)} is not an IPv4 address") from None
    if ip.is_multicast or ip.is_unspecified or ip == ipaddress.IPv4Address("255.255.255.255"):
        raise ArgumentError(argument, f"{what} {ip} is not a unicast address")
    return str(ip)


def _unicast_mac(value: str, argument: str, what: str) -> str:
    try:
        mac = parse_mac(value, what)
    except ValueError:
        raise ArgumentError(argument, f"{what} {_shown(value)} is not a MAC address (aa:bb:cc:dd:ee:ff)") from None
    if int(mac.split(":")[0], 16) & 1:
        raise ArgumentError(argument, f"{what} {mac} is a group (multicast/broadcast) MAC address")
    if mac == "00:00:00:00:00:00":
        raise ArgumentError(argument, f"{what} {mac} is the zero MAC address")
    return mac


def _port(value: str, argument: str, what: str, lo: int, hi: int) -> int:
    if not re.fullmatch(r"[0-9]{1,5}", value) or not lo <= int(value) <= hi:
        raise ArgumentError(argument, f"{what} {_shown(value)}: expected a number in {lo}..{hi}")
    return int(value)


def _grpc(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ArgumentError("--grpc", f"{_shown(value)}: expected HOST:PORT")
    _port(port, "--grpc", "port", 1, 65535)
    if not re.fullmatch(r"[A-Za-z0-9.\-]{1,253}|\[[0-9A-Fa-f:.]+\]", host):
        raise ArgumentError("--grpc", f"host {_shown(host)} is not a host name or address")
    return value


def parse_host(value: str) -> dict[str, Any]:
    """NAME=IP,MAC,PORT[,API_SOURCE] -> {name, ip, mac, port[, api_source]}."""
    argument = "--host"
    name, sep, rest = value.partition("=")
    if not sep:
        raise ArgumentError(argument, f"{_shown(value)}: expected NAME=IP,MAC,PORT[,API_SOURCE]")
    fields = rest.split(",")
    if len(fields) not in (3, 4):
        raise ArgumentError(argument, f"{_shown(value)}: expected NAME=IP,MAC,PORT[,API_SOURCE] "
                                      f"(got {len(fields)} comma-separated values after '=')")
    name = _name(name, argument)
    host: dict[str, Any] = {
        "name": name,
        "ip": _unicast_ip(fields[0], argument, f"host {name}: IP"),
        "mac": _unicast_mac(fields[1], argument, f"host {name}: MAC"),
        "port": _port(fields[2], argument, f"host {name}: PORT", 0, MAX_PORT)}
    if len(fields) == 4:
        host["api_source"] = _unicast_ip(fields[3], argument, f"host {name}: API_SOURCE")
    return host


def description(args: argparse.Namespace) -> dict[str, Any]:
    """The topology file's content (the format of controller/topology.py), checked."""
    switch = _name(args.switch, "--switch")
    grpc = _grpc(args.grpc)
    service_ip = _unicast_ip(args.service_ip, "--service-ip", "address")
    service_mac = _unicast_mac(args.service_mac, "--service-mac", "address")
    if not args.host:
        raise ArgumentError("--host", "at least one host is needed")
    if len(args.host) > MAX_HOSTS:
        raise ArgumentError("--host", f"{len(args.host)} hosts: at most {MAX_HOSTS}")
    hosts = [parse_host(h) for h in args.host]
    seen: dict[tuple[str, Any], str] = {("ip", service_ip): "the service address (--service-ip)",
                                        ("mac", service_mac): "the service MAC (--service-mac)"}
    names: set[str] = set()
    for h in hosts:
        if h["name"] in names:
            raise ArgumentError("--host", f"host {h['name']} is given twice")
        if h["name"] == switch:
            raise ArgumentError("--host", f"host {h['name']} has the switch's name (--switch)")
        names.add(h["name"])
        for key in ("ip", "mac", "port"):
            other = seen.get((key, h[key]))
            if other is not None:
                raise ArgumentError("--host", f"host {h['name']}: {key} {h[key]} is also {other}")
            seen[(key, h[key])] = f"host {h['name']}'s"
        source = h.get("api_source")
        if source is not None and source != h["ip"]:
            for other_host in hosts:
                if other_host is not h and source in (other_host["ip"], other_host.get("api_source")):
                    raise ArgumentError("--host", f"host {h['name']}: API_SOURCE {source} is also host "
                                                  f"{other_host['name']}'s address")
    sw: dict[str, Any] = {"name": switch, "grpc_addr": grpc, "device_id": args.device_id,
                          "ip": service_ip, "mac": service_mac, "aggregate": True}
    if args.thrift_port is not None:
        sw["thrift_port"] = args.thrift_port
    data = {"switches": [sw],
            "hosts": [dict(h, switch=switch) for h in hosts],
            "service": {"ip": service_ip, "mac": service_mac}}
    topo.from_dict(data, "topology")   # the controller's reader must accept what we write
    return data


def _write(path: str, text: str) -> None:
    """Write atomically: the file is either the old one or the whole new one."""
    target = pathlib.Path(path)
    if target.is_dir():
        raise ArgumentError("--output", f"{path} is a directory")
    directory = target.parent if str(target.parent) else pathlib.Path(".")
    if not directory.is_dir():
        raise ArgumentError("--output", f"directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def add_parser(sub: Any) -> argparse.ArgumentParser:
    t = sub.add_parser("topology", help="write the topology file of a one-switch deployment (docs/deploy.md)",
                       description=__doc__.split("\n\n")[0] if __doc__ else None)
    t.add_argument("--output", "-o", default="-", metavar="FILE",
                   help="where to write the JSON (default: standard output)")
    t.add_argument("--switch", default="s1", metavar="NAME", help="the switch's name (default %(default)s)")
    t.add_argument("--grpc", required=True, metavar="HOST:PORT",
                   help="the switch's P4Runtime address, as the controller reaches it")
    t.add_argument("--device-id", type=int, default=0, metavar="N", help="P4Runtime device id (default 0)")
    t.add_argument("--thrift-port", type=int, default=None, metavar="PORT",
                   help="the switch's Thrift port (simple_switch_grpc's registers; default: none)")
    t.add_argument("--service-ip", default=SERVICE_IP, metavar="IP",
                   help="the aggregation service address the switch owns, in the hosts' subnet "
                        "(default %(default)s)")
    t.add_argument("--service-mac", default=SERVICE_MAC, metavar="MAC",
                   help="the MAC the switch answers ARP for the service address with (default %(default)s)")
    t.add_argument("--host", action="append", default=[], metavar="NAME=IP,MAC,PORT[,API_SOURCE]",
                   help="a worker host: data-plane IP and MAC, its switch port, and optionally the address its "
                        "job-API calls come from (its management address); repeat per host")
    return t


def add_create_job_parser(sub: Any) -> argparse.ArgumentParser:
    c = sub.add_parser("create-job", help="create a job on a running controller and hand out its credential",
                       description="Create a job through the job API; its credential (shown once) goes to "
                                   "--credential-file (mode 0600), else to standard output.")
    c.add_argument("name", metavar="NAME", help="the job's name")
    c.add_argument("--workers", type=int, required=True, metavar="N", help="number of workers")
    c.add_argument("--mode", choices=["dense", "sparse"], default=None, help="default: the controller's")
    c.add_argument("--slots", type=int, default=None, metavar="S", help="default: the controller's")
    c.add_argument("--api-addr", required=True, metavar="HOST:PORT", help="the controller's job API")
    c.add_argument("--credential-file", default=None, metavar="FILE",
                   help="write the job credential here (created 0600; an existing file is refused)")
    return c


def cmd_create_job(args: argparse.Namespace) -> int:
    from p4reduce.protocol.job_api import JobApiClient, JobApiError
    try:
        job = JobApiClient(args.api_addr).create(args.name, args.workers, args.mode, slots=args.slots)
    except JobApiError as e:
        print(f"p4reduce-controller create-job: error: {e}", file=sys.stderr)
        return 1
    credential = job.get("credential")
    if not credential:
        print(f"p4reduce-controller create-job: error: job {args.name!r} exists already; its credential was "
              "given to whoever created it", file=sys.stderr)
        return 1
    if args.credential_file:
        try:
            fd = os.open(args.credential_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            print(f"p4reduce-controller create-job: error: argument --credential-file: {e.strerror}: "
                  f"{args.credential_file} (the job {args.name!r} was created; its credential is lost: "
                  "delete the job with the admin credential and create it again)", file=sys.stderr)
            return 1
        with os.fdopen(fd, "w") as out:
            out.write(credential + "\n")
        print(f"job {args.name}: {job.get('workers')} workers, {job.get('mode')}; credential in "
              f"{args.credential_file}", file=sys.stderr)
    else:
        print(credential)
    return 0


def cmd_topology(args: argparse.Namespace) -> int:
    """Write the file; 2 with one line naming the argument on a bad value."""
    try:
        if not 0 <= args.device_id < 2**64:
            raise ArgumentError("--device-id", f"{args.device_id}: expected 0..2^64-1")
        if args.thrift_port is not None and not 0 < args.thrift_port < 65536:
            raise ArgumentError("--thrift-port", f"{args.thrift_port}: expected 1..65535")
        data = description(args)
        text = json.dumps(data, indent=2) + "\n"
        if args.output == "-":
            sys.stdout.write(text)
        else:
            _write(args.output, text)
            print(f"wrote {args.output}: switch {args.switch}, {len(data['hosts'])} hosts, service "
                  f"{data['service']['ip']} at {data['service']['mac']}", file=sys.stderr)
    except ArgumentError as e:
        print(f"p4reduce-controller topology: error: {e}", file=sys.stderr)
        return 2
    except topo.TopologyError as e:  # a combination the reader refuses that the checks above missed
        print(f"p4reduce-controller topology: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"p4reduce-controller topology: error: argument --output: {e.strerror}: {args.output}",
              file=sys.stderr)
        return 2
    return 0
