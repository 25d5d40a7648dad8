"""Certificates made at test time with the openssl command line (the `cryptography` package is
not a dependency): a CA, a server certificate for 127.0.0.1/localhost, a client certificate the CA
signed, and a client certificate signed by another CA (what a local attacker could make)."""
import pathlib
import shutil
import subprocess

import needs

OPENSSL = shutil.which("openssl")


def _run(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d: pathlib.Path, name: str) -> None:
    _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-subj", f"/CN={name}", "-days", "2", "-keyout", f"{name}.key", "-out", f"{name}.pem",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         cwd=d)


def _leaf(d: pathlib.Path, name: str, ca: str, extensions: str) -> None:
    _run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", f"/CN={name}",
         "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(extensions + "\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
         "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=d)


def make_certificates(d: pathlib.Path) -> pathlib.Path:
    """ca.pem, server.pem/.key, client.pem/.key (signed by ca), rogue.pem/.key (signed by rogue-ca)."""
    if OPENSSL is None:
        needs.missing("the openssl command is not installed (Debian package 'openssl')")
    _ca(d, "ca")
    _ca(d, "rogue-ca")
    _leaf(d, "server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth")
    _leaf(d, "client", "ca", "extendedKeyUsage=clientAuth")
    _leaf(d, "rogue", "rogue-ca", "extendedKeyUsage=clientAuth")
    for key in d.glob("*.key"):
        key.chmod(0o600)
    return d
