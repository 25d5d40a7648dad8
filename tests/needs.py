"""What a test needs from the machine: skipped off CI when missing, a failure in CI (where a skip
would hide a test that must run: CI installs everything through make setup)."""
import importlib
import os
from types import ModuleType

import pytest


def module(name: str) -> ModuleType:
    """`name` imported; off CI a missing module skips the test, in CI it fails it."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


def missing(reason: str) -> None:
    """Something the test needs is not here: skip off CI, fail in CI."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run this test for real)")
    pytest.skip(reason)
