"""Schemathesis, all checks, against the reference: no finding."""

from __future__ import annotations

from tests.run_schemathesis import run


def test_schemathesis_finds_nothing():
    result = run(max_examples=30, seed=1, max_time=60)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Test cases:" in result.stdout
