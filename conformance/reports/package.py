"""Evidence a vendor can hand over: `--package FILE.zip` bundles the run's reports with a
`manifest.json`, and `petstore-conformance verify FILE.zip` (conformance.reports.verify) checks
such a package.

What the hashes prove is integrity, not identity: that every file is the one the manifest lists,
with nothing changed, added or removed since packaging. They do not prove who ran the checker,
against what, or that the run happened at all: anyone can edit a file and write a new manifest.
So `verify` also checks that the stated verdict follows from the stated requirement outcomes,
which catches an edited verdict even in a package whose manifest was rewritten to match.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from conformance import spec, strict_json
from conformance.httpclient import connection
from conformance.reports.contents import Contents, Unreadable
from conformance.reports.contents import read_package as read_members

STATEMENT = "conformance.json"
MANIFEST = "manifest.json"
FORMAT = "petstore-conformance-package/1"
# Written by every run, in the order a reader wants them.
REPORTS = (STATEMENT, "report.html", "junit.xml", "exchanges.har", "badge.svg")
BASELINE = "expected-failures.yaml"  # the baseline the run was judged with, if any
# Facts the manifest repeats from the statement, so that a reader sees them without unpacking.
FACTS = (
    "suite_version",
    "role",
    "spec_version",
    "spec_sha256",
    "interface_sha256",
    "vendor",
    "implementation",
    "target",
    "plan",
    "profile",
    "verdict",
    "exit_status",
    "result",  # the verdict in words that agree with the exit status
    "run_id",
    "time",
    "connection",
    "user_agent",  # the name the run's requests gave: a target may answer it better than others
)
PACKAGED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
OUTCOMES = {"passed", "failed", "warned", "not-tested"}
INTACT, ALTERED, UNREADABLE = 0, 1, 2


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build(
    zip_path: Path, report_dir: Path, baseline: Path | None = None, envelope: Path | None = None
) -> Path:
    """Write the package; it replaces `zip_path` only once complete. `envelope`: the run's
    signed attestation (conformance.reports.attestation), packaged under its own name."""
    files = {
        name: (report_dir / name).read_bytes() for name in REPORTS if (report_dir / name).is_file()
    }
    if baseline is not None:
        files[BASELINE] = baseline.read_bytes()
    if envelope is not None:
        files[envelope.name] = envelope.read_bytes()
    statement = json.loads(files[STATEMENT])
    manifest = {
        "format": FORMAT,
        "suite": "petstore-conformance",
        **{name: statement.get(name) for name in FACTS},
        "packaged": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": {name: sha256(data) for name, data in files.items()},
    }
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    partial = zip_path.with_name(zip_path.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        text = strict_json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        archive.writestr(MANIFEST, text)
        for name, data in files.items():
            archive.writestr(name, data)
    partial.replace(zip_path)
    return zip_path


ENVELOPE = "conformance.intoto.jsonl"  # the run's signed attestation (attestation.py)
GITHUB_BUNDLE = "conformance.sigstore.json"
"""GitHub's attestation bundle of the run (the Action's `attest`), kept beside the evidence: a
signature of the files, as the envelope is, checked by `gh attestation verify --bundle`."""
# What verify parses, with the most of each it reads (inflated): every other file is hashed as
# it is read. A statement of a full run is a few hundred KiB, an envelope a few dozen.
DOCUMENTS = {STATEMENT: 16 * 1024 * 1024, MANIFEST: 1024 * 1024, ENVELOPE: 4 * 1024 * 1024}
HOLDS = {*REPORTS, MANIFEST, BASELINE, ENVELOPE}  # every name a package may hold


def read(path: Path) -> Contents:
    """The package's members, within the limits of conformance.reports.contents."""
    return read_members(path, DOCUMENTS)


def load(data: bytes) -> object:
    """A document of a package: strict JSON, each name once, nested within bounds."""
    return strict_json.loads(data, unique_keys=True)


def open_manifest(contents: Contents) -> dict:
    if MANIFEST not in contents.members:
        raise Unreadable(f"not a petstore-conformance package: no {MANIFEST}")
    data = contents.data(MANIFEST)
    if data is None:
        return {"files": {}, "damaged": True}
    try:
        manifest = load(data)
    except ValueError as error:
        raise Unreadable(f"{MANIFEST} is not JSON this checker reads ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise Unreadable(f"{MANIFEST} is not a {FORMAT} manifest")
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(d, str) for d in files.values()):
        raise Unreadable(f"{MANIFEST} has no list of files with their sha256")
    if STATEMENT not in files:
        raise Unreadable(f"{MANIFEST} lists no {STATEMENT}")
    return manifest


