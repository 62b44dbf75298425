"""What the run is waiting for, and how far along it is, said while it runs: a minute of
silence looks like a hang.

A run on a real minute waits out windows: a key held until its Reset, a 429's Retry-After, a
fresh window to spend a quota in. Where the output is a terminal (and not a CI log, `CI=true`),
one live line at the bottom is rewritten in place: under the checker's own console a bar of the
tests done (of the day spent, in the day profile) with the elapsed time and an estimate of the
rest, and every wait with its seconds left; under pytest's view, only a wait of the tests,
counting down while they stand still. In a log each wait gets a plain line when it starts and
another every CI_INTERVAL seconds, and the day's windows a line each with the time spent and
left: no control sequence ever goes to a log.

Under pytest's view a wait of the spare key's exhaustion, which runs beside the other tests,
gets plain lines only: a line rewritten in place would garble pytest's row of dots.

Writes go to a stream of their own (a duplicate of stdout taken before pytest captures output),
so that they reach the user while a test runs.
"""

from __future__ import annotations

import os
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
BAR_WIDTH = 20
ESTIMATE_FROM = 0.05
"""The share of the work done before the rest is estimated: a first window says little."""

Track = Callable[[int, int, str], None]
"""Long work's progress: done, of total, and a line saying what was just done."""


def live_terminal(stream: TextIO | None) -> bool:
    """Whether `stream` is a terminal a person watches: not a pipe, not a CI log (CI systems
    set CI=true, and some give their steps a pseudo-terminal), not a dumb terminal."""
    if stream is None or not stream.isatty():
        return False
    in_ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return not in_ci and os.environ.get("TERM") != "dumb"


def clock_text(seconds: float) -> str:
    """`0:42`, `17:05`, `1:02:09`."""
    minutes, secs = divmod(int(max(0.0, seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Wait:
    label: str
    reason: str
    until: float  # monotonic
    blocks_tests: bool  # the tests stand still meanwhile (the waiting thread runs them)

    def describe(self, now: float) -> str:
        return f"{self.label} key, {max(0.0, self.until - now):.0f} s for {self.reason}"


@dataclass
class Bar:
    """Work with a known end: `done` of `total` `unit`, begun at `started` (monotonic)."""

    label: str
    total: int
    unit: str
    started: float
    done: int = 0
    base: int = 0  # done before it started (the day the full run spent): not its pace

    def timing(self, now: float) -> str:
        elapsed = now - self.started
        text = f"{clock_text(elapsed)} elapsed"
        work = self.total - self.base
        share = (self.done - self.base) / work if work > 0 else 1.0
        if ESTIMATE_FROM <= share < 1.0:
            text += f", about {clock_text(elapsed / share - elapsed)} left"
        return text

    def describe(self, now: float) -> str:
        share = min(1.0, self.done / self.total) if self.total else 1.0
        filled = round(share * BAR_WIDTH)
        drawn = "#" * filled + "-" * (BAR_WIDTH - filled)
        return (
            f"{self.label} [{drawn}] {self.done:,}/{self.total:,} {self.unit}, {self.timing(now)}"
        )


class Progress:
    """Announces waits and progress on `stream`. `own`: the checker's own console, where
    nothing else writes to the terminal while tests run; otherwise pytest's, where `midline()`
    tells whether pytest left its line unfinished."""

    def __init__(
        self,
        stream: TextIO | None,
        midline: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
        own: bool = False,
    ):
        self.stream = stream
        self.tty = live_terminal(stream)
        self.midline = midline
        self.clock = clock
        self.own = own
        self._waits: list[Wait] = []
        self._bars: list[Bar] = []  # the last is shown: the day's over the tests'
        self._lock = threading.Lock()
        self._live = False  # a line is being rewritten in place
        self._ticker: threading.Thread | None = None
        self._tests_thread = threading.main_thread()

    @property
    def live_bar(self) -> bool:
        return self.own and self.tty

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
            if self.live_bar:
                self._render_live(self.clock())
            elif not (self.tty and blocks):
                self._line(f"waiting {wait.describe(self.clock())}")
            self._start_ticker()
        return lambda: self._over(wait)

    def _over(self, wait: Wait) -> None:
        """The wait is over: forget it, and clear the line it showed on before the tests, whose
        thread is about to go on, write theirs."""
        with self._lock:
            if wait in self._waits:
                self._waits.remove(wait)
            if self.live_bar:
                self._render_live(self.clock())
            elif wait.blocks_tests:
                self._end_live()

    # -- long work: a bar on the checker's console in a terminal, plain lines in a log --------

    def start(self, label: str, total: int, unit: str) -> Bar:
        """A bar of `total` `unit` from now; shown live where the console is the checker's and
        a terminal."""
        bar = Bar(label, total, unit, self.clock())
        with self._lock:
            self._bars.append(bar)
            if self.live_bar:
                self._render_live(bar.started)
                self._start_ticker()
        return bar

    def advance(self, bar: Bar, done: int) -> None:
        with self._lock:
            bar.done = done
            if self.live_bar:
                self._render_live(self.clock())

    def finish(self, bar: Bar) -> None:
        with self._lock:
            if bar in self._bars:
                self._bars.remove(bar)
            if self.live_bar:
                self._render_live(self.clock())

    def tracker(self, label: str, unit: str) -> Track:
        """What long work (the day) reports its progress to: on a live bar, its line is left
        out (the bar says it); in a log, each line carries the time spent and left."""
        bar: Bar | None = None

        def track(done: int, total: int, line: str) -> None:
            nonlocal bar
            if bar is None:
                bar = self.start(label, total, unit)
                bar.base = done
            bar.total = total
            self.advance(bar, done)
            if line and not self.live_bar:
                self.note(f"{line} ({bar.timing(self.clock())})")
            if done >= total:
                self.finish(bar)

        return track

    def close(self) -> None:
        """The run is over: no live line any more."""
        with self._lock:
            self._bars.clear()
            self._waits.clear()
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
                if not self._waits and not (self.live_bar and self._bars):
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
        if self.own:
            parts = [self._bars[-1].describe(now)] if self._bars else []
            if self._waits:
                parts.append("waiting " + "; ".join(w.describe(now) for w in self._waits))
            text = "; ".join(parts)
        else:
            blocking = [w for w in self._waits if w.blocks_tests]
            text = "waiting: " + "; ".join(w.describe(now) for w in self._waits) if blocking else ""
        if not text:
            self._end_live()
            return
        if not self._live and self.midline():
            self._write("\n")
        self._live = True
        self._write(f"{CLEAR_LINE}{fitted(PREFIX + text, self.stream)}")

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
        if self.live_bar and (self._bars or self._waits):
            self._render_live(self.clock())

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)  # type: ignore[union-attr]
            self.stream.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):
            self.stream = None  # the console went away; the run goes on


def fitted(text: str, stream: TextIO | None) -> str:
    """`text` cut to the terminal's width: a live line that wrapped could not be rewritten."""
    try:
        width = os.get_terminal_size(stream.fileno()).columns  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() else 80
    return text if len(text) < width else text[: max(1, width - 4)] + "..."
