"""Errors raised by the engine: one base class the runtime maps to a status code."""


class EngineError(ValueError):
    """Bad name or value given to the engine; the message names the object and field.

    `code` is the P4Runtime-style status name the runtime should answer with.
    """

    code = "INVALID_ARGUMENT"


class NotFoundError(EngineError):
    """The named entry, handle or group does not exist."""

    code = "NOT_FOUND"


class AlreadyExistsError(EngineError):
    """An entry with the same match key (and priority) is already installed."""

    code = "ALREADY_EXISTS"


class ResourceExhaustedError(EngineError):
    """The table is full (max_size reached)."""

    code = "RESOURCE_EXHAUSTED"


class ConstViolationError(EngineError):
    """The program declares this table or default action constant."""

    code = "PERMISSION_DENIED"


class ProgramError(EngineError):
    """The BMv2 JSON itself is malformed or uses something the engine does not support."""
