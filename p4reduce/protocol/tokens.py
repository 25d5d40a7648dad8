"""Bearer tokens of the job API and the file the admin token lives in (standard library only, so
the controller, the topology tools and worker agents share it).

A token is 32 random bytes in URL-safe base64. The admin token's file must be a regular file of
the user who reads it, that nobody else can read or write (mode 0600 or stricter): the check is
made on the opened file (no symlink followed), so it cannot be swapped in between.
"""
from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")   # what a token looks like, whole (TOKEN.fullmatch)


class TokenFileError(ValueError):
    """A token file that cannot be used; the message names the file and the problem."""


def new_token() -> str:
    """A fresh bearer token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def read_token_file(path: str | os.PathLike) -> str:
    """The token in `path`, refused unless the file is private to this user."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise TokenFileError(f"{path}: no such token file") from None
    except OSError as e:
        raise TokenFileError(f"{path}: cannot open the token file: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TokenFileError(f"{path}: the token file is not a regular file")
        if st.st_uid != os.geteuid():
            raise TokenFileError(f"{path}: the token file belongs to uid {st.st_uid}, not to this "
                                 f"user ({os.geteuid()})")
        if st.st_mode & 0o077:
            raise TokenFileError(f"{path}: the token file has mode {stat.S_IMODE(st.st_mode):04o}, so "
                                 f"others may read or change it (chmod 600 {path})")
        text = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not TOKEN.fullmatch(text):
        raise TokenFileError(f"{path}: the token file must hold one token of 16 to 128 characters "
                             f"[A-Za-z0-9_-]")
    return text


def write_token_file(path: str | os.PathLike, token: str) -> None:
    """Create `path` (mode 0600, never over an existing file; its directory 0700 if made) with `token`."""
    path = Path(path)
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise TokenFileError(f"{path}: cannot create the token file: {e.strerror}") from None
    try:
        os.fchmod(fd, 0o600)        # whatever the umask
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)


def load_or_create_token_file(path: str | os.PathLike) -> tuple[str, bool]:
    """(token, created): the token of an existing private file, or a new one written to `path`."""
    try:
        return read_token_file(path), False
    except TokenFileError:
        if os.path.lexists(path):
            raise
    token = new_token()
    write_token_file(path, token)
    return token, True
