"""SIGTERM (a CI job's time limit) and SIGINT (Ctrl-C) end a run the same way: the tests stop,
the run sends nothing more, and every report is written saying "interrupted": no verdict, or
"not conformant" where a MUST requirement had already failed.

Python turns SIGINT into KeyboardInterrupt, which pytest already ends a session on (it still
writes its reports); SIGTERM is made to do the same. A second signal while the reports are
being written is ignored: they take seconds, and a report cut in half is worse than none.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_received: dict[str, Any] = {}


def install() -> Callable[[], None]:
    """Handle SIGTERM and SIGINT as an interruption; returns what puts the old handlers back.
    Only the main thread may set handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _received.clear()
    previous = {number: signal.signal(number, _interrupt) for number in SIGNALS}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    return restore


def _interrupt(number: int, frame: object) -> None:
    if _received:
        return
    _received.update(name=signal.Signals(number).name, at=time.monotonic())
    raise KeyboardInterrupt


def signal_received() -> str | None:
    """The signal that interrupted the run (SIGTERM, SIGINT), or None."""
    return _received.get("name")


def for_the_main_thread() -> None:
    """Called first in a thread of the run's own: the kernel then hands SIGTERM and SIGINT to
    the main thread, the one that can act on them. A signal handed to this thread instead would
    wake only this one, and a main thread waiting on a lock this one holds (the exhaustion's,
    for a minute) would not see it until then."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def as_in_a_child() -> None:
    """In a process forked to send a burst: a signal ends it quietly, as by default (and is not
    blocked, as it is in the thread that forked it)."""
    for number in SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def reason(started_at: float) -> str:
    """The run's no-verdict reason, `started_at` being its wall-clock start."""
    by = signal_received() or "SIGINT"  # a KeyboardInterrupt without our handler: Ctrl-C
    return f"interrupted after {time.time() - started_at:.0f} s ({by})"