def file_problems(contents: Contents, manifest: dict) -> tuple[list[str], dict]:
    """Every listed file present with its hash, nothing unlisted, nothing a package does not
    hold; and the statement, if sound."""
    problems = list(contents.problems)
    if manifest.get("damaged"):
        problems.append(f"{MANIFEST} is damaged (its zip checksum does not match)")
    listed = manifest["files"]
    present = set(contents.members)
    for name in sorted(present - HOLDS):
        problems.append(f"{name} is not a file a package holds")
    for name in sorted(present & HOLDS - set(listed) - {MANIFEST}):
        problems.append(f"{name} is not listed in the manifest")
    statement = {}
    for name, digest in listed.items():
        member = contents.members.get(name)
        if member is None and name in contents.refused:
            continue  # said: twice, or a name or kind refused
        if member is None:
            problems.append(f"{name} is listed but missing")
        elif member.damaged or member.sha256 != digest:
            problems.append(f"{name} was altered: its sha256 is not the manifest's")
        elif name == STATEMENT:
            statement = parse_statement(contents.data(name) or b"", problems)
    return problems, statement


def parse_statement(data: bytes, problems: list[str]) -> dict:
    try:
        statement = load(data)
    except ValueError as error:
        problems.append(f"{STATEMENT} is not JSON this checker reads ({error})")
        return {}
    if not isinstance(statement, dict):
        problems.append(f"{STATEMENT} is not a JSON object")
        return {}
    return statement


def outcome_problems(entry: dict, strict: bool) -> list[str]:
    """An outcome must follow from the entry's own counts and level."""
    requirement, outcome = entry.get("id"), entry.get("outcome")
    checks, failed = entry.get("checks"), entry.get("failed_checks")
    if outcome not in OUTCOMES or not isinstance(checks, int) or not isinstance(failed, int):
        return [f"{requirement}: no outcome, checks and failed_checks"]
    follows = {
        "passed": checks > 0 and failed == 0,
        "failed": failed > 0 and (entry.get("level") == "MUST" or strict),
        "warned": failed > 0 and entry.get("level") == "SHOULD" and not strict,
        "not-tested": checks == 0,
    }[outcome]
    return [] if follows else [f"{requirement}: {outcome} does not follow from its checks"]


def expected_exit(statement: dict, failed: list[str]) -> set[int]:
    """The exit statuses the statement's verdict and expected-failure lists allow."""
    if statement.get("verdict") == "no verdict":
        return {2}
    unexpected = statement.get("unexpected_failures", failed)
    if (
        unexpected
        or statement.get("stale_expected_failures")
        or statement.get("expired_expected_failures")
    ):
        return {1}
    # Every failure excused: 0, or 2 when the run could not have decided anyway.
    return {0, 2} if failed else {0}


def statement_problems(statement: dict) -> list[str]:
    """Does the stated verdict follow from the stated requirement outcomes?"""
    entries = statement.get("requirements")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return [f"{STATEMENT} has no requirement entries"]
    strict = statement.get("strict") is True
    problems = [p for e in entries for p in outcome_problems(e, strict)]
    failed = [e.get("id") for e in entries if e.get("outcome") == "failed"]
    warned = [e.get("id") for e in entries if e.get("outcome") == "warned"]
    verdict = statement.get("verdict")
    if statement.get("failed_requirements") != failed:
        problems.append("failed_requirements is not the list of failed requirements")
    if statement.get("warned_requirements", warned) != warned:
        problems.append("warned_requirements is not the list of warned requirements")
    if (verdict == "not conformant") != bool(failed) or verdict not in (
        "conformant",
        "not conformant",
        "no verdict",
    ):
        problems.append(f"the verdict {verdict!r} does not follow from {len(failed)} failed MUST")
    excused = [e.get("id") for e in statement.get("expected_failures", [])]
    if sorted(excused + statement.get("unexpected_failures", failed)) != sorted(failed):
        problems.append("expected and unexpected failures do not add up to the failed ones")
    if statement.get("exit_status") not in expected_exit(statement, failed):
        problems.append(f"exit status {statement.get('exit_status')} does not follow")
    return problems


