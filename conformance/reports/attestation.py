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

from conformance import signing_keys as keys
from conformance import strict_json
from conformance.reports.contents import Contents
from conformance.reports.package import (
    BASELINE,
    ENVELOPE,
    GITHUB_BUNDLE,
    MANIFEST,
    REPORTS,
    STATEMENT,
    sha256,
)

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


def where(document: dict) -> dict:
    """The target as a descriptor's `uri` (a server's URL), or as its `content` where it is no
    URI (a client run's command line)."""
    target = str(document.get("target") or "")
    return {"uri": target} if "://" in target else {"content": target.encode("utf-8")}


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
    target = where(document)
    descriptors = [
        # Every descriptor has a uri, a digest or a content (the ResourceDescriptor spec's
        # MUST): the suite as its package URL, the run as its target's URI.
        ResourceDescriptor(
            name="petstore-conformance",
            uri=f"pkg:pypi/petstore-conformance@{document.get('suite_version')}",
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
            **target,
            annotations=text_values(
                {
                    "bundledReference": document.get("bundled_reference"),
                    "certificateVerified": not connection.get("insecure", False),
                }
            ),
        ),
        ResourceDescriptor(name="run", **target, annotations=text_values(run)),
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


def envelopes(data: bytes) -> list[Envelope]:
    """The DSSE envelopes of a .jsonl bundle. A line that is not one is ignored, as in-toto's
    bundle format asks of a consumer; each line is read as strict JSON with each name once."""
    found = []
    for line in data.splitlines():
        try:
            document = strict_json.loads(line, unique_keys=True) if line.strip() else None
            if isinstance(document, dict) and isinstance(document.get("signatures"), list):
                found.append(Envelope.from_dict(document))
        except (ValueError, KeyError, TypeError, AttributeError, FormatError, binascii.Error):
            continue
    return found


def signed_statement(bundle: list[Envelope], key: SSlibKey) -> dict:
    """The Statement of the envelope that verifies with `key`; ValueError where none does, or
    where two that do say different things (a reader could take either)."""
    payloads = {e.payload for e in bundle if e.payload_type == PAYLOAD_TYPE and verifies(e, key)}
    if not payloads:
        raise ValueError(
            f"the signature does not verify with the {keys.describe(key)}: signed with another "
            f"key, or the envelope was altered ({len(bundle)} envelope(s) in {ENVELOPE})"
        )
    if len(payloads) > 1:
        raise ValueError(f"{len(payloads)} envelopes verify with the key and say different things")
    try:
        statement = strict_json.loads(payloads.pop(), unique_keys=True)
    except ValueError as error:
        raise ValueError(f"the signed payload is not JSON this checker reads ({error})") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE_URI:
        raise ValueError("the signed payload is not an in-toto Statement v1")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise ValueError(f"the signed predicate is {statement.get('predicateType')!r}")
    shape_problem = statement_shape(statement)
    if shape_problem:
        raise ValueError(f"the signed Statement's {shape_problem}")
    return statement


def verifies(envelope: Envelope, key: SSlibKey) -> bool:
    """With the key under the keyid go-securesystemslib computes (the one written), or
    python-securesystemslib's (envelopes signed before)."""
    try:
        envelope.verify(keys.known_ids(key), 1)
        return True
    except (VerificationError, ValueError):
        return False


def statement_shape(statement: dict) -> str | None:
    """What in the Statement is not of the shape `verify` reads; None when all is."""
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not all(
        isinstance(s, dict)
        and isinstance(s.get("name"), str)
        and isinstance(s.get("digest"), dict)
        and isinstance(s["digest"].get("sha256"), str)
        for s in subjects
    ):
        return "subjects are not a list of names with their sha256"
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict) or not isinstance(predicate.get("result"), str):
        return "predicate has no result"
    for name in ("passedTests", "warnedTests", "failedTests"):
        tests = predicate.get(name, [])
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            return f"{name} is not a list of requirement ids"
    configuration = predicate.get("configuration", [])
    if not isinstance(configuration, list) or not all(isinstance(c, dict) for c in configuration):
        return "configuration is not a list of resource descriptors"
    return None


def signed_digests(statement: dict) -> dict[str, str]:
    """What the Statement signs, by name: its subjects, and the expected-failures file the
    exit status was judged with (a configuration entry, by sha256)."""
    digests = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    for entry in statement["predicate"].get("configuration", []):
        digest = entry.get("digest")
        if entry.get("name") == BASELINE and isinstance(digest, dict):
            digests.setdefault(BASELINE, digest.get("sha256"))
    return digests


def subject_problems(statement: dict, contents: Contents, in_package: bool) -> list[str]:
    """Every signed file present with its signed sha256, and every file there signed: the
    envelope itself aside, and a package's manifest, whose every field package.py checks
    against the signed statement."""
    problems = []
    signed = signed_digests(statement)
    for name, digest in signed.items():
        member = contents.members.get(name)
        if member is None and name in contents.refused:
            continue  # said: twice, or a name or kind refused
        if member is None:
            if name != BASELINE:
                problems.append(f"{name} is signed but missing")
        elif member.damaged or member.sha256 != digest:
            problems.append(f"{name} was altered since it was signed (not the signed sha256)")
    signatures = {ENVELOPE} | ({MANIFEST} if in_package else {GITHUB_BUNDLE})
    unsigned = set(contents.members) - set(signed) - signatures
    problems += [f"{name} is not signed" for name in sorted(unsigned)]
    return problems


def predicate_problems(statement: dict, contents: Contents) -> list[str]:
    """The signed result says what the signed conformance.json says."""
    try:
        document = strict_json.loads(contents.data(STATEMENT) or b"", unique_keys=True)
    except ValueError:
        return []  # said by subject_problems, or by the package's checks
    if not isinstance(document, dict):
        return []  # said by the statement's own checks
    predicate = statement["predicate"]
    problems = []
    if predicate.get("result") != result_of(document):
        said = predicate.get("result")
        problems.append(f"the signed result {said!r} is not what {STATEMENT} says")
    if predicate.get("failedTests", []) != (document.get("failed_requirements") or []):
        problems.append(f"the signed failed tests are not {STATEMENT}'s failed requirements")
    return problems


def check(contents: Contents, key: SSlibKey, in_package: bool) -> tuple[dict, list[str]]:
    """(the signed Statement, problems): none when `key` signed exactly these files."""
    data = contents.data(ENVELOPE)
    if data is None:
        return {}, [f"no {ENVELOPE}: these files are not signed"]
    try:
        statement = signed_statement(envelopes(data), key)
    except ValueError as error:
        return {}, [str(error)]
    problems = subject_problems(statement, contents, in_package)
    return statement, problems + predicate_problems(statement, contents)


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
