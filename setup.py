"""Builds the worker's C loop as the extension module p4reduce.worker._wloop (everything else is
declared in pyproject.toml).

Where no C compiler works, the install goes on without it and says so in one line; the worker
then runs its Python loop (p4reduce.worker.native_loop says why, once, when a reducer starts).
"""
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = "p4reduce/worker/native"


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed compile into one line instead of a failed install."""

    def run(self):
        try:
            super().run()
        except Exception as exc:   # no compiler (CCompilerError, DistutilsPlatformError, OSError)
            self._skipped(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skipped(exc)

    @staticmethod
    def _skipped(exc):
        why = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        print(f"p4reduce: the native worker loop was not built ({why}); workers will use the Python loop",
              file=sys.stderr)


setup(
    ext_modules=[Extension(
        "p4reduce.worker._wloop",
        sources=[f"{NATIVE}/wloop.c", f"{NATIVE}/wloop_module.c"],
        depends=[f"{NATIVE}/wloop_wire.h"],
        include_dirs=[NATIVE],
        extra_compile_args=["-O2", "-std=gnu11", "-fno-strict-aliasing"],
        libraries=["m"],
    )],
    cmdclass={"build_ext": OptionalBuildExt},
)
