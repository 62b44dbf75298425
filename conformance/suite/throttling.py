"""What a scenario does when the target keeps limiting it."""

from __future__ import annotations

import pytest

from conformance.httpclient.client import Exchange


def skip_if_throttled(exchange: Exchange) -> None:
    """A 429 after the client's retries says nothing about the requirement under test."""
    if exchange.status == 429:
        pytest.skip("target kept answering 429")
