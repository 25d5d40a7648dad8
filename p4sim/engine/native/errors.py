"""Why the native backend did not take a program: the selector falls back to the Python engine."""


class NativeUnsupported(Exception):
    """The program uses something the C generator does not handle (the message says what)."""


class NativeBuildError(Exception):
    """No usable C compiler, or compiling/loading the generated code failed."""
