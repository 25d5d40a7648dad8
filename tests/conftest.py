"""Shared test configuration.

Tests marked `root` need root (network namespaces, veth, Mininet). On a developer machine without
root they skip; in CI (CI=true) a skipped root test is a failure, because CI must run them for real.
"""
import fcntl
import os
import pathlib
import sys

import needs
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
# ../shared/p4-reference next to the clone; from a git worktree (/work/wt/NAME) one level further up
SHARED_REFERENCE = next((d / "shared" / "p4-reference" for d in (REPO.parent, REPO.parent.parent)
                         if (d / "shared" / "p4-reference").is_dir()), REPO.parent / "shared" / "p4-reference")


_NETWORK_LOCK = pathlib.Path("/run/lock" if os.path.isdir("/run/lock") else "/tmp") / "p4reduce-network-tests.lock"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Under pytest-xdist (`make test` runs two processes), every root test goes to one process
    (`--dist loadgroup`): the networks are built one at a time, as in a one-process run."""
    for item in items:
        if item.get_closest_marker("root"):
            item.add_marker(pytest.mark.xdist_group("network"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """One process with root tests at a time on a machine: Mininet names its switches, hosts and
    links alike in every run (s1, h1, s1-eth1), so two would tear down each other's networks. The
    lock is taken before the first root test's fixtures and held until the process ends."""
    config = item.config
    if getattr(config, "_p4reduce_network_lock", None) is not None or os.geteuid() != 0 \
            or not item.get_closest_marker("root"):
        return
    fd = os.open(_NETWORK_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"\nwaiting for {_NETWORK_LOCK}: another test process runs network tests", file=sys.stderr)
        fcntl.flock(fd, fcntl.LOCK_EX)
    config._p4reduce_network_lock = fd  # kept open (and locked) for the whole process


@pytest.fixture(autouse=True)
def _root_tests_need_root(request):
    """Skip root tests off-CI without root; fail them in CI, where skipping would hide them."""
    if request.node.get_closest_marker("root") and os.geteuid() != 0:
        needs.missing("needs root (namespaces/veth/Mininet)")


@pytest.fixture(params=["native", "python"])
def both_worker_loops(request, monkeypatch):
    """Run a test on both implementations of the worker's loop: the C one (worker/native_loop.py,
    the default) and the Python reference (worker/streaming.py). Use with
    ``pytestmark = pytest.mark.usefixtures("both_worker_loops")``."""
    monkeypatch.setenv("P4REDUCE_WORKER_LOOP", request.param)
    return request.param


@pytest.fixture(scope="session")
def reference_dir():
    """../shared/p4-reference: ground truth from real p4c/BMv2 (absent in a user's clone; in CI its
    absence fails the tests that need it, since skipping would hide them)."""
    if not SHARED_REFERENCE.is_dir():
        needs.missing(f"{SHARED_REFERENCE} not present (ground truth from real p4c/BMv2)")
    return SHARED_REFERENCE
