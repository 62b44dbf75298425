"""What the console says while the run waits: a plain line per wait in a CI log, one line
counting down on a terminal while the tests stand still, and nothing for a short wait."""

from __future__ import annotations

import io
import threading
import time

from conformance.console.progress import CLEAR_LINE, Progress


class Console(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


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
