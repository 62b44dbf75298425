"""What changed between two runs: `petstore-conformance compare BEFORE AFTER`, and `--previous`,
which puts the same comparison into a run's report and statement.

Each side is a `conformance.json`, a report folder holding one, or a package made by
`--package`. Exit 1 when a requirement that passed before fails now; 2 when a side is unreadable.
"""

from __future__ import annotations

import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from conformance.reports import contents, package

STATEMENT = "conformance.json"
MAX_STATEMENT_BYTES = package.DOCUMENTS[STATEMENT]
USAGE = "usage: petstore-conformance compare BEFORE AFTER (each a conformance.json or a folder)"


class UnreadableStatement(ValueError):
    """A side cannot be read as a conformance statement; the message is one line."""


def load_statement(path: Path | str) -> dict:
    """The statement of a conformance.json, a report folder or a package, read as untrusted:
    within the size a package's statement may have (conformance.reports.package), as strict
    JSON with each name once and nesting bounded."""
    path = Path(path)
    if path.is_dir():
        path = path / STATEMENT
    try:
        document = package.load(statement_bytes(path))
    except OSError as error:
        raise UnreadableStatement(f"cannot read {path}: {error.strerror or error}") from None
    except (KeyError, zipfile.BadZipFile):
        raise UnreadableStatement(f"{path} holds no {STATEMENT}") from None
    except contents.Unreadable as error:
        raise UnreadableStatement(f"{path}: {error}") from None
    except ValueError:
        raise UnreadableStatement(f"{path} is not JSON") from None
    if not isinstance(document, dict) or not valid_requirements(document.get("requirements")):
        raise UnreadableStatement(f"{path} is not a conformance statement (no requirements)")
    return document


def statement_bytes(path: Path) -> bytes:
    if path.exists() and not path.is_file():  # a FIFO would block, a device never end
        raise contents.Unreadable("not a file")
    if zipfile.is_zipfile(path):
        data = package.read(path).data(STATEMENT)
        if data is None:
            raise KeyError(STATEMENT)
        return data
    with path.open("rb") as handle:
        data = handle.read(MAX_STATEMENT_BYTES + 1)
    if len(data) > MAX_STATEMENT_BYTES:
        raise contents.Unreadable(f"larger than {MAX_STATEMENT_BYTES} bytes, the limit for it")
    return data


def valid_requirements(entries: object) -> bool:
    return isinstance(entries, list) and all(
        isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("outcome"), str)
        for e in entries
    )


@dataclass(frozen=True)
class Change:
    id: str
    before: str  # an outcome, or "absent" when the catalogue of that run had no such id
    after: str

    def to_dict(self) -> dict:
        return {"id": self.id, "before": self.before, "after": self.after}


@dataclass
class Comparison:
    previous: dict  # what identifies the earlier run
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why the two runs may not be comparable

    def where(self, before: set[str], after: set[str]) -> list[Change]:
        return [c for c in self.changes if c.before in before and c.after in after]

    @property
    def regressions(self) -> list[Change]:
        return self.where({"passed"}, {"failed"})

    @property
    def fixes(self) -> list[Change]:
        return self.where({"failed"}, {"passed"})

    @property
    def newly_not_tested(self) -> list[Change]:
        return self.where(TESTED, {"not-tested"})

    @property
    def newly_tested(self) -> list[Change]:
        return self.where({"not-tested"}, TESTED)

    @property
    def other_changes(self) -> list[Change]:
        named = {*self.regressions, *self.fixes, *self.newly_not_tested, *self.newly_tested}
        return [change for change in self.changes if change not in named]

    def to_dict(self) -> dict:
        listed = {name: [c.to_dict() for c in getattr(self, name)] for name in SECTIONS}
        return {"previous": self.previous, **listed, "notes": self.notes}


TESTED = {"passed", "failed", "warned"}
SECTIONS = ("regressions", "fixes", "newly_not_tested", "newly_tested", "other_changes")
IDENTITY = ("run_id", "time", "verdict", "target", "suite_version", "spec_sha256")


def outcomes(statement: dict) -> dict[str, str]:
    return {entry["id"]: entry["outcome"] for entry in statement["requirements"]}


def compare(before: dict, after: dict) -> Comparison:
    old, new = outcomes(before), outcomes(after)
    ids = [*new, *(i for i in old if i not in new)]
    changes = [
        Change(i, old.get(i, "absent"), new.get(i, "absent"))
        for i in ids
        if old.get(i) != new.get(i)
    ]
    notes = [
        f"the two runs differ in {name}: {before.get(name)} then {after.get(name)}"
        for name in ("target", "spec_sha256", "profile")
        if before.get(name) != after.get(name)
    ]
    return Comparison({name: before.get(name) for name in IDENTITY}, changes, notes)


def lines(comparison: Comparison) -> list[str]:
    """The comparison as console lines, regressions first: what a nightly reader looks for."""
    previous = comparison.previous
    said = [
        f"compared with run {previous.get('run_id')} of {previous.get('time')} "
        f"({previous.get('verdict')})"
    ]
    said += [f"note: {note}" for note in comparison.notes]
    labels = {
        "regressions": "regression",
        "fixes": "fix",
        "newly_not_tested": "newly not tested",
        "newly_tested": "newly tested",
        "other_changes": "changed",
    }
    for name, label in labels.items():
        said += [f"{label}: {c.id} {c.before} -> {c.after}" for c in getattr(comparison, name)]
    if not comparison.changes:
        said.append("no requirement changed its outcome")
    return said


def main(args: list[str]) -> int:
    if len(args) != 2 or any(arg.startswith("-") for arg in args):
        print(f"petstore-conformance: {USAGE}", file=sys.stderr)
        return 2
    try:
        before, after = (load_statement(arg) for arg in args)
    except UnreadableStatement as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return 2
    comparison = compare(before, after)
    for line in lines(comparison):
        print(line)
    regressions, fixes = len(comparison.regressions), len(comparison.fixes)
    print(f"petstore-conformance compare: {regressions} regression(s), {fixes} fix(es)")
    return 1 if regressions else 0
