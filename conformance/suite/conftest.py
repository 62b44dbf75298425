"""Fixtures of the suite's own: the spare key's exhaustion, started with the run.

Spending a key's quota and seeing it recover takes about a minute on a real minute, most of
it waiting for Retry-After and Reset. With a spare key that minute passes beside the main key's
tests, which proceed on their own quota: the exhaustion starts on a thread of its own when the
first test of the run starts, and its test, which runs last, collects what it found.
"""

from __future__ import annotations

import pytest

from conformance import plugin
from conformance.run import Run
from conformance.suite.exhaustion import EarlyExhaustion


@pytest.fixture(scope="session", autouse=True)
def early_exhaustion(request: pytest.FixtureRequest, run: Run) -> EarlyExhaustion | None:
    """The spare key's exhaustion under way, or None where it is not run early (no spare key:
    the main key is exhausted last, so that nothing else runs on a limited key)."""
    if run.settings.exhaustion_key == "main" or run.settings.profile == "smoke":
        return None
    exhausting = [
        item
        for item in request.session.items
        if item.get_closest_marker("exhausts") and not item.get_closest_marker("skip")
    ]
    if not exhausting:
        return None
    job = EarlyExhaustion(run, plugin.test_id(exhausting[0]))
    job.start()
    return job
