"""The run as an in-toto attestation: a Statement whose subjects are the report files (by
sha256) and whose predicate is in-toto's test-result v0.1, signed in a DSSE envelope with the
vendor's key (`--sign-key`) and written as `conformance.intoto.jsonl`.

The hashes of a package show that nothing changed since packaging, not who packaged it: anyone
can edit `conformance.json` and write a new manifest. A signature over the digests binds the
files to the holder of a key the receiver already trusts. It says nothing about what the key
holder pointed the checker at.

The Statement is made from the report folder as written (`conformance.json` read back), so that
it says exactly what the files say, and `petstore-conformance intoto DIR` can hand the same
Statement to another signer (GitHub's artifact attestations, cosign). The models and the DSSE
encoding are the official libraries' (in-toto-attestation, securesystemslib), not ours.
"""

from __future__ import annotations

import binascii
import json
import sys
from pathlib import Path

from google.protobuf import json_format
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import STATEMENT_TYPE_URI, Statement
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import FormatError, VerificationError
from securesystemslib.signer import Signer, SSlibKey

from conformance import strict_json
from conformance.reports import keys
from conformance.reports.package import REPORTS, STATEMENT, sha256

ENVELOPE = "conformance.intoto.jsonl"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
# test-result's result, from the verdict: a run that decided nothing proved nothing either.
PASSED, WARNED, FAILED = "PASSED", "WARNED", "FAILED"


class Unreadable(Exception):
    """A report folder the Statement cannot be made from; one line."""


def result_of(document: dict) -> str:
    if document.get("verdict") != "conformant":
        return FAILED  # not conformant, or no verdict (its reason is in the subject's annotations)
    return WARNED if document.get("warned_requirements") else PASSED


def text_values(values: dict) -> dict:
    """Annotations are a protobuf Struct, whose numbers are doubles: a seed of 2**60 would come
    out rounded, so whole numbers are written as their text. Absent values are left out."""
    return {
        name: str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        for name, value in values.items()
        if value is not None
    }


def configuration(document: dict, baseline: bytes | None) -> list[ResourceDescriptor]:
    """What the run was: the suite, the interface it checks against, the target and how."""
    run = {
        "vendor": document.get("vendor"),
        "implementation": document.get("implementation"),
        "plan": document.get("plan"),
        "planLimits": document.get("plan_limits"),
        "profile": document.get("profile"),
        "strict": document.get("strict"),
        "seed": document.get("seed"),
        "userAgent": document.get("user_agent"),
        "runId": document.get("run_id"),
        "startedAt": document.get("time"),
        "finishedAt": document.get("finished"),
    }
    limits = run["planLimits"] if isinstance(run["planLimits"], dict) else {}
    run["planLimits"] = text_values(
        {
            "requestsPerMinute": limits.get("requests_per_minute"),
            "requestsPerDay": limits.get("requests_per_day"),
        }
    )
    connection = document.get("connection") or {}
    descriptors = [
        ResourceDescriptor(
            name="petstore-conformance",
            annotations={"version": document.get("suite_version")},
        ),
        ResourceDescriptor(
            name="interface.md",
            digest={"sha256": document.get("interface_sha256")},
            annotations={"version": document.get("spec_version")},
        ),
        ResourceDescriptor(name="openapi.yaml", digest={"sha256": document.get("spec_sha256")}),
        ResourceDescriptor(
            name="target",
            uri=document.get("target") or "",
            annotations=text_values(
                {
                    "bundledReference": document.get("bundled_reference"),
                    "certificateVerified": not connection.get("insecure", False),
                }
            ),
        ),
        ResourceDescriptor(name="run", annotations=text_values(run)),
    ]
    if baseline is not None:  # the expected failures the exit status was judged with
        descriptors.append(
            ResourceDescriptor(name="expected-failures.yaml", digest={"sha256": sha256(baseline)})
        )
    return descriptors


def verdict_annotations(document: dict) -> dict:
    """On the `conformance.json` subject: its verdict, and why, in the statement's own words."""
    return text_values(
        {
            "verdict": document.get("verdict"),
            "result": document.get("result"),
            "exitStatus": document.get("exit_status"),
            "reason": document.get("reason") or document.get("result_reason"),
        }
    )


def outcome_ids(document: dict, outcome: str) -> list[str]:
    return [
        entry["id"]
        for entry in document.get("requirements") or []
        if isinstance(entry, dict) and entry.get("outcome") == outcome
    ]


def make_statement(report_dir: Path, baseline: Path | None = None) -> dict:
    """The in-toto Statement of the report folder as it is now."""
    files = {name: report_dir / name for name in REPORTS if (report_dir / name).is_file()}
    if STATEMENT not in files:
        raise Unreadable(f"{report_dir}: no {STATEMENT}")
    data = {name: path.read_bytes() for name, path in files.items()}
    try:
        document = json.loads(data[STATEMENT])
    except ValueError:
        raise Unreadable(f"{report_dir / STATEMENT} is not JSON") from None
    if not isinstance(document, dict):
        raise Unreadable(f"{report_dir / STATEMENT} is not a conformance statement")
    subjects = [
        ResourceDescriptor(
            name=name,
            digest={"sha256": sha256(content)},
            annotations=verdict_annotations(document) if name == STATEMENT else None,
        ).pb
        for name, content in data.items()
    ]
    predicate = test_result_pb2.TestResult(
        result=result_of(document),
        configuration=[d.pb for d in configuration(document, baseline_bytes(baseline))],
        passed_tests=outcome_ids(document, "passed"),
        warned_tests=outcome_ids(document, "warned"),
        failed_tests=document.get("failed_requirements") or [],
    )
    predicate_fields = json_format.MessageToDict(predicate)
    for name in ("passedTests", "warnedTests", "failedTests"):
        predicate_fields.setdefault(name, [])  # an empty list said, not left for the reader
    statement = Statement(subjects, PREDICATE_TYPE, predicate_fields)
    statement.validate()
    return json_format.MessageToDict(statement.pb)


