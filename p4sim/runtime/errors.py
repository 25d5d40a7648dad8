"""P4Runtime errors: one exception type carrying a gRPC status code and a message naming the object.

Every module of the service raises `P4RuntimeError`; the servicer turns it into a gRPC status
(for Write: one p4.v1.Error per update inside google.rpc.Status details, as the spec requires).
"""
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

P = ParamSpec("P")
R = TypeVar("R")


class P4RuntimeError(Exception):
    """A request failed with a canonical gRPC code and a human-readable message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self):
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, message)


def out_of_range(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE, message)


def failed_precondition(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, message)


def permission_denied(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, message)


def unimplemented(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, message)


def resource_exhausted(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED, message)


def aborted_error(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.ABORTED, message)


def internal(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INTERNAL, message)


def rpc_code(code: grpc.StatusCode) -> int:
    """The google.rpc.Code number of a grpc.StatusCode."""
    return code.value[0]


# The status travels in trailing metadata (grpc-status-details-bin, base64: 4/3 of its size, and
# grpc-message), and gRPC clients by default read at most 8 KiB of metadata: the details are kept
# within DETAILS_BUDGET bytes and each per-update message within ERROR_MESSAGE_LIMIT characters.
DETAILS_BUDGET = 4096
ERROR_MESSAGE_LIMIT = 300


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def write_status(results: list[P4RuntimeError | None]) -> status_pb2.Status:
    """google.rpc.Status for a failed Write batch: code UNKNOWN, one p4.v1.Error per update, in
    update order, as the spec asks, for as many updates as fit in what a default gRPC client can
    read; the message then says how many updates (and failures) are not listed, and the first
    failure among them.

    `results` holds None (the update succeeded) or a P4RuntimeError, in update order.
    """
    status = status_pb2.Status(code=code_pb2.UNKNOWN)
    size = 0
    for result in results:
        error = p4runtime_pb2.Error()
        if result is None:
            error.canonical_code = code_pb2.OK
        else:
            error.canonical_code = rpc_code(result.code)
            error.message = _cut(result.message, ERROR_MESSAGE_LIMIT)
        detail = any_pb2.Any()
        detail.Pack(error)
        cost = detail.ByteSize() + 4          # + the field's tag and length
        if size + cost > DETAILS_BUDGET:
            break
        status.details.append(detail)
        size += cost
    listed = len(status.details)
    failed = sum(r is not None for r in results)
    if listed == len(results):
        status.message = "Write failure."
        return status
    rest = results[listed:]
    first = next((i for i, r in enumerate(rest, listed) if r is not None), None)
    status.message = _cut(
        f"Write failure: {failed} of {len(results)} updates failed; details list updates 0..{listed - 1}, "
        f"{len(rest)} more are not listed ({sum(r is not None for r in rest)} of them failed"
        + (f", the first: update {first}: {results[first]}" if first is not None else "") + ")",
        2 * ERROR_MESSAGE_LIMIT)
    return status


def abort_with_status(context: grpc.ServicerContext, status: status_pb2.Status) -> None:
    """End an RPC with a rich status (details travel in grpc-status-details-bin)."""
    context.abort_with_status(_RichStatus(status))


class _RichStatus(grpc.Status):
    """grpc.Status built from a google.rpc.Status, as grpcio-status would build it."""

    def __init__(self, status: status_pb2.Status) -> None:
        self.code = grpc.StatusCode.UNKNOWN
        for candidate in grpc.StatusCode:
            if candidate.value[0] == status.code:
                self.code = candidate
        self.details = status.message
        self.trailing_metadata = (("grpc-status-details-bin", status.SerializeToString()),)


def call_engine(what: str, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run an engine method; its ValueError (EngineError) becomes INVALID_ARGUMENT naming `what`,
    any other failure INTERNAL, so an engine problem never escapes as a Python traceback."""
    try:
        return fn(*args, **kwargs)
    except P4RuntimeError:
        raise
    except (ValueError, KeyError, IndexError) as exc:
        text = str(exc)
        code_name = getattr(exc, "code", None)
        if isinstance(code_name, str) and hasattr(grpc.StatusCode, code_name):
            raise P4RuntimeError(getattr(grpc.StatusCode, code_name), f"{what}: {text}") from None
        if "full" in text.lower():
            raise resource_exhausted(f"{what}: {text}") from None
        raise invalid(f"{what}: {text}") from None
    except Exception as exc:
        raise internal(f"{what}: engine failure {type(exc).__name__}: {exc}") from None
