"""Requirement checks: every assertion of the suite names a requirement id from the catalogue.

`expect` records one observation about one requirement and lets the test go on, so that a test
reports every requirement it saw broken, not just the first. `require` does the same and stops
the test when what follows would make no sense. The plugin turns recorded MUST failures into a
failed test at the end of the call; SHOULD failures are warned in the closing summary.

Checks made on every response (under `on_every_response`) are marked `every_response`: they land
on whatever test provoked the response, and fail that test only when the catalogue says the test
verifies them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.spec import all_requirements

if TYPE_CHECKING:
    from conformance.httpclient.client import Exchange


@dataclass
class CheckResult:
    requirement_id: str
    passed: bool
    message: str
    test_id: str
    exchange: Exchange | None = None
    every_response: bool = False  # made on every response, not asserted by the test itself
    # The response is not the service's at all (a proxy's refusal): every other failure on it
    # gives way to this one (conformance.judging.causes).
    whole_response: bool = False
    times: int = 1  # checks this result stands for (see Ledger.add)


class RequirementFailed(AssertionError):
    """A requirement was seen broken; raised by `require`, and by the plugin after a test."""

    def __init__(self, failures: list[CheckResult]):
        self.failures = failures
        super().__init__("\n".join(describe(failure) for failure in failures))


@dataclass
class Ledger:
    """Every check of a run, in order; the report writers and the verdict read it."""

    results: list[CheckResult] = field(default_factory=list)
    # Requirements a test found it cannot check against this target, and why.
    unavailable: dict[str, str] = field(default_factory=dict)
    # Requirements a test left open, and why: still unchecked for the verdict (no verdict).
    left_open: dict[str, str] = field(default_factory=dict)
    # Requirements a check began and could not finish, and why: not proven by their passes.
    unproven: dict[str, str] = field(default_factory=dict)
    _by_test: dict[str, list[CheckResult]] = field(default_factory=dict, repr=False)
    _passes: dict[tuple[str, str], CheckResult] = field(default_factory=dict, repr=False)
    _failures: dict[tuple[str, int, str], CheckResult] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, result: CheckResult) -> CheckResult:
        """Keep the result, and return the one kept for it. A check on every response that
        passed, as one of the test's earlier ones did, is counted on that one instead (a burst
        of 100,000 responses passes 13 such checks each: 1.3 million results, some 300 MB).
        The same failure on the same response, seen on every response and again by the test
        that reads it (a listing that is not JSON), is one failure: the test's own."""
        with self._lock:  # the exhaustion of a spare key records from a thread of its own
            if result.every_response and result.passed:
                key = (result.requirement_id, result.test_id)
                if (first := self._passes.get(key)) is not None:
                    first.times += 1
                    return first
                self._passes[key] = result
            if not result.passed and result.exchange is not None:
                seen = (result.requirement_id, result.exchange.id, result.message)
                if (same := self._failures.get(seen)) is not None:
                    same.every_response = same.every_response and result.every_response
                    return same
                self._failures[seen] = result
            self.results.append(result)
            self._by_test.setdefault(result.test_id, []).append(result)
            return result

    # Cases of a requirement this run left out on purpose (the requirement may still be
    # tested by its other cases), each with the reason.
    skipped_cases: dict[str, list[str]] = field(default_factory=dict)

    def for_test(self, test_id: str) -> list[CheckResult]:
        with self._lock:
            return list(self._by_test.get(test_id, []))


# The suite runs one test at a time in one process, but a spare key's exhaustion runs beside
# the other tests on a thread of its own: each thread says which test its checks belong to.
_ledger = Ledger()
_current = threading.local()
_on_every_response: ContextVar[bool] = ContextVar("on_every_response", default=False)


def ledger() -> Ledger:
    return _ledger


def start_run() -> Ledger:
    global _ledger
    _ledger = Ledger()
    return _ledger


def set_current_test(test_id: str) -> None:
    _current.test_id = test_id


def current_test() -> str:
    return getattr(_current, "test_id", "")


@contextmanager
def on_every_response() -> Iterator[None]:
    """Mark the checks recorded inside as checks of every response (see the module's notes)."""
    token = _on_every_response.set(True)
    try:
        yield
    finally:
        _on_every_response.reset(token)


def expect(
    requirement_id: str, condition: Any, message: str, exchange: Exchange | None = None
) -> bool:
    """Record whether `requirement_id` held; `message` says what must hold (and what was seen)."""
    return record(requirement_id, condition, message, exchange).passed


def record(
    requirement_id: str, condition: Any, message: str, exchange: Exchange | None = None
) -> CheckResult:
    """`expect`'s work: the result kept in the ledger for this check."""
    known(requirement_id)
    result = CheckResult(
        requirement_id, bool(condition), message, current_test(), exchange, _on_every_response.get()
    )
    return ledger().add(result)


def require(
    requirement_id: str, condition: Any, message: str, exchange: Exchange | None = None
) -> None:
    """Like `expect`, but stop the test here when the requirement does not hold."""
    result = record(requirement_id, condition, message, exchange)
    if not result.passed:
        raise RequirementFailed([result])


def known(requirement_id: str) -> None:
    if requirement_id not in all_requirements():
        raise KeyError(f"unknown requirement id {requirement_id!r}: add it to requirements.yaml")


def cannot_check(requirement_id: str, reason: str) -> None:
    """Say that this run cannot check `requirement_id` (it shows as not tested, with `reason`,
    and does not stand in the way of a verdict)."""
    known(requirement_id)
    ledger().unavailable[requirement_id] = reason


def leave_open(requirement_ids: list[str], reason: str) -> None:
    """Say why this run leaves `requirement_ids` unchecked where they could have been checked
    (a quota beyond what this machine can send, say): they show as not tested, with `reason`,
    and the run has no verdict, as for any testable MUST left unchecked."""
    for requirement_id in requirement_ids:
        known(requirement_id)
        ledger().left_open.setdefault(requirement_id, reason)


def unproven(requirement_id: str, reason: str) -> None:
    """Say that a check of `requirement_id` began and could not be finished (the window that
    would show a fault ran into the next one on a busy machine): its passes elsewhere do not
    prove it. Unless it failed, it shows as not tested, with `reason`, and the run has no
    verdict: what an idle machine would have proven is not called conformant on a busy one."""
    known(requirement_id)
    ledger().unproven.setdefault(requirement_id, reason)


def skip_case(requirement_id: str, case: str, reason: str) -> None:
    """Say that this run leaves `case` of `requirement_id` out, and why: the closing summary
    and the reports list it, whatever the requirement's other cases showed."""
    known(requirement_id)
    cases = ledger().skipped_cases.setdefault(requirement_id, [])
    text = f"{case}: {reason}"
    if text not in cases:
        cases.append(text)


def describe(result: CheckResult) -> str:
    requirement = all_requirements()[result.requirement_id]
    text = f"[{requirement.id}, {requirement.level}] {result.message}"
    if result.exchange is not None:
        text += (
            f"\n    evidence: {result.exchange.summary()}\n    reproduce: {result.exchange.curl()}"
        )
    return text
