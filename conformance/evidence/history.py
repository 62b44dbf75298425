"""`petstore-conformance history RUN... --out DIR`: many nights' statements read into one page
(conformance.reports.history_html) and `history.json`: each night's verdict, each requirement's
state and the night since which it has been so, the requirements that flipped more than once,
the run's time, requests and peak memory across nights, and notes where nights checked
different things.

Each RUN is a statement as `compare` reads it (a conformance.json, its folder or a package,
conformance.evidence.compare.load_statement: bounded, strict JSON) or a folder of such. They
are read one at a time, and of each only a small summary is kept (`Night`), its fields bounded:
365 nights take the memory of one. A statement that cannot be read is one line on stderr and
skipped. Exit 0 written, 2 when no statement could be read or --out cannot be written.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from conformance import strict_json
from conformance.console.requirements import plain
from conformance.evidence.compare import STATEMENT, UnreadableStatement, load_statement
from conformance.evidence.conclusion import EXCUSED

USAGE = "petstore-conformance history RUN... --out DIR [--nights N]"
FORMAT = "petstore-conformance-history/1"
MAX_NIGHTS = 365
"""Nights shown and kept at most: a year of a nightly job."""
MAX_FOLDER_ENTRIES = 4 * MAX_NIGHTS
"""Entries of a folder of runs looked at: never a million listed."""
MAX_IDS = 500
"""Requirement ids kept of one night, and rows of the page: the catalogue has under a hundred."""
MAX_ID = 64
"""Characters of an id kept; a longer one is no id of this suite, and is left out."""
MAX_TEXT = 200
"""Characters kept of a target, plan, profile, suite version or run id."""
MAX_FIGURE = 10**15
"""Larger figures (seconds, requests, bytes) are not believed: shown as unknown."""
OUTCOMES = ("failed", "warned", "passed", "not-tested")
TESTED = {"passed", "failed", "warned"}
ABSENT = "absent"  # the night's statement does not name the requirement
VERDICTS = {"conformant", "not conformant", "no verdict", EXCUSED}
"""A night's result: its verdict, in words that agree with its exit status (a baseline may have
excused every failure)."""
COMPARED = ("target", "plan", "profile", "suite_version")
MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


class Unusable(Exception):
    """The command cannot do what it was asked (no statement, --out unwritable); one line."""


@dataclass
class Night:
    """What one statement says that a history shows; every field bounded."""

    source: str
    run_id: str
    time: str  # ISO 8601 UTC, as the statement gives it; "" when it gives none
    verdict: str
    facts: dict[str, str]  # COMPARED
    seconds: float | None
    requests: int | None
    peak_memory_bytes: int | None
    outcomes: dict[str, str]  # requirement id -> outcome
    ids_left_out: int = 0

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "run_id": self.run_id,
            "time": self.time,
            "verdict": self.verdict,
            **self.facts,
            "seconds": self.seconds,
            "requests": self.requests,
            "peak_memory_bytes": self.peak_memory_bytes,
            "counts": {name: list(self.outcomes.values()).count(name) for name in OUTCOMES},
            "ids_left_out": self.ids_left_out,
        }


def text(value: object) -> str:
    """A statement's string, control characters escaped, cut to MAX_TEXT."""
    if value is None:
        return ""
    shown = plain(value[: MAX_TEXT * 4] if isinstance(value, str) else str(value)[:MAX_TEXT])
    return shown if len(shown) <= MAX_TEXT else shown[: MAX_TEXT - 1] + "…"


