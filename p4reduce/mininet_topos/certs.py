"""A private CA and the certificates of one run, so that only the controller talks to the switches.

`make run`, `make demo` and the benchmarks start every switch with simple_switch_grpc's TLS options
and client authentication (`--grpc-server-ssl --grpc-server-cert --grpc-server-key
--grpc-server-cacert --grpc-server-with-client-auth`) and the controller with the client side
(`serve --tls-ca --tls-cert --tls-key`): a process without the controller's key can then neither
read the switch (wire tokens included) nor write to it nor arbitrate (docs/p4sim-security.md).

Made per run with the openssl command line, in `RUN_DIR/tls/` (mode 0700, every file 0600): the
CA's certificate `ca.pem`, the switches' certificate and key `switch.pem`/`switch.key`
(subjectAltName IP:127.0.0.1 and DNS:localhost, where the switches listen), the controller's
`controller.pem`/`controller.key`. The CA's key is deleted once both are signed, so nobody can
issue another certificate this run's switches accept.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path


class CertificateError(RuntimeError):
    """The certificates could not be made; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class RunCertificates:
    ca: Path
    switch_cert: Path
    switch_key: Path
    client_cert: Path
    client_key: Path

    def switch_args(self) -> list[str]:
        """simple_switch_grpc's (and p4sim-switch's) target options, after `--`."""
        return ["--grpc-server-ssl", "--grpc-server-cert", str(self.switch_cert), "--grpc-server-key",
                str(self.switch_key), "--grpc-server-cacert", str(self.ca), "--grpc-server-with-client-auth"]

    def controller_args(self) -> list[str]:
        """`controller serve`'s client side."""
        return ["--tls-ca", str(self.ca), "--tls-cert", str(self.client_cert), "--tls-key", str(self.client_key)]

    def describe(self) -> dict[str, str]:
        """The topology description's `p4runtime_tls`: what the inspection tools connect with."""
        return {"ca": str(self.ca), "cert": str(self.client_cert), "key": str(self.client_key)}


def _openssl(openssl: str, directory: Path, *args: str) -> None:
    try:
        proc = subprocess.run([openssl, *args], cwd=directory, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CertificateError(f"openssl {args[0]}: {e}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise CertificateError(f"openssl {args[0]} failed (status {proc.returncode}): {' / '.join(tail)}")


def make_run_certificates(run_dir: str | Path) -> RunCertificates:
    """A fresh CA and the switch and controller certificates in `run_dir`/tls (replacing those of a
    previous run)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CertificateError("the openssl command is not installed (Debian package 'openssl'): it makes the "
                               "certificates that keep other processes off the switches' P4Runtime port; "
                               "install it, or run with --no-tls (then any local process can reach the switches)")
    directory = Path(run_dir) / "tls"
    if directory.is_symlink():
        raise CertificateError(f"{directory}: is a symbolic link; remove it")
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(mode=0o700, parents=True)
    os.chmod(directory, 0o700)
    old_umask = os.umask(0o077)      # every file private from its creation
    try:
        ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
        _openssl(openssl, directory, "req", "-x509", *ec, "-subj", "/CN=p4reduce run CA", "-days", "30",
                 "-keyout", "ca.key", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        for name, ext in (("switch", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"),
                          ("controller", "extendedKeyUsage=clientAuth")):
            _openssl(openssl, directory, "req", *ec, "-subj", f"/CN=p4reduce {name}", "-keyout", f"{name}.key",
                     "-out", f"{name}.csr")
            (directory / f"{name}.ext").write_text(ext + "\n")
            _openssl(openssl, directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                     "-CAcreateserial", "-days", "30", "-out", f"{name}.pem", "-extfile", f"{name}.ext")
    finally:
        os.umask(old_umask)
    for leftover in ("ca.key", "ca.srl", "switch.csr", "switch.ext", "controller.csr", "controller.ext"):
        (directory / leftover).unlink(missing_ok=True)
    for path in directory.iterdir():
        path.chmod(0o600)
    return RunCertificates(directory / "ca.pem", directory / "switch.pem", directory / "switch.key",
                           directory / "controller.pem", directory / "controller.key")
