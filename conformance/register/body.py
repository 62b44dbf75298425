"""What the certification body signs (`register --sign-key BODY.pem --body-id URI`), in DSSE
envelopes of in-toto Statements, as the vendor's run is signed (conformance.reports.attestation
makes and signs the envelope; nothing here is a second DSSE):

- for every entry it publishes, a SLSA verification summary (VSA v1): the package by name and
  sha256, the body as verifier, when it verified, the policy, the vendor's envelope it checked
  (by digest), PASSED or FAILED, and the level it grants;
- a checkpoint of its log: the log's sha256 and number of lines, register.json's sha256, the
  time. A visitor holding the body's public key checks both with `verify --key`, or with any
  DSSE verifier (go-securesystemslib's, in the tests).
"""

from __future__ import annotations

from google.protobuf import json_format
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import STATEMENT_TYPE_URI, Statement
from securesystemslib.signer import Signer, SSlibKey

from conformance import signing_keys as keys
from conformance import strict_json
from conformance.reports import attestation

VSA_TYPE = "https://slsa.dev/verification_summary/v1"
CHECKPOINT_TYPE = "urn:petstore-conformance:register-checkpoint:v1"
LEVEL = "PETSTORE_CONFORMANT_V1"
PASSED, FAILED = "PASSED", "FAILED"


def statement(subjects: list[ResourceDescriptor], predicate_type: str, predicate: dict) -> dict:
    made = Statement([s.pb for s in subjects], predicate_type, predicate)
    made.validate()
    return json_format.MessageToDict(made.pb)


def levels(record: dict) -> list[str]:
    """The levels a certificate grants: the suite's, and the suite's on its profile."""
    if record.get("reason") is not None:
        return []
    return [LEVEL, f"{LEVEL}_{str(record.get('profile')).upper()}"]


def summary(record: dict, body_id: str, policy, envelope_sha256: str) -> dict:
    """The VSA of one published entry (a dict of register.json)."""
    return statement(
        [ResourceDescriptor(name=f"{record['package_sha256']}.zip",
                            digest={"sha256": record["package_sha256"]})],
        VSA_TYPE,
        {
            "verifier": {"id": body_id},
            "timeVerified": record["first_seen"],
            "resourceUri": record["package"],
            "policy": {"uri": policy.uri, "digest": {"sha256": policy.sha256}},
            "inputAttestations": [
                {"uri": f"{record['package']}#{attestation.ENVELOPE}",
                 "digest": {"sha256": envelope_sha256}}
            ],
            "verificationResult": PASSED if record.get("reason") is None else FAILED,
            "verifiedLevels": levels(record),
        },
    )  # fmt: skip


def checkpoint(log_sha256: str, lines: int, head: str | None, register_sha256: str, time: str):
    """The signed head of the log, and of the register.json it goes with."""
    return statement(
        [
            ResourceDescriptor(name="log.jsonl", digest={"sha256": log_sha256}),
            ResourceDescriptor(name="register.json", digest={"sha256": register_sha256}),
        ],
        CHECKPOINT_TYPE,
        # The count as text: a predicate is a protobuf Struct, whose numbers are doubles (6.0).
        {"lines": str(lines), "head": head, "log": log_sha256, "register": register_sha256,
         "time": time},
    )  # fmt: skip


def signed(made: dict, signer: Signer) -> bytes:
    return attestation.envelope_line(made, signer).encode("utf-8")


def verified(data: bytes, key_path, predicate_type: str | None = None) -> dict:
    """The Statement of a body's envelope that verifies with the public key at `key_path` (or
    that key, loaded); ValueError (one line) where none does, or where it is neither a summary
    nor a checkpoint."""
    key = key_path if isinstance(key_path, SSlibKey) else keys.load_public_key(key_path)
    for envelope in attestation.envelopes(data):
        if envelope.payload_type != attestation.PAYLOAD_TYPE or not attestation.verifies(
            envelope, key
        ):
            continue
        try:
            found = strict_json.loads(envelope.payload, unique_keys=True)
        except ValueError:
            continue
        if not isinstance(found, dict) or found.get("_type") != STATEMENT_TYPE_URI:
            continue
        kind = found.get("predicateType")
        if kind in (VSA_TYPE, CHECKPOINT_TYPE) and predicate_type in (None, kind):
            return found
    raise ValueError(f"no body's summary or checkpoint here verifies with the {keys.describe(key)}")


def describe(found: dict) -> str:
    """One line for `verify`: what the verified envelope says."""
    predicate = found.get("predicate") or {}
    if found.get("predicateType") == CHECKPOINT_TYPE:
        return (
            f"checkpoint: log.jsonl of {predicate.get('lines')} line(s), sha256 "
            f"{predicate.get('log')}; register.json sha256 {predicate.get('register')}; at "
            f"{predicate.get('time')}"
        )
    subject = (found.get("subject") or [{}])[0]
    return (
        f"verification summary: {subject.get('name')} (sha256 "
        f"{(subject.get('digest') or {}).get('sha256')}) {predicate.get('verificationResult')}"
        f" by {(predicate.get('verifier') or {}).get('id')} at {predicate.get('timeVerified')}"
        f", levels {', '.join(predicate.get('verifiedLevels') or []) or 'none'}"
    )


MAX_ENVELOPE_BYTES = 4 * 1024 * 1024


def verify_file(path, key_path) -> tuple[int, list[str]]:
    """`petstore-conformance verify SUMMARY_OR_CHECKPOINT.intoto.jsonl --key BODY.pub.pem`:
    (0, what it says) where the body's envelope verifies; (1, why) where it does not."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ENVELOPE_BYTES + 1)
    except OSError as error:
        return 2, [f"cannot read {path}: {error.strerror}"]
    if len(data) > MAX_ENVELOPE_BYTES:
        return 2, [f"{path}: larger than {MAX_ENVELOPE_BYTES} bytes: not a body's envelope"]
    try:
        found = verified(data, key_path)
    except ValueError as error:
        return 1, [f"{path}: NOT verified: {error}"]
    return 0, [describe(found), f"{path}: verified: signed by the body's key {key_path}"]
