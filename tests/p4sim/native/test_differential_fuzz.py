"""The native backend answers exactly as the Python engine on every example, test and reference
program: 100,000 random and mutated packets per program (P4SIM_FUZZ_PACKETS to change it), with
identical outputs, registers and counters (tests/p4sim/native/fuzz.py).  Once more under
AddressSanitizer and UBSan, in a subprocess, so memory errors and undefined behaviour in the
generated C or the runtime fail the test instead of passing silently."""
import os
import subprocess
import sys

import pytest

from p4sim.engine.native import toolchain

from . import fuzz

PACKETS = int(os.environ.get("P4SIM_FUZZ_PACKETS", "100000"))
ASAN_PACKETS = int(os.environ.get("P4SIM_FUZZ_ASAN_PACKETS", "20000"))


@pytest.mark.parametrize("name", fuzz.program_names())
def test_native_agrees_with_the_python_engine(name):
    program, case = fuzz.load(name)
    stats = fuzz.fuzz_program(name, program, case, PACKETS, seed="ci")
    assert stats["received"] == PACKETS
    assert stats["internal_errors"] == 0


def _sanitizer_runtime():
    cc = toolchain.compiler()
    if cc is None:
        pytest.fail("no C compiler: `make setup` installs gcc")
    path = subprocess.run([cc[0], "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        pytest.fail(f"{cc[0]} has no AddressSanitizer runtime (libasan): install gcc's libasan")
    return path


def test_fuzz_under_address_sanitizer_and_ubsan(tmp_path):
    env = dict(os.environ)
    env.update({
        "LD_PRELOAD": _sanitizer_runtime(),
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "P4SIM_NATIVE_CFLAGS": "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g",
        "P4SIM_CACHE_DIR": str(tmp_path / "cache"),
    })
    proc = subprocess.run([sys.executable, str(fuzz.__file__), "--packets", str(ASAN_PACKETS), "--seed", "asan"],
                          cwd=fuzz.REPO, env=env, capture_output=True, text=True, timeout=1200)
    report = (proc.stdout[-3000:] + proc.stderr[-6000:])
    assert proc.returncode == 0, report
    assert "ERROR: AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr, report
    assert "all programs:" in proc.stdout, report
