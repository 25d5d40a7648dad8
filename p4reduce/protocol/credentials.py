"""Bearer credentials of the job API and the file the admin credential lives in (standard library
only, so the controller, the topology tools and worker agents share it).

A credential is 32 random bytes in URL-safe base64. The admin credential's file must be a regular
file of the user who reads it, that nobody else can read or write (mode 0600 or stricter): the
check is made on the opened file (no symlink followed), so it cannot be swapped in between.
(Not the job's wire token: that is the data plane's 32-bit secret, controller/auth.py.)
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from pathlib import Path

CREDENTIAL = re.compile(r"[A-Za-z0-9_-]{16,128}")   # what a credential looks like, whole (CREDENTIAL.fullmatch)


class CredentialFileError(ValueError):
    """A credential file that cannot be used; the message names the file and the problem."""


def credential_problem(credential: str) -> str | None:
    """Why `credential` cannot be sent in an HTTP header (None when it can): it must be visible
    ASCII, without spaces (what a credential looks like, CREDENTIAL, is one such string)."""
    if not isinstance(credential, str):
        return f"a credential is text, not {type(credential).__name__}"
    if not credential:
        return "the credential is empty"
    for i, c in enumerate(credential):
        if not "!" <= c <= "~":
            shown = f"{c!r}" if c.isprintable() and not c.isspace() else f"U+{ord(c):04X}"
            return (f"the credential has {shown} at position {i + 1}: a credential is visible ASCII only "
                    f"(as issued: 43 characters of [A-Za-z0-9_-]); was it copied whole?")
    return None


def new_credential() -> str:
    """A fresh bearer credential: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def read_credential_file(path: str | os.PathLike) -> str:
    """The credential in `path`, refused unless the file is private to this user. The file is
    opened without following a symlink and without blocking (a FIFO or a device at the path must
    not hang the reader), and its type, owner and mode are checked on that descriptor before a
    byte is read."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CredentialFileError(f"{path}: no such credential file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CredentialFileError(f"{path}: cannot open the credential file: it is a symbolic link "
                                      f"(give the file itself)") from None
        raise CredentialFileError(f"{path}: cannot open the credential file: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CredentialFileError(f"{path}: the credential file is not a regular file "
                                      f"({_kind(st.st_mode)})")
        if st.st_uid != os.geteuid():
            raise CredentialFileError(f"{path}: the credential file belongs to uid {st.st_uid}, not to "
                                      f"this user ({os.geteuid()})")
        if st.st_mode & 0o077:
            raise CredentialFileError(f"{path}: the credential file has mode {stat.S_IMODE(st.st_mode):04o}, "
                                      f"so others may read or change it (chmod 600 {path})")
        try:
            raw = os.read(fd, 4096)
        except OSError as e:
            raise CredentialFileError(f"{path}: cannot read the credential file: {e.strerror}") from None
        text = raw.decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not CREDENTIAL.fullmatch(text):
        raise CredentialFileError(f"{path}: the credential file must hold one credential of 16 to 128 "
                                  f"characters [A-Za-z0-9_-]")
    return text


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def _check_directory(directory: Path) -> int:
    """An open descriptor of `directory`, refused when others could add or replace files in it
    (writable by its group or by everyone) or when it belongs to another user than this one or root."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise CredentialFileError(f"{directory}: cannot open the credential file's directory: {e.strerror}") from None
    st = os.fstat(fd)
    problem = None
    if st.st_uid not in (os.geteuid(), 0):
        problem = f"belongs to uid {st.st_uid}, not to this user ({os.geteuid()}) or root"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = (f"has mode {stat.S_IMODE(st.st_mode):04o}: others may write in it, and so replace or "
                   f"watch the credential file")
    if problem is not None:
        os.close(fd)
        raise CredentialFileError(f"{directory}: will not create a credential file in this directory: it "
                                  f"{problem} (choose a private directory, e.g. one of mode 0700)")
    return fd


def write_credential_file(path: str | os.PathLike, credential: str) -> None:
    """Create `path` (mode 0600, never over an existing file; its directory 0700 if made) with
    `credential`. The directory must not be writable by others (_check_directory)."""
    path = Path(path)
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True)
    except OSError as e:
        raise CredentialFileError(f"{path}: cannot create the credential file's directory: {e.strerror}") from None
    dir_fd = _check_directory(path.parent)
    try:
        fd = os.open(path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dir_fd)
    except OSError as e:
        raise CredentialFileError(f"{path}: cannot create the credential file: {e.strerror}") from None
    finally:
        os.close(dir_fd)
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
