"""Shared test configuration.

Tests marked `root` need root (network namespaces, veth, Mininet). On a developer machine without
root they skip; in CI (CI=true) a skipped root test is a failure, because CI must run them for real.
"""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
SHARED_REFERENCE = REPO.parent / "shared" / "p4-reference"


@pytest.fixture(autouse=True)
def _root_tests_need_root(request):
    """Skip root tests off-CI without root; fail them in CI, where skipping would hide them."""
    if request.node.get_closest_marker("root") and os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("root test in CI without root: CI must run network tests for real")
        pytest.skip("needs root (namespaces/veth/Mininet)")


@pytest.fixture(scope="session")
def reference_dir():
    """../shared/p4-reference: ground truth from real p4c/BMv2 (absent in a user's clone)."""
    if not SHARED_REFERENCE.is_dir():
        pytest.skip(f"{SHARED_REFERENCE} not present (ground truth from real p4c/BMv2 lives there in CI)")
    return SHARED_REFERENCE