def figure(value: object) -> int | None:
    """A count a statement gives: a whole number, not a boolean, within bounds."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_FIGURE else None


def moment(value: object) -> str:
    return value if isinstance(value, str) and MOMENT.fullmatch(value) else ""


def seconds_between(start: str, end: str) -> float | None:
    """Seconds from one statement moment to another (whole seconds, as statements give them)."""
    if not (start and end):
        return None
    try:
        begun, ended = (datetime.datetime.strptime(m, "%Y-%m-%dT%H:%M:%SZ") for m in (start, end))
    except ValueError:  # the right shape, not a moment (month 13)
        return None
    seconds = (ended - begun).total_seconds()
    return seconds if 0 <= seconds <= MAX_FIGURE else None


def summarize(source: str, statement: dict) -> Night:
    outcomes: dict[str, str] = {}
    left_out = 0
    for entry in statement["requirements"]:
        requirement_id, outcome = entry["id"], entry["outcome"]
        if len(outcomes) >= MAX_IDS or len(requirement_id) > MAX_ID:
            left_out += 1
            continue
        # Interned: 365 nights name the same ids, held once.
        outcomes[sys.intern(plain(requirement_id))] = outcome if outcome in OUTCOMES else "other"
    requests = statement.get("requests")
    time, finished = moment(statement.get("time")), moment(statement.get("finished"))
    verdict = statement.get("result") or statement.get("verdict")
    return Night(
        source=text(source),
        run_id=text(statement.get("run_id")),
        time=time,
        verdict=verdict if verdict in VERDICTS else "unknown",
        facts={name: text(statement.get(name)) for name in COMPARED},
        seconds=seconds_between(time, finished),
        requests=figure(requests.get("total")) if isinstance(requests, dict) else None,
        peak_memory_bytes=figure(statement.get("peak_memory_bytes")),
        outcomes=outcomes,
        ids_left_out=left_out,
    )


# -- reading ----------------------------------------------------------------------------------


def runs_in(path: Path, complain) -> list[Path]:
    """A RUN: a statement, a report folder or package, or a folder of those (one level); a
    link in such a folder is not followed."""
    if not path.is_dir() or (path / STATEMENT).exists():
        return [path]
    with os.scandir(path) as listing:
        entries = list(itertools.islice(listing, MAX_FOLDER_ENTRIES + 1))
    if len(entries) > MAX_FOLDER_ENTRIES:
        raise UnreadableStatement(f"{path} holds more than {MAX_FOLDER_ENTRIES} entries")
    found = []
    for entry in sorted(entries, key=lambda entry: entry.name):
        candidate = Path(entry.path)
        if entry.is_symlink():
            complain(f"skipped: {candidate}: a symbolic link")
            continue
        report_folder = entry.is_dir() and (candidate / STATEMENT).is_file()
        if report_folder or (entry.is_file() and candidate.suffix in (".json", ".zip")):
            found.append(candidate)
    return found


def read(paths: list[Path], nights: int, complain) -> tuple[list[Night], int]:
    """The newest `nights` nights, oldest first, each read alone; and how many were dropped
    as older. `complain(line)` hears each statement that cannot be read, and each run given
    twice (a folder and a statement in it, say)."""
    kept: list[Night] = []
    seen: dict[tuple[str, str], str] = {}
    dropped = 0
    for given in paths:
        try:
            runs = runs_in(given, complain)
        except (OSError, UnreadableStatement) as error:
            complain(f"skipped: {given}: {getattr(error, 'strerror', None) or error}")
            continue
        for path in runs:
            try:
                night = summarize(str(path), load_statement(path))
            except UnreadableStatement as error:
                complain(f"skipped: {error}")
                continue
            if night.run_id and (night.run_id, night.time) in seen:
                complain(f"skipped: {path} is the run of {seen[night.run_id, night.time]}")
                continue
            seen[night.run_id, night.time] = str(path)
            kept.append(night)
            if len(kept) > 2 * nights:  # trimmed as it goes: memory for 2N nights, not all
                dropped += trim(kept, nights)
    dropped += trim(kept, nights)
    return kept, dropped


def trim(kept: list[Night], nights: int) -> int:
    kept.sort(key=lambda night: night.time)
    dropped = max(0, len(kept) - nights)
    del kept[:dropped]
    return dropped


# -- what the nights say ----------------------------------------------------------------------


@dataclass
class Row:
    """One requirement across the nights (oldest first)."""

    id: str
    states: list[str]
    state: str  # its state on the newest night
    since: int  # the index of the first night of that state, unbroken to the newest
    flips: int  # changes between tested outcomes, nights not tested skipped

    @property
    def unstable(self) -> bool:
        return self.flips > 1


@dataclass
class History:
    nights: list[Night]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def unstable(self) -> list[Row]:
        return [row for row in self.rows if row.unstable]

    @property
    def failing(self) -> list[Row]:
        return [row for row in self.rows if row.state == "failed"]

    def night_name(self, index: int) -> str:
        night = self.nights[index]
        return night.time or night.run_id or night.source

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "nights": [night.to_dict() for night in reversed(self.nights)],  # newest first
            "requirements": [row_dict(self, row) for row in self.rows],
            "failing": [
                {"id": row.id, "since": self.night_name(row.since)} for row in self.failing
            ],
            "unstable": [{"id": row.id, "flips": row.flips} for row in self.unstable],
            "notes": self.notes,
            "skipped": self.skipped,
        }


def row_dict(history: History, row: Row) -> dict:
    return {
        "id": row.id,
        "state": row.state,
        "since": history.night_name(row.since),
        "nights_in_state": len(row.states) - row.since,
        "flips": row.flips,
        "unstable": row.unstable,
        "outcomes": row.states[::-1],  # newest first, as the page
    }


def row_of(requirement_id: str, nights: list[Night]) -> Row:
    states = [night.outcomes.get(requirement_id, ABSENT) for night in nights]
    since = len(states) - 1
    while since > 0 and states[since - 1] == states[-1]:
        since -= 1
    tested = [state for state in states if state in TESTED]
    flips = sum(1 for a, b in itertools.pairwise(tested) if a != b)
    return Row(requirement_id, states, states[-1], since, flips)


ROW_ORDER = {"failed": 0, "warned": 1, "other": 2, ABSENT: 3, "not-tested": 4, "passed": 5}


def derive(nights: list[Night], skipped: list[str], dropped: int = 0) -> History:
    ids = list(dict.fromkeys(i for night in reversed(nights) for i in night.outcomes))
    notes = [f"{dropped} older night(s) left out: the page shows the newest {len(nights)}"]
    notes = notes if dropped else []
    if len(ids) > MAX_IDS:
        notes.append(f"{len(ids) - MAX_IDS} requirement id(s) left out: more than {MAX_IDS}")
        ids = ids[:MAX_IDS]
    rows = [row_of(i, nights) for i in ids]
    # What needs attention first: failing (the unstable first), then the other unstable ones,
    # then by state, each in the order of the newest statement.
    rows.sort(
        key=lambda row: (row.state != "failed", not row.unstable, ROW_ORDER.get(row.state, 2))
    )
    left_out = sum(night.ids_left_out for night in nights)
    if left_out:
        notes.append(f"{left_out} requirement entries left out (ids too long, or too many)")
    return History(nights, rows, notes + differences(nights), skipped)


def differences(nights: list[Night]) -> list[str]:
    """Where a night checked something else than the night before: its results say so."""
    notes = []
    for before, after in itertools.pairwise(nights):
        for name in COMPARED:
            if before.facts[name] != after.facts[name]:
                notes.append(
                    f"{after.time or after.run_id}: {name.replace('_', ' ')} "
                    f"{before.facts[name] or '(none)'} -> {after.facts[name] or '(none)'}"
                )
    return notes[:MAX_IDS]


# -- the command ------------------------------------------------------------------------------


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unusable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance history", add_help=False)
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--nights", type=int, default=MAX_NIGHTS)
    arguments = parser.parse_args(args)
    if not 1 <= arguments.nights <= MAX_NIGHTS:
        raise Unusable(f"--nights must be from 1 to {MAX_NIGHTS}")
    return arguments


def prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise Unusable(f"--out {out}: not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise Unusable(f"--out {out}: cannot write ({error.strerror or error})") from None


def write(history: History, out: Path) -> None:
    from conformance.reports import history_html

    document = strict_json.dumps(history.to_dict(), indent=1, ensure_ascii=False) + "\n"
    write_file(out / "history.json", document)
    write_file(out / "history.html", history_html.page(history))


def write_file(path: Path, text: str) -> None:
    """A link left where a file goes is removed, not followed: nothing is written outside
    --out."""
    if path.is_symlink():
        path.unlink()
    path.write_text(text, encoding="utf-8")


def summary_line(history: History) -> str:
    newest = history.nights[-1]
    return (
        f"petstore-conformance history: {len(history.nights)} night(s), newest "
        f"{newest.time or newest.run_id} {newest.verdict}; {len(history.failing)} failing, "
        f"{len(history.unstable)} unstable"
    )


def main(args: list[str]) -> int:
    skipped: list[str] = []

    def complain(line: str) -> None:
        skipped.append(line)
        print(f"petstore-conformance: {plain(line)}", file=sys.stderr)

    try:
        arguments = parse(args)
        prepare(arguments.out)
        nights, dropped = read(arguments.runs, arguments.nights, complain)
        if not nights:
            raise Unusable("no statement could be read: nothing to show")
        history = derive(nights, [plain(line) for line in skipped], dropped)
        write(history, arguments.out)
    except Unusable as error:
        print(f"petstore-conformance: {plain(str(error))}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"petstore-conformance: cannot write: {error.strerror or error}", file=sys.stderr)
        return 2
    for row in history.failing:
        print(f"failing since {history.night_name(row.since)}: {row.id}")
    for row in history.unstable:
        print(f"unstable: {row.id} flipped {row.flips} times in {len(history.nights)} nights")
    print(summary_line(history))
    print(f"history: {arguments.out / 'history.html'}")
    return 0
