"""Bearer credentials of the job API and the file the admin credential lives in (standard library
only, so the controller, the topology tools and worker agents share it).

A credential is 32 random bytes in URL-safe base64. The admin credential's file must be a regular
file of the user who reads it, that nobody else can read or write (mode 0600 or stricter): the
check is made on the opened file (no symlink followed), so it cannot be swapped in between.
(Not the job's wire token: that is the data plane's 32-bit secret, controller/auth.py.)
"""
from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

CREDENTIAL = re.compile(r"[A-Za-z0-9_-]{16,128}")   # what a credential looks like, whole (CREDENTIAL.fullmatch)


class CredentialFileError(ValueError):
    """A credential file that cannot be used; the message names the file and the problem."""


def new_credential() -> str:
    """A fresh bearer credential: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def read_credential_file(path: str | os.PathLike) -> str:
    """The credential in `path`, refused unless the file is private to this user."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise CredentialFileError(f"{path}: no such credential file") from None
    except OSError as e:
        raise CredentialFileError(f"{path}: cannot open the credential file: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CredentialFileError(f"{path}: the credential file is not a regular file")
        if st.st_uid != os.geteuid():
            raise CredentialFileError(f"{path}: the credential file belongs to uid {st.st_uid}, not to "
                                      f"this user ({os.geteuid()})")
        if st.st_mode & 0o077:
            raise CredentialFileError(f"{path}: the credential file has mode {stat.S_IMODE(st.st_mode):04o}, "
                                      f"so others may read or change it (chmod 600 {path})")
        text = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not CREDENTIAL.fullmatch(text):
        raise CredentialFileError(f"{path}: the credential file must hold one credential of 16 to 128 "
                                  f"characters [A-Za-z0-9_-]")
    return text


def write_credential_file(path: str | os.PathLike, credential: str) -> None:
    """Create `path` (mode 0600, never over an existing file; its directory 0700 if made) with
    `credential`."""
    path = Path(path)
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise CredentialFileError(f"{path}: cannot create the credential file: {e.strerror}") from None
    try:
        os.fchmod(fd, 0o600)        # whatever the umask
        os.write(fd, (credential + "\n").encode())
    finally:
        os.close(fd)


def load_or_create_credential_file(path: str | os.PathLike) -> tuple[str, bool]:
    """(credential, created): the credential of an existing private file, or a new one written to
    `path`."""
    try:
        return read_credential_file(path), False
    except CredentialFileError:
        if os.path.lexists(path):
            raise
    credential = new_credential()
    write_credential_file(path, credential)
    return credential, True
