"""`tox -e test` runs its phases through tests/phases.py: every phase runs, each reports, and
one that failed fails the whole."""

from __future__ import annotations

import re

import pytest

from tests import phases

TESTS = """
import pytest

def test_parallel_fails():
    assert False, "the parallel phase's failure"

@pytest.mark.solo
def test_solo_passes():
    pass

@pytest.mark.machine
def test_machine_passes():
    pass

@pytest.mark.day_minute
def test_beside_passes():
    pass
"""


def one_process(arguments: list[str]) -> list[str]:
    """A phase's arguments without its workers (`-n`, `--dist`): eight workers cost a minute of
    start-up on a shared machine, and what is tested here is the phases' order and outcome."""
    kept, skip = [], False
    for argument in arguments:
        if not skip and argument not in ("-n", "--dist"):
            kept.append(argument)
        skip = argument in ("-n", "--dist")
    return kept


@pytest.fixture
def three_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(
        phases, "PHASES", [(name, one_process(args)) for name, args in phases.PHASES]
    )
    monkeypatch.setattr(phases, "BESIDE", (phases.BESIDE[0], one_process(phases.BESIDE[1])))
    (tmp_path / "test_three.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def test_a_failed_phase_does_not_stop_the_next_and_fails_the_whole(three_tests, capfd):
    status = phases.main([str(three_tests), "-p", "no:cacheprovider", "-p", "no:xdist"])
    lines = capfd.readouterr().out.splitlines()
    assert status == 1
    assert lines[-6] == "phases failed: parallel"
    assert lines[-5].startswith("parallel (exit 1): ") and "1 failed" in lines[-5]
    assert lines[-4].startswith("solo (exit 0): ") and "1 passed" in lines[-4]
    assert lines[-3].startswith("machine (exit 0): ") and "1 passed" in lines[-3]
    assert lines[-2].startswith("day on the real minute (exit 0): ") and "1 passed" in lines[-2]
    # the plain closing line CI reads (the machine test, not marked solo here, runs twice)
    assert re.fullmatch(r"tests: 4 passed, 1 failed \[\d+:\d\d\]", lines[-1])
    assert re.search(r" \[\d+:\d\d\]$", lines[-5])  # each phase's wall time
    assert any("the parallel phase's failure" in line for line in lines)  # its own output


def test_phases_that_pass_pass(three_tests, capfd):
    test_file = three_tests / "test_three.py"
    test_file.write_text(test_file.read_text().replace("assert False", "assert True"))
    status = phases.main([str(three_tests), "-p", "no:cacheprovider", "-p", "no:xdist"])
    assert status == 0
    assert "phases: all passed" in capfd.readouterr().out
