"""p4sim's native data plane: BMv2 JSON -> C at pipeline load, compiled with the system C
compiler, cached by content, loaded with ctypes; the same in-process API as the Python engine.

Modules: layout (the packet state as a C struct), cexpr/cstmt (expressions and primitives),
cheaders/cparser/ccalc/cpipeline (header codecs and deparser, parser, checksums and hashes,
actions and controls), cgen (one program's C), toolchain (compiler and cache), binding (the
runtime's C API for ctypes), switch (NativeSwitch), backend (choosing native or Python).
The C runtime shipped with the package is in runtime/ (tables, replication, hashes, buffers,
the traffic manager template, the port loop).
"""
from .backend import Switch, default_backend, engine_label
from .errors import NativeBuildError, NativeUnsupported

__all__ = ["NativeBuildError", "NativeUnsupported", "Switch", "default_backend", "engine_label"]
