"""Who may change a job: job credentials, the admin credential, and the caller of one job-API request.

Creating a job returns its *job credential*, a bearer secret; joining, heartbeats, leaving and
ending the job need it, or the *admin credential* that opens every job (docs/job-api.md, "Security
model"). The controller keeps only a credential's SHA-256, so the digest can travel with the job
(the jobs-table entry's metadata, the state file) and a restarted controller still recognises the
credential without ever having stored it. The job's *wire token* (`new_wire_token`) is another
secret: the data plane's, in every packet header.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from p4reduce.protocol.credentials import new_credential

__all__ = ["TRUSTED", "Caller", "credential_digest", "digest_matches", "new_credential", "new_wire_token"]


def new_wire_token() -> int:
    """A job's wire token: the 32-bit secret in the p4reduce header (docs/protocol.md section 10);
    never 0, the value of packets built without one."""
    return secrets.randbelow(0xFFFFFFFF) + 1


def credential_digest(credential: str) -> str:
    """What the controller keeps of a credential: its SHA-256, hex."""
    return hashlib.sha256(credential.encode()).hexdigest()


def digest_matches(credential: str | None, digest: str | None) -> bool:
    """Constant-time check of a presented credential against a stored digest."""
    if not credential or not digest:
        return False
    return hmac.compare_digest(credential_digest(credential), digest)


@dataclass(frozen=True)
class Caller:
    """What one request presented: a credential (or none), and whether it is the admin's."""
    credential: str | None = None
    admin: bool = False

    def may_change(self, job_credential_digest: str | None) -> bool:
        return self.admin or digest_matches(self.credential, job_credential_digest)


TRUSTED = Caller(admin=True)     # in-process callers: the controller itself, tests, tools
