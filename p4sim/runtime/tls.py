"""TLS for the P4Runtime server, with simple_switch_grpc's options and their meaning:

    --grpc-server-ssl               serve gRPC over TLS (needs --grpc-server-cert and --grpc-server-key)
    --grpc-server-cert FILE         the server's certificate chain (PEM)
    --grpc-server-key FILE          the server's private key (PEM)
    --grpc-server-cacert FILE       the CA certificate(s) client certificates are verified against
    --grpc-server-with-client-auth  require a client certificate signed by that CA: without one the
                                    TLS handshake fails, so such a client cannot open a stream, read
                                    or write

As with simple_switch_grpc, certificate options without --grpc-server-ssl are ignored with a
warning (BMv2's wording differs). p4sim refuses --grpc-server-with-client-auth without
--grpc-server-cacert (there would be nothing to verify against; gRPC itself refuses it too).
Files are read once, at startup; each problem names the option and the file.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import grpc

# a PEM file larger than this is not a certificate or a key
MAX_PEM_BYTES = 1 << 20


class TlsConfigError(Exception):
    """A TLS option cannot be used; the message names the option and the file."""


@dataclass(frozen=True)
class TlsOptions:
    """The PEM contents the gRPC server is started with."""
    cert_chain: bytes
    private_key: bytes
    root_certs: bytes | None = None
    client_auth: bool = False

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.private_key, self.cert_chain)],
                                           root_certificates=self.root_certs,
                                           require_client_auth=self.client_auth)


def read_pem(option: str, path: str, marker: bytes) -> bytes:
    """The PEM file's bytes; TlsConfigError naming `option` if it cannot be read or holds no
    `marker` block (b"CERTIFICATE", b"PRIVATE KEY")."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TlsConfigError(f"{option} {path}: cannot open ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TlsConfigError(f"{option} {path}: not a regular file")
        if st.st_size > MAX_PEM_BYTES:
            raise TlsConfigError(f"{option} {path}: {st.st_size} bytes, larger than a PEM file can be")
        data = os.read(fd, MAX_PEM_BYTES + 1)
    except OSError as exc:
        raise TlsConfigError(f"{option} {path}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    if b"-----BEGIN " not in data or marker not in data:
        raise TlsConfigError(f"{option} {path}: no PEM {marker.decode()} in the file")
    return data


def tls_options(ssl: bool, cert: str | None, key: str | None, cacert: str | None,
                client_auth: bool) -> tuple[TlsOptions | None, list[str]]:
    """(the options, or None without --grpc-server-ssl; warnings to print), as simple_switch_grpc
    reads its command line. Raises TlsConfigError on a missing or unusable file."""
    warnings = []
    if not ssl:
        if cert or key or cacert:
            warnings.append("TLS is off (no --grpc-server-ssl): the given certificate and key files are ignored")
        if client_auth:
            warnings.append("TLS is off (no --grpc-server-ssl): --grpc-server-with-client-auth has no effect")
        return None, warnings
    if not cert:
        raise TlsConfigError("--grpc-server-ssl needs --grpc-server-cert (the server's certificate)")
    if not key:
        raise TlsConfigError("--grpc-server-ssl needs --grpc-server-key (the server's private key)")
    if client_auth and not cacert:
        raise TlsConfigError("--grpc-server-with-client-auth needs --grpc-server-cacert (the CA that "
                             "signs client certificates)")
    return TlsOptions(read_pem("--grpc-server-cert", cert, b"CERTIFICATE"),
                      read_pem("--grpc-server-key", key, b"PRIVATE KEY"),
                      read_pem("--grpc-server-cacert", cacert, b"CERTIFICATE") if cacert else None,
                      client_auth), warnings
