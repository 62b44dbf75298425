"""The parallel phase's order (tests/conftest.py): under `--dist worksteal` every worker begins
on one of the long tests, the longest first, so none of them is left to start late."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
from xdist.scheduler import WorkStealingScheduling

from tests import conftest

WORKERS = 8


@dataclass(eq=False)
class Worker:
    """What xdist's scheduler sends a worker: the indices of its first tests."""

    name: str
    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices


def collection(monkeypatch, count: int) -> list[SimpleNamespace]:
    """`count` tests, a tenth of them long, the long ones together at the end (as one module's
    are)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(WORKERS))
    long = {f"test_long[{n}]": 300.0 - n for n in range(count // 10)}
    monkeypatch.setattr(conftest, "LONG_TESTS", long)
    monkeypatch.setattr(conftest, "LONG_SECONDS", {})
    names = [f"test_short[{n}]" for n in range(count - len(long))] + list(long)
    items = [SimpleNamespace(name=name, path=Path("test_x.py")) for name in names]
    return items


def first_tests(items: list[SimpleNamespace]) -> list[str]:
    """The first test each worker runs, as xdist's own work-stealing scheduler deals them."""
    config = SimpleNamespace(getvalue=lambda name: [f"{WORKERS}*popen"])
    scheduler = WorkStealingScheduling(config)
    workers = [Worker(f"gw{index}") for index in range(WORKERS)]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, [item.name for item in items])
    scheduler.schedule()
    return [items[worker.sent[0]].name for worker in workers]


@pytest.mark.parametrize("count", [1656, 1657, 1663])
def test_every_worker_begins_on_one_of_the_longest_tests(monkeypatch, count):
    items = collection(monkeypatch, count)
    conftest.pytest_collection_modifyitems(None, items)
    longest = sorted(conftest.LONG_TESTS, key=lambda name: -conftest.LONG_TESTS[name])
    assert sorted(first_tests(items)) == sorted(longest[:WORKERS])


def test_the_long_tests_are_shared_out_by_their_seconds(monkeypatch):
    items = collection(monkeypatch, 1656)
    conftest.pytest_collection_modifyitems(None, items)
    sizes = conftest.slice_sizes(len(items), WORKERS)
    starts = [sum(sizes[:index]) for index in range(WORKERS)]
    seconds = [
        sum(conftest.estimated_seconds(item) for item in items[start : start + size])
        for start, size in zip(starts, sizes, strict=True)
    ]
    assert max(seconds) - min(seconds) <= max(conftest.LONG_TESTS.values())
    assert sum(seconds) == sum(conftest.LONG_TESTS.values())
