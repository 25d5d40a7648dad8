"""Compiler diagnostics: source positions and the one error type every stage raises.

Messages are printed as ``file:line:col: error: text`` (the format p4c and gcc use), with the
position already mapped back to the original file through cpp's line markers.
"""


class Pos:
    """A position in an original (pre-cpp) source file; line and column count from 1."""

    __slots__ = ("col", "file", "line")

    def __init__(self, file: str, line: int, col: int) -> None:
        self.file, self.line, self.col = file, line, col

    def __repr__(self):
        return f"{self.file}:{self.line}:{self.col}"


class CompileError(Exception):
    """A user-facing compile error, located at a source position when one is known."""

    def __init__(self, message: str, pos: Pos | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos

    def render(self) -> str:
        if self.pos is None:
            return f"error: {self.message}"
        return f"{self.pos.file}:{self.pos.line}:{self.pos.col}: error: {self.message}"


class Warning_:
    """A compiler warning: where, what, and its kind (p4c's diagnostic names: unused, overflow,
    unsupported), which --Wdisable=KIND silences and --Werror turns into an error."""

    __slots__ = ("kind", "message", "pos")

    def __init__(self, kind: str, message: str, pos: Pos | None = None) -> None:
        self.kind, self.message, self.pos = kind, message, pos

    def render(self, as_error: bool = False) -> str:
        level = "error" if as_error else "warning"
        if self.pos is None:
            return f"{level}: {self.message}"
        return f"{self.pos.file}:{self.pos.line}:{self.pos.col}: {level}: {self.message}"

    def key(self) -> tuple:
        return (self.kind, self.message, None if self.pos is None else (self.pos.file, self.pos.line, self.pos.col))


class Unsupported(CompileError):
    """A valid P4_16 construct that p4sim-compile's subset does not cover."""

    def __init__(self, what: str, pos: Pos | None = None) -> None:
        super().__init__(f"{what} is not supported by p4sim-compile (outside its P4_16 subset; "
                         f"see docs/p4-subset.md)", pos)

