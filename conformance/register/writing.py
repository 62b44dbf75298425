"""Writing the site safely: the new register is made in a folder of its own beside `--out` and
swapped in whole (one rename, atomic where Linux's renameat2 can exchange the two), so that a
failure part-way leaves the last good register in place; nothing is written through a symbolic
link; and a folder is replaced only when it is provably this register's own: empty, or holding
its log (whose chain checks) and only the files a register writes.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from conformance.register import audit, history, log

# What a register writes, and nothing else: a folder holding anything more is not ours.
OURS = re.compile(
    r"index\.html|style\.css|register\.json|log\.jsonl|checkpoint\.intoto\.jsonl|body\.pub\.pem|"
    + "|".join(place.pattern for place in history.PLACES.values())
)
FOLDERS = {"certificates", "badges", "packages", "keys", "summaries"}
RENAME_EXCHANGE = 2
AT_FDCWD = -100


class Unwritable(Exception):
    """A SITE_DIR the register will not write to; one line."""


def foreign(out: Path) -> str | None:
    """What in `out` a register did not write (a symbolic link first of all); None if nothing."""
    for folder, subfolders, names in os.walk(out):
        for name in sorted(subfolders + names):
            path = Path(folder) / name
            relative = path.relative_to(out).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                return f"{relative} is a symbolic link"
            if stat.S_ISDIR(mode):
                if relative not in FOLDERS and not re.fullmatch(r"badges/[a-z0-9-]+", relative):
                    return f"{relative}/ is not a folder a register writes"
            elif not stat.S_ISREG(mode) or not OURS.fullmatch(relative):
                return f"{relative} is not a file a register writes"
    return None


def prepare(out: Path, body_key=None) -> history.History:
    """The history `out` holds: none where it is new or empty; else its own, proven: its log's
    chain, the register.json that goes with it, every file it names there, and, where the body
    signs (`body_key`, its public key) and the site holds a checkpoint, the checkpoint."""
    if out.is_symlink():
        raise Unwritable(f"--out {out}: a symbolic link; give the folder itself")
    if out.exists() and not out.is_dir():
        raise Unwritable(f"--out {out}: not a folder")
    if not out.exists() or not any(out.iterdir()):
        return history.History([], [], log.Log([]))
    if not (out / log.NAME).is_file():
        raise Unwritable(
            f"--out {out}: holds files but no {log.NAME} of this register; give an empty or new "
            "folder, or a register's own"
        )
    problem = foreign(out)
    if problem:
        raise Unwritable(f"--out {out}: {problem}; the register replaces only its own folder")
    try:
        found = history.History.read(out)
    except (log.Broken, history.Unusable) as error:
        raise Unwritable(f"--out {out}: {error}") from None
    for record in found.everything():
        for name in ("package", "key", "page", "summary"):
            if record[name] is not None and not (out / record[name]).is_file():
                raise Unwritable(f"--out {out}: {record[name]}, named in register.json, is missing")
    if body_key is not None and (out / audit.CHECKPOINT).is_file():
        try:
            audit.checkpoint(out, body_key, found.log.lines)
        except audit.Failed as error:
            raise Unwritable(f"--out {out}: not proven the body's: {error}") from None
    return found


def staging(out: Path) -> Path:
    """A new private folder beside `out` (same file system, so that the swap is a rename)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        made = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    except OSError as error:
        raise Unwritable(f"--out {out}: cannot write beside it ({error.strerror})") from None
    for name in FOLDERS:
        (made / name).mkdir()
    return made


def put(path: Path, data: bytes) -> None:
    """A new file, never through a link nor over a file already there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    handle = os.open(path, flags, 0o644)
    with os.fdopen(handle, "wb") as file:
        file.write(data)


def keep(old: Path, new: Path) -> None:
    """A published file of the last register, unchanged (named by its digest): linked, or
    copied where the file system links nothing."""
    if new.exists():
        return
    try:
        os.link(old, new, follow_symlinks=False)
    except OSError:
        shutil.copyfile(old, new, follow_symlinks=False)


def exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux's renameat2 RENAME_EXCHANGE); False where the
    system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    done = renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE)
    return done == 0


def swap(made: Path, out: Path) -> None:
    """`made` becomes `out`; the register it replaces is removed (it was proven ours)."""
    os.chmod(made, 0o755)
    if not out.exists():
        os.rename(made, out)
        return
    if not exchange(made, out):
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, aside / "site")
        os.rename(made, out)
        made = aside
    shutil.rmtree(made)


def discard(made: Path) -> None:
    """The new folder of a run that failed: the last register stays as it was."""
    shutil.rmtree(made, ignore_errors=True)
