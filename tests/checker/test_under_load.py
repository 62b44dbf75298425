"""The fault registry's timing-sensitive verdicts with other work beside the run: processes that
keep every core busy (a shared CI runner's load), bounded in time. A fault proven on an idle
machine must be proven on a loaded one, or the run must say it could not tell (no verdict):
never "conformant". A correct variant must stay conformant.

Marked `machine`: tox runs it last, alone, so that its load slows no other test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shared.checker_runs import MINUTE_SECONDS, run_checker
from tests.shared.double import FAULTS, VARIANTS

# A promise broken at a window's last request, an early and a late refusal: what a late
# response on a busy machine could hide; and a front refilled continuously, caught only by a
# burst late in its window, which a busy machine's run met at another point of it.
SENSITIVE_FAULTS = (
    "remaining-one-too-high",
    "limit-minus-one",
    "limit-plus-one",
    "front-token-bucket",
)
SENSITIVE_VARIANTS = ("sliding-window", "late-window")
HOGS_PER_CORE = 3
HOG_SECONDS = 600  # each hog ends by itself, whatever becomes of the test
SPIN = f"import time\nend = time.monotonic() + {HOG_SECONDS}\nwhile time.monotonic() < end: pass\n"


@pytest.fixture
def cpu_hog() -> Iterator[None]:
    hogs = [
        subprocess.Popen([sys.executable, "-c", SPIN])
        for _ in range(HOGS_PER_CORE * (os.cpu_count() or 2))
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.slow
@pytest.mark.solo
@pytest.mark.machine
@pytest.mark.parametrize("fault", SENSITIVE_FAULTS)
def test_a_fault_is_never_conformant_under_load(fault: str, cpu_hog: None, tmp_path: Path) -> None:
    minute = FAULTS[fault].minute_seconds or MINUTE_SECONDS
    run = run_checker(
        tmp_path / fault, [fault], options=FAULTS[fault].options, minute_seconds=minute
    )
    assert run.status != 0, f"{fault} passed with a CPU hog beside the run: {run.describe()}"
    if run.status == 1:
        assert FAULTS[fault].requirement in run.statement["failed_requirements"], run.describe()


@pytest.mark.slow
@pytest.mark.solo
@pytest.mark.machine
@pytest.mark.parametrize("variant", SENSITIVE_VARIANTS)
def test_a_correct_variant_is_conformant_under_load(
    variant: str, cpu_hog: None, tmp_path: Path
) -> None:
    assert variant in VARIANTS
    run = run_checker(tmp_path / variant, variants=[variant])
    assert run.status == 0, f"{variant} is legitimate: {run.describe()}"
