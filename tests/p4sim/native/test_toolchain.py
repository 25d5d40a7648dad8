"""The compiled-program cache: private to the user, never loaded from a path others can write,
and reused for a program already compiled."""
import os
import stat

import pytest

from p4sim.engine.native import toolchain
from p4sim.engine.native.switch import NativeSwitch

from .test_batch_api import program


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """cache_dir() re-evaluated under the test's environment."""
    toolchain.cache_dir.cache_clear()
    toolchain._runtime_for.cache_clear()
    yield tmp_path
    toolchain.cache_dir.cache_clear()
    toolchain._runtime_for.cache_clear()


def test_cache_is_created_private_and_reused(monkeypatch, fresh_cache):
    root = fresh_cache / "home"
    root.mkdir(mode=0o755)
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(root / "cache"))
    assert toolchain.cache_dir() == str(root / "cache")
    assert stat.S_IMODE(os.stat(root / "cache").st_mode) == 0o700
    NativeSwitch(program())
    objects = sorted(p.name for p in (root / "cache").glob("prog-*.so"))
    assert len(objects) == 1
    stamp = os.stat(root / "cache" / objects[0]).st_mtime_ns
    NativeSwitch(program())  # same program: loaded from the cache, not rebuilt
    assert sorted(p.name for p in (root / "cache").glob("prog-*.so")) == objects
    assert os.stat(root / "cache" / objects[0]).st_mtime_ns == stamp


@pytest.mark.parametrize("problem", ["group_readable", "world_writable_parent"])
def test_an_unsafe_cache_is_not_used(monkeypatch, fresh_cache, caplog, problem):
    parent = fresh_cache / "shared"
    parent.mkdir()
    cache = parent / "cache"
    cache.mkdir(mode=0o700)
    if problem == "group_readable":
        os.chmod(cache, 0o750)
    else:
        os.chmod(parent, 0o777)  # anyone could swap the cache for their own directory
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(cache))
    chosen = toolchain.cache_dir()
    assert chosen != str(cache)
    assert stat.S_IMODE(os.stat(chosen).st_mode) == 0o700 and os.stat(chosen).st_uid == os.geteuid()
    assert any("not private" in r.getMessage() for r in caplog.records)
    sw = NativeSwitch(program())  # still works, from the private temporary directory
    assert sw.process_batch([(1, b"\x09\x00")]) == [[]]


def test_a_tampered_object_is_rebuilt_not_loaded(monkeypatch, fresh_cache):
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(fresh_cache / "c"))
    NativeSwitch(program())
    [so] = (fresh_cache / "c").glob("prog-*.so")
    os.chmod(so, 0o766)  # writable by others: must not be trusted
    NativeSwitch(program())
    assert stat.S_IMODE(os.stat(so).st_mode) == 0o700
