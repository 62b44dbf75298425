"""What the console says while the run waits and works: a plain line per wait in a CI log, one
line counting down on a terminal while the tests stand still, nothing for a short wait; on the
checker's own console in a terminal, a live bar with the elapsed time and an estimate of the
rest, and in a log plain lines that carry the time instead."""

from __future__ import annotations

import io
import threading
import time

import pytest

from conformance.console.progress import CLEAR_LINE, Bar, Progress, clock_text


class Console(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture(autouse=True)
def not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal is a terminal here, whatever CI the tests themselves run in."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "200")  # the width of a console with no terminal behind it


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def await_text(console: Console, text: str, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while text not in console.getvalue():
        assert time.monotonic() < deadline, f"{text!r} never came: {console.getvalue()!r}"
        time.sleep(0.01)
    return console.getvalue()


def test_in_a_log_each_wait_gets_a_plain_line_naming_key_reason_and_seconds():
    console = Console(tty=False)
    progress = Progress(console)
    over = progress.waiting("spare", 58.4, "the Retry-After of its 429")
    assert console.getvalue() == (
        "petstore-conformance: waiting spare key, 58 s for the Retry-After of its 429\n"
    )
    assert CLEAR_LINE not in console.getvalue()
    assert over is not None
    over()


def test_a_short_wait_passes_unannounced():
    console = Console(tty=False)
    assert Progress(console).waiting("main", 0.5, "X-RateLimit-Reset") is None
    assert console.getvalue() == ""


def test_on_a_terminal_a_wait_of_the_tests_counts_down_on_one_line_then_clears_it():
    console = Console(tty=True)
    progress = Progress(console, midline=lambda: True)
    over = progress.waiting("main", 30, "X-RateLimit-Reset (Remaining reached 0)")
    shown = await_text(console, "waiting: main key, ")
    assert shown.startswith("\n" + CLEAR_LINE)  # below the tests' unfinished row of dots
    assert "\n" not in shown[1:]  # rewritten in place, never a new line
    assert over is not None
    over()
    assert console.getvalue().endswith(CLEAR_LINE)


def test_on_a_terminal_a_wait_beside_the_tests_gets_a_plain_line():
    console = Console(tty=True)
    progress = Progress(console)
    said: list[object] = []
    helper = threading.Thread(target=lambda: said.append(progress.waiting("spare", 40, "x")))
    helper.start()
    helper.join()
    assert console.getvalue() == "petstore-conformance: waiting spare key, 40 s for x\n"


def test_a_note_starts_on_a_line_of_its_own():
    console = Console(tty=False)
    Progress(console, midline=lambda: True).note("spare key: 59 requests on 1 connection")
    assert console.getvalue() == "\npetstore-conformance: spare key: 59 requests on 1 connection\n"


def test_a_console_that_went_away_does_not_stop_the_run():
    console = Console(tty=False)
    console.close()
    progress = Progress(console)
    progress.note("still here")
    assert progress.stream is None


def test_on_the_checkers_console_a_terminal_shows_a_bar_that_moves_with_time_and_estimate():
    console, clock = Console(tty=True), Clock()
    progress = Progress(console, clock=clock, own=True)
    bar = progress.start("checked", 80, "tests")
    clock.now += 30
    progress.advance(bar, 20)
    shown = console.getvalue().split(CLEAR_LINE)[-1]
    assert shown == (
        "petstore-conformance: checked [#####---------------] 20/80 tests, 0:30 elapsed, "
        "about 1:30 left"
    )
    progress.note("auth: 20 passed")  # a line of its own, the bar drawn again below it
    after = console.getvalue().split("petstore-conformance: auth: 20 passed\n", 1)[1]
    assert after.startswith(CLEAR_LINE + "petstore-conformance: checked [#####")
    progress.close()
    assert console.getvalue().endswith(CLEAR_LINE)


def test_a_wait_shares_the_live_line_with_the_bar_even_beside_the_tests():
    console = Console(tty=True)
    progress = Progress(console, own=True)
    progress.start("checked", 10, "tests")
    said: list[object] = []
    helper = threading.Thread(target=lambda: said.append(progress.waiting("spare", 40, "x")))
    helper.start()
    helper.join()
    shown = console.getvalue().split(CLEAR_LINE)[-1]
    assert shown.startswith("petstore-conformance: checked [")
    assert "; waiting spare key, 40 s for x" in shown, shown
    assert "\n" not in console.getvalue()  # no plain line: the wait is on the live line
    progress.close()


def test_in_a_log_or_in_ci_the_days_lines_carry_the_time_and_no_control_sequence(monkeypatch):
    monkeypatch.setenv("CI", "true")  # a CI step's pseudo-terminal is a log all the same
    console, clock = Console(tty=True), Clock()
    progress = Progress(console, clock=clock, own=True)
    track = progress.tracker("the day", "served")
    track(100, 1_000, "")  # where the day starts: what the full run spent is not its pace
    clock.now += 60
    track(400, 1_000, "spare key, window 5 of its day: 60 served")
    assert console.getvalue() == (
        "petstore-conformance: spare key, window 5 of its day: 60 served "
        "(1:00 elapsed, about 2:00 left)\n"
    )
    assert "\x1b" not in console.getvalue()


def test_the_day_on_a_terminal_is_a_bar_over_the_tests_one_gone_when_the_day_is_spent():
    console, clock = Console(tty=True), Clock()
    progress = Progress(console, clock=clock, own=True)
    progress.start("checked", 83, "tests")
    track = progress.tracker("the day", "served")
    track(0, 1_000, "")
    clock.now += 10
    track(500, 1_000, "spare key, window 9 of its day: 60 served")
    assert (
        console.getvalue()
        .split(CLEAR_LINE)[-1]
        .startswith(
            "petstore-conformance: the day [##########----------] 500/1,000 served, 0:10 elapsed, "
            "about 0:10 left"
        )
    )
    assert "window 9" not in console.getvalue()  # the bar says it
    track(1_000, 1_000, "spare key, window 17 of its day: 60 served")
    assert console.getvalue().split(CLEAR_LINE)[-1].startswith("petstore-conformance: checked [")
    progress.close()


def test_no_estimate_before_a_twentieth_of_the_work_and_none_once_done():
    bar = Bar("checked", 100, "tests", started=0.0, done=4)
    assert bar.timing(40.0) == "0:40 elapsed"
    bar.done = 100
    assert bar.timing(50.0) == "0:50 elapsed"
    assert [clock_text(s) for s in (5, 65, 3725)] == ["0:05", "1:05", "1:02:05"]
