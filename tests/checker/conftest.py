"""Fixtures of the checker's unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.judging import checks


@pytest.fixture
def fresh_ledger() -> Iterator[None]:
    """A ledger of checks of the test's own, left empty for the next: the checks record into
    one ledger per run, and a unit test is a run of its own."""
    checks.start_run()
    yield
    checks.start_run()
