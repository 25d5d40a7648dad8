"""Who may change a job: job tokens, the admin token, and the caller of one job-API request.

Creating a job returns its *job token*, a bearer secret; joining, heartbeats, leaving and ending
the job need it, or the *admin token* that opens every job (docs/job-api.md, "Security model").
The controller keeps only a token's SHA-256, so the digest can travel with the job (the jobs-table
entry's metadata, the state file) and a restarted controller still recognises the token without
ever having stored it.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from p4reduce.protocol.tokens import new_token

__all__ = ["TRUSTED", "Caller", "digest_matches", "new_token", "new_wire_token", "token_digest"]


def new_wire_token() -> int:
    """A job's wire token: the 32-bit secret in the p4reduce header (docs/protocol.md section 10);
    never 0, the value of packets built without one."""
    return secrets.randbelow(0xFFFFFFFF) + 1


def token_digest(token: str) -> str:
    """What the controller keeps of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def digest_matches(token: str | None, digest: str | None) -> bool:
    """Constant-time check of a presented token against a stored digest."""
    if not token or not digest:
        return False
    return hmac.compare_digest(token_digest(token), digest)


@dataclass(frozen=True)
class Caller:
    """The credentials one request presented: a token (or none), and whether it is the admin's."""
    token: str | None = None
    admin: bool = False

    def may_change(self, job_token_digest: str | None) -> bool:
        return self.admin or digest_matches(self.token, job_token_digest)


TRUSTED = Caller(admin=True)     # in-process callers: the controller itself, tests, tools