MANIFEST_FIELDS = {"format", "suite", *FACTS, "packaged", "files"}


def manifest_problems(manifest: dict, statement: dict) -> list[str]:
    """Every field of the manifest is one the statement gives, or a fixed one: unsigned, it
    says nothing the signed files do not."""
    problems = [
        f"the manifest's {name} is not the statement's"
        for name in FACTS
        if manifest.get(name) != statement.get(name)
    ]
    problems += [
        f"the manifest holds {name!r}, which a manifest does not"
        for name in sorted(set(manifest) - MANIFEST_FIELDS - {"damaged"})
    ]
    if manifest.get("suite") != "petstore-conformance":
        problems.append("the manifest's suite is not petstore-conformance")
    if not isinstance(manifest.get("packaged"), str) or not PACKAGED.fullmatch(
        manifest["packaged"]
    ):
        problems.append("the manifest's packaged time is not a UTC time")
    return problems


@dataclass
class Examined:
    """A package's summary line, its problems, and the notes worth reading when it holds."""

    summary: str
    problems: list[str]
    notes: list[str]
    files: int


def examine(path: Path, contents: Contents) -> Examined:
    """The package's own checks; Unreadable where it is not a package."""
    manifest = open_manifest(contents)
    problems, statement = file_problems(contents, manifest)
    if statement:
        problems += manifest_problems(manifest, statement)
        try:
            problems += statement_problems(statement)
        except (TypeError, AttributeError):  # a field of the wrong type: edited by hand
            problems.append(f"{STATEMENT} has fields of the wrong type")
    notes = local_spec_note(manifest) + connection_note(statement)
    return Examined(summary(manifest), problems, notes, len(manifest["files"]))


def open_and_examine(path: Path) -> tuple[Contents, Examined]:
    """Read and examine; Unreadable (one line) where the zip cannot be read."""
    try:
        contents = read(path)
        return contents, examine(path, contents)
    except (OSError, zipfile.BadZipFile) as error:
        reason = getattr(error, "strerror", None) or "not a zip file"
        raise Unreadable(f"cannot read {path}: {reason}") from None
    except Unreadable as error:
        raise Unreadable(f"{path}: {error}") from None


def verify(path: Path) -> tuple[int, list[str]]:
    """(exit status, lines to print): 0 intact, 1 altered or inconsistent, 2 unreadable."""
    try:
        _, examined = open_and_examine(path)
    except Unreadable as error:
        return UNREADABLE, [str(error)]
    lines = [examined.summary, *(f"problem: {p}" for p in examined.problems)]
    if examined.problems:
        lines.append(f"{path}: altered or inconsistent ({len(examined.problems)} problem(s))")
        return ALTERED, lines
    return INTACT, [
        *lines,
        *examined.notes,
        f"{path}: intact ({examined.files} files match the manifest) and consistent "
        "(the verdict follows from the requirement outcomes); the hashes show integrity, not "
        "who made the package",
    ]


def summary(manifest: dict) -> str:
    return (
        f"package of petstore-conformance {manifest.get('suite_version')}, run "
        f"{manifest.get('run_id')} of {manifest.get('time')}: target {manifest.get('target')}, "
        f"plan {manifest.get('plan')}, profile {manifest.get('profile')}, verdict "
        f"{manifest.get('result') or manifest.get('verdict')} (exit {manifest.get('exit_status')})"
    )


def local_spec_note(manifest: dict) -> list[str]:
    """Whether the package was made against the same interface files as this checker's."""
    same = (
        manifest.get("spec_sha256") == spec.openapi_sha256()
        and manifest.get("interface_sha256") == spec.interface_sha256()
    )
    if same:
        return ["the package's openapi.yaml and interface.md are this checker's own"]
    return ["note: the package's openapi.yaml or interface.md differ from this checker's own"]


def connection_note(statement: dict) -> list[str]:
    """How the packaged run reached its target; said loudly when it did not verify the
    certificate, since the hashes cannot show who answered such a run."""
    fields = statement.get("connection")
    if not isinstance(fields, dict):
        return []  # a package made before the statement said so
    line = f"connection: {connection.describe(fields)}"
    if fields.get("insecure"):
        line = f"warning: {connection.INSECURE_WARNING}; {line}"
    return [line]
