"""A client's processes, all of them, stopped when its time is up. A kill of the client's process
group misses a child that called `setsid` (a session and group of its own), and a process whose
parent died is handed to init, out of reach. So the client mode makes itself a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`, Linux 3.4): every process a client starts, however it detaches,
stays below the checker, which finds them by their parents in /proc, stops them and reaps them.

Orphans handed to the checker are reaped as they die (`reap_strays`), so that a client cannot
fill the process table with zombies that init would have reaped. Elsewhere than Linux, the
process group is all there is."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Collection

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
FREEZE_ROUNDS = 100  # looks at a tree being stopped: each round finds the children of forks
REAP_SECONDS = 5.0  # killed processes go at once: this bounds only one stuck in the kernel


def become_subreaper() -> bool:
    """Make this process the child subreaper of everything it starts; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_table() -> dict[int, tuple[int, bool]]:
    """Every process's parent and whether it is a zombie, from /proc (empty where there is none)."""
    table = {}
    with contextlib.suppress(OSError), os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                    state, parent = stat.read().rsplit(b")", 1)[1].split()[:2]
            except (OSError, ValueError):
                continue  # gone meanwhile
            table[int(entry.name)] = (int(parent), state == b"Z")
    return table


def descendants(root: int) -> list[int]:
    """The live processes below `root`."""
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (parent, zombie) in process_table().items():
        if not zombie:
            children[parent].append(pid)
    found, waiting = [], [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            found.append(child)
            waiting.append(child)
    return found


def kill_tree(root: int) -> int:
    """SIGKILL every process below `root` (not `root` itself); how many there were. They are
    first stopped, round after round until no new one appears, so that none forks or dies (its
    children would be handed up) while the tree is being read."""
    stopped: set[int] = set()
    for _ in range(FREEZE_ROUNDS):
        found = set(descendants(root))
        if found <= stopped:
            break
        for pid in found - stopped:
            signal_quietly(pid, signal.SIGSTOP)
        stopped |= found
    for pid in stopped:
        signal_quietly(pid, signal.SIGKILL)
    return len(stopped)


def signal_quietly(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def reap_strays(keep: Collection[int]) -> None:
    """Reap the zombies among this process's children but those in `keep` (whose `Popen` waits
    for them itself: reaped here, it would read exit status 0)."""
    me = os.getpid()
    for pid, (parent, zombie) in process_table().items():
        if parent == me and zombie and pid not in keep:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def stop_everything_below() -> int:
    """At the end of a client run: kill whatever the clients left, and reap it all. Only call it
    when no `Popen` of this process is still waited for. How many processes were left."""
    left = kill_tree(os.getpid())
    deadline = time.monotonic() + REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break  # no child left
        if pid == 0:
            time.sleep(0.01)
    return left
