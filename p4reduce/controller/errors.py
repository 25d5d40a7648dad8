"""Errors the controller reports to people and to the job API.

Each error carries a stable machine-readable `code` (used as the job API's error code), an HTTP
status, and optionally the request field it is about, so callers never have to parse messages.
"""
from __future__ import annotations

from typing import Any


class ControllerError(Exception):
    """Base class: a problem the controller can explain (never shown as a traceback)."""

    code = "controller_error"
    http_status = 500

    def __init__(self, message: str, field: str | None = None, code: str | None = None,
                 http_status: int | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.code = code
        if http_status is not None:
            self.http_status = http_status

    def to_json(self) -> dict[str, dict[str, str]]:
        err = {"code": self.code, "message": self.message}
        if self.field is not None:
            err["field"] = self.field
        return {"error": err}


class BadRequest(ControllerError):
    code = "bad_field"
    http_status = 400


class NotFound(ControllerError):
    code = "not_found"
    http_status = 404


class Conflict(ControllerError):
    code = "conflict"
    http_status = 409


class SlotsExhausted(Conflict):
    """The slot pool cannot satisfy an allocation."""

    code = "no_free_slots"


class SwitchError(ControllerError):
    """The switch refused or could not be reached (message carries the P4Runtime status)."""

    code = "switch_unavailable"
    http_status = 503
    grpc_code: Any = None   # the gRPC status of a failed RPC, when that is what failed


class Unauthorized(ControllerError):
    """The request needs a credential it did not present (HTTP 401)."""

    code = "credential_required"
    http_status = 401


class Forbidden(ControllerError):
    """The request presented a credential that does not open this job (HTTP 403)."""

    code = "bad_credential"
    http_status = 403
