"""Reading a file someone else gave (a keyring, a key, a policy, an upload) only where it is a
regular file, and only so much of it: a FIFO would block the reader forever, a device never
end. The file is opened without blocking and looked at (fstat) before a byte is read."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotRegular(OSError):
    """A FIFO, a device, a socket or a folder where a file was expected."""


def read(path: Path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of `path` (one more than allowed shows it is too large);
    OSError where it cannot be read, NotRegular where it is not a regular file."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file", str(path))
        return handle.read(limit + 1)


def is_regular(path: Path) -> bool:
    """A regular file itself, not a link to one (lstat)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False