def baseline_bytes(path: Path | None) -> bytes | None:
    try:
        return path.read_bytes() if path is not None else None
    except OSError:
        return None


def envelope_line(statement: dict, signer: Signer) -> str:
    """One DSSE envelope of the Statement, signed, as one line of JSON (in-toto's .jsonl)."""
    payload = strict_json.dumps(statement, separators=(",", ":"), ensure_ascii=False)
    envelope = Envelope(payload.encode("utf-8"), PAYLOAD_TYPE, {})
    envelope.sign(signer)
    return json.dumps(envelope.to_dict(), separators=(",", ":")) + "\n"


def write(report_dir: Path, signer: Signer, baseline: Path | None = None) -> Path:
    """Sign the report folder: `conformance.intoto.jsonl` beside the reports it names."""
    path = report_dir / ENVELOPE
    partial = path.with_name(path.name + ".partial")
    partial.write_text(envelope_line(make_statement(report_dir, baseline), signer), "utf-8")
    partial.replace(path)
    return path


# -- checking a signed folder or package --------------------------------------------------------


def open_envelope(data: bytes) -> Envelope:
    """The one envelope of a .jsonl file; ValueError (one line) where it is none."""
    lines = [line for line in data.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ValueError(f"{ENVELOPE} holds {len(lines)} lines, not one envelope")
    try:
        document = json.loads(lines[0])
        if not isinstance(document, dict) or not isinstance(document.get("signatures"), list):
            raise ValueError
        return Envelope.from_dict(document)
    except (ValueError, KeyError, TypeError, AttributeError, FormatError, binascii.Error):
        raise ValueError(f"{ENVELOPE} is not a DSSE envelope") from None


def signed_statement(envelope: Envelope, key: SSlibKey) -> dict:
    """The Statement, once the signature verifies with `key`; ValueError otherwise."""
    if envelope.payload_type != PAYLOAD_TYPE:
        raise ValueError(f"the envelope's payload type is {envelope.payload_type!r}")
    try:
        envelope.verify([key], 1)
    except VerificationError:
        raise ValueError(
            f"the signature does not verify with the {keys.describe(key)}: signed with another "
            "key, or the envelope was altered"
        ) from None
    try:
        statement = json.loads(envelope.payload)
    except ValueError:
        statement = None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE_URI:
        raise ValueError("the signed payload is not an in-toto Statement v1")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise ValueError(f"the signed predicate is {statement.get('predicateType')!r}")
    return statement


def subject_problems(statement: dict, files: dict[str, bytes]) -> list[str]:
    """Every signed file present with its signed sha256, and every report among them."""
    problems = []
    subjects = statement.get("subject")
    if not isinstance(subjects, list):
        return ["the Statement has no subjects"]
    named = set()
    for subject in subjects:
        name = subject.get("name") if isinstance(subject, dict) else None
        digest = (subject.get("digest") or {}).get("sha256") if name else None
        named.add(name)
        if name not in files:
            problems.append(f"{name} is signed but missing")
        elif digest != sha256(files[name]):
            problems.append(f"{name} was altered since it was signed (not the signed sha256)")
    unsigned = [name for name in REPORTS if name in files and name not in named]
    problems += [f"{name} is not among the signed files" for name in unsigned]
    return problems


def predicate_problems(statement: dict, files: dict[str, bytes]) -> list[str]:
    """The signed result says what the signed conformance.json says."""
    try:
        document = json.loads(files[STATEMENT])
    except (KeyError, ValueError):
        return []  # said by subject_problems
    predicate = statement.get("predicate") or {}
    problems = []
    if predicate.get("result") != result_of(document):
        said = predicate.get("result")
        problems.append(f"the signed result {said!r} is not what {STATEMENT} says")
    if predicate.get("failedTests") != (document.get("failed_requirements") or []):
        problems.append(f"the signed failed tests are not {STATEMENT}'s failed requirements")
    return problems


def check(
    envelope_data: bytes | None, files: dict[str, bytes], key: SSlibKey
) -> tuple[dict, list[str]]:
    """(the signed Statement, problems): none when `key` signed exactly these files."""
    if envelope_data is None:
        return {}, [f"no {ENVELOPE}: these files are not signed"]
    try:
        statement = signed_statement(open_envelope(envelope_data), key)
    except ValueError as error:
        return {}, [str(error)]
    return statement, subject_problems(statement, files) + predicate_problems(statement, files)


def main(args: list[str]) -> int:
    """`petstore-conformance intoto DIR`: the folder's Statement, unsigned, on stdout, for a
    signer of the user's choice (GitHub's artifact attestations; cosign attest-blob)."""
    if len(args) != 1 or args[0].startswith("-"):
        print("petstore-conformance: usage: petstore-conformance intoto DIR", file=sys.stderr)
        return 2
    try:
        statement = make_statement(Path(args[0]))
    except (Unreadable, OSError) as error:
        print(f"petstore-conformance: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
        return 2
    print(strict_json.dumps(statement, indent=2, ensure_ascii=False))
    return 0
