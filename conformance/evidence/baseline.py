"""The known-failure baseline, `--expected-failures FILE`: the failed requirements a team already
knows about, each with a reason and, optionally, a date after which it no longer excuses.

A listed requirement that failed is expected; an unlisted failure is new; a listed requirement
that passed is stale (the entry must go, or it would hide the next regression); an entry past
its `until` date excuses nothing. A listed requirement that was not tested is neither stale nor
failing: a smoke run cannot speak for it.
"""

from __future__ import annotations

import datetime
import difflib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from conformance.judging.verdict import NO_VERDICT, Verdict
from conformance.spec import catalogue

ENTRY_KEYS = {"id", "reason", "until"}


class BaselineError(ValueError):
    """The expected-failures file cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class ExpectedFailure:
    id: str
    reason: str
    until: datetime.date | None = None

    def expired(self, today: datetime.date) -> bool:
        return self.until is not None and today > self.until

    def to_dict(self) -> dict:
        return {"id": self.id, "reason": self.reason, "until": iso_date(self.until)}


@dataclass(frozen=True)
class Baseline:
    path: Path
    entries: tuple[ExpectedFailure, ...]


def iso_date(day: datetime.date | None) -> str | None:
    return day.isoformat() if day else None


def load(path: Path) -> Baseline:
    """Read and check the file; raises BaselineError with one line saying what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise BaselineError(f"cannot read the expected failures {path}: {reason}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise BaselineError(f"{path} is not valid YAML{where}") from None
    if not isinstance(document, dict) or set(document) != {"expected_failures"}:
        raise BaselineError(f"{path}: expected a mapping with one key, expected_failures")
    raw = document["expected_failures"] or []
    if not isinstance(raw, list):
        raise BaselineError(f"{path}: expected_failures must be a list of entries")
    entries = tuple(parse_entry(path, number, item) for number, item in enumerate(raw, 1))
    duplicates = sorted({e.id for e in entries if [x.id for x in entries].count(e.id) > 1})
    if duplicates:
        raise BaselineError(f"{path}: {', '.join(duplicates)} listed more than once")
    return Baseline(Path(path), entries)


def parse_entry(path: Path, number: int, item: object) -> ExpectedFailure:
    where = f"{path}, entry {number}"
    if not isinstance(item, dict) or not {"id", "reason"} <= set(item) <= ENTRY_KEYS:
        raise BaselineError(f"{where}: an entry has an id, a reason and optionally until")
    requirement_id, reason = item["id"], item["reason"]
    if requirement_id not in catalogue():
        close = difflib.get_close_matches(str(requirement_id), list(catalogue()), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BaselineError(f"{where}: unknown requirement id {requirement_id!r}{hint}")
    if not isinstance(reason, str) or not reason.strip():
        raise BaselineError(f"{where}: {requirement_id} needs a reason")
    return ExpectedFailure(requirement_id, reason.strip(), parse_until(where, item.get("until")))


def parse_until(where: str, value: object) -> datetime.date | None:
    if value is None or (
        isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
    ):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise BaselineError(f"{where}: until must be a date such as 2027-03-01") from None


@dataclass
class Judgement:
    """What the baseline says of one run's outcomes."""

    baseline: Baseline | None
    expected: list[ExpectedFailure] = field(default_factory=list)  # listed, failed, in date
    unexpected: list[str] = field(default_factory=list)  # failed, and not excused
    stale: list[ExpectedFailure] = field(default_factory=list)  # listed, and passed
    expired: list[ExpectedFailure] = field(default_factory=list)  # past their until date

    @property
    def blocking(self) -> bool:
        return bool(self.unexpected or self.stale or self.expired)

    def statement_fields(self) -> dict:
        return {
            "expected_failures": [entry.to_dict() for entry in self.expected],
            "unexpected_failures": self.unexpected,
            "stale_expected_failures": [entry.to_dict() for entry in self.stale],
            "expired_expected_failures": [entry.to_dict() for entry in self.expired],
        }


def apply(verdict: Verdict, baseline: Baseline | None, today: datetime.date) -> Judgement:
    failed = verdict.failed_requirements
    passed = {o.requirement.id for o in verdict.outcomes if o.outcome == "passed"}
    entries = {entry.id: entry for entry in (baseline.entries if baseline else ())}
    excused = {i for i, entry in entries.items() if i in failed and not entry.expired(today)}
    return Judgement(
        baseline=baseline,
        expected=[entries[i] for i in failed if i in excused],
        unexpected=[i for i in failed if i not in excused],
        stale=[entry for i, entry in entries.items() if i in passed],
        expired=[entry for entry in entries.values() if entry.expired(today)],
    )


def exit_status(verdict: Verdict, judgement: Judgement) -> int:
    """0 when every failure is excused and nothing in the baseline is stale or expired; 2 when
    there is no verdict, or would be none once the excused failures are set aside."""
    if verdict.verdict == NO_VERDICT:
        return 2
    if judgement.blocking:
        return 1
    return 2 if verdict.undecided else 0


def console_lines(judgement: Judgement) -> list[str]:
    """What a CI log reader needs: which failures were excused, which are new, what to remove."""
    if judgement.baseline is None:
        return []
    name = judgement.baseline.path
    lines = [f"expected failure: {e.id} ({e.reason})" for e in judgement.expected]
    lines += [f"new failure: {i} is not listed in {name}" for i in judgement.unexpected]
    lines += [f"stale entry: {e.id} passed; remove it from {name}" for e in judgement.stale]
    lines += [
        f"expired entry: {e.id} was excused until {iso_date(e.until)}; fix it, or give a "
        f"later until in {name}"
        for e in judgement.expired
    ]
    if not lines:
        lines = [f"expected failures: {name} lists none of this run's outcomes"]
    return lines


def write(path: Path, verdict: Verdict, target: str, run_id: str) -> None:
    """The baseline of this run's failures, for a team adopting the checker: each reason is the
    first failure seen, to be replaced by why the failure is accepted."""
    lines = [
        f"# Expected failures of petstore-conformance run {run_id} against {target}.",
        "# Replace each reason with why the failure is accepted (a ticket, say), and add",
        "# `until: YYYY-MM-DD` for the day after which it must no longer fail.",
    ]
    entries = [
        {"id": o.requirement.id, "reason": first_message(o.failures)}
        for o in verdict.outcomes
        if o.outcome == "failed"
    ]
    body = yaml.safe_dump({"expected_failures": entries}, sort_keys=False, allow_unicode=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + body, encoding="utf-8")


def first_message(failures: list) -> str:
    message = failures[0].message if failures else "failed"
    return " ".join(message.split())[:200]
