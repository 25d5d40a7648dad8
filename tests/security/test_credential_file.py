"""The admin credential file (issue #24, point 5): its type, owner and mode are checked on a
descriptor opened without blocking, so a FIFO at the path cannot hang `serve`; it is never created
in a directory others may write in."""
import os
import stat
import subprocess
import sys

import pytest

from p4reduce.mininet_topos.ports import free_port
from p4reduce.protocol.credentials import CredentialFileError, load_or_create_credential_file, read_credential_file


def _serve(credential_file, timeout=30):
    """`controller serve --no-switch` with that credential file: (status, stderr); a hang fails."""
    proc = subprocess.run([sys.executable, "-m", "p4reduce.controller", "serve", "--no-switch", "--api-addr",
                           f"127.0.0.1:{free_port()}", "--admin-credential-file", str(credential_file),
                           "--state-file", ""], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stderr


def test_a_fifo_at_the_path_is_refused_at_once(tmp_path):
    fifo = tmp_path / "admin-credential"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(CredentialFileError, match="not a regular file.*FIFO"):
        read_credential_file(fifo)
    status, err = _serve(fifo)          # used to block in open() for ever
    assert status == 1 and "not a regular file (a FIFO)" in err and "Traceback" not in err, err


def test_a_fifo_of_another_user_is_refused_too(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the FIFO to another user")
    fifo = tmp_path / "admin-credential"
    os.mkfifo(fifo, 0o666)
    os.chown(fifo, 65534, 65534)
    status, err = _serve(fifo)
    assert status == 1 and "not a regular file" in err, err


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o722])
def test_not_created_in_a_directory_others_may_write(tmp_path, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    path = shared / "admin-credential"
    with pytest.raises(CredentialFileError, match=r"will not create.*others may write"):
        load_or_create_credential_file(path)
    assert not path.exists()
    status, err = _serve(path)
    assert status == 1 and "will not create a credential file" in err and not path.exists(), err


def test_created_in_a_private_directory(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    path = private / "admin-credential"
    credential, created = load_or_create_credential_file(path)
    assert created and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_credential_file(path) == credential
