"""What the run is waiting for, said while it waits: a minute of silence looks like a hang.

A run on a real minute waits out windows: a key held until its Reset, a 429's Retry-After, a
fresh window to spend a quota in. On a terminal, while the tests themselves stand still, one
line says what is awaited and counts down; in a CI log (no terminal) each wait gets a plain
line when it starts and another every CI_INTERVAL seconds. A wait of the spare key's
exhaustion, which runs beside the other tests, gets plain lines only: a line rewritten in place
would garble the tests' own progress on the same terminal.

Writes go to a stream of their own (a duplicate of stdout taken before pytest captures output),
so that they reach the user while a test runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from conformance import interruption

PREFIX = "petstore-conformance: "
SHORTEST = 2.0
"""Waits shorter than this pass unannounced: the tests' own output shows the run moving."""
CI_INTERVAL = 15.0
TTY_INTERVAL = 1.0
CLEAR_LINE = "\r\x1b[K"


@dataclass
class Wait:
    label: str
    reason: str
    until: float  # monotonic
    blocks_tests: bool  # the tests stand still meanwhile (the waiting thread runs them)

    def describe(self, now: float) -> str:
        return f"{self.label} key, {max(0.0, self.until - now):.0f} s for {self.reason}"


class Progress:
    """Announces waits on `stream`; `midline()` tells whether pytest left its line unfinished."""

    def __init__(
        self,
        stream: TextIO | None,
        midline: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream
        self.tty = bool(stream is not None and stream.isatty())
        self.midline = midline
        self.clock = clock
        self._waits: list[Wait] = []
        self._lock = threading.Lock()
        self._live = False  # a line is being rewritten in place
        self._ticker: threading.Thread | None = None
        self._tests_thread = threading.main_thread()

    def note(self, message: str) -> None:
        """A plain line: something worth knowing that is not a wait."""
        with self._lock:
            self._line(message)

    def waiting(self, label: str, seconds: float, reason: str) -> Callable[[], None] | None:
        """Called before a key sleeps `seconds` (the Pacer's WaitListener); returns what to
        call once the wait is over."""
        if self.stream is None or seconds < SHORTEST:
            return None
        blocks = threading.current_thread() is self._tests_thread
        wait = Wait(label, reason or "its limit", self.clock() + seconds, blocks)
        with self._lock:
            self._waits.append(wait)
            if not (self.tty and blocks):
                self._line(f"waiting {wait.describe(self.clock())}")
            self._start_ticker()
        return lambda: self._over(wait)

    def _over(self, wait: Wait) -> None:
        """The wait is over: forget it, and clear the line it showed on before the tests, whose
        thread is about to go on, write theirs."""
        with self._lock:
            if wait in self._waits:
                self._waits.remove(wait)
            if wait.blocks_tests:
                self._end_live()

    # -- the ticker: counts down on a terminal, repeats in a log --------------------------------

    def _start_ticker(self) -> None:
        if self._ticker is None or not self._ticker.is_alive():
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        interruption.for_the_main_thread()
        interval = TTY_INTERVAL if self.tty else CI_INTERVAL
        last_plain = self.clock()
        while True:
            with self._lock:
                now = self.clock()
                self._waits = [w for w in self._waits if w.until > now]
                if not self._waits:
                    self._end_live()
                    self._ticker = None
                    return
                if self.tty:
                    self._render_live(now)
                elif now - last_plain >= CI_INTERVAL:
                    last_plain = now
                    for wait in self._waits:
                        self._line(f"still waiting {wait.describe(now)}")
            time.sleep(min(interval, TTY_INTERVAL))

    def _render_live(self, now: float) -> None:
        blocking = [w for w in self._waits if w.blocks_tests]
        if not blocking:
            self._end_live()
            return
        if not self._live and self.midline():
            self._write("\n")
        self._live = True
        text = "; ".join(w.describe(now) for w in self._waits)
        self._write(f"{CLEAR_LINE}{PREFIX}waiting: {text}")

    def _end_live(self) -> None:
        if self._live:
            self._write(CLEAR_LINE)
            self._live = False

    def _line(self, message: str) -> None:
        if self.stream is None:
            return
        self._end_live()
        start = "\n" if self.midline() else ""
        self._write(f"{start}{PREFIX}{message}\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)  # type: ignore[union-attr]
            self.stream.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):
            self.stream = None  # the console went away; the run goes on
