"""One register run, into the new site folder (conformance.register.writing makes it and swaps
it in): the last register's published files kept, each upload judged and, when it enters the
history, its package and key published under their digests, the history re-judged where the
keyring or the policy changed, revocations applied, statuses settled and logged, the body's
summaries and checkpoint signed, and the pages, badges, register.json and log written.

Only what is new costs: the last register's packages, keys and summaries are linked, not
verified again, unless the keyring's or the policy's sha256 changed.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from conformance import strict_json
from conformance.register import body, history, site
from conformance.register.entries import TIME_FORMAT, parse_time
from conformance.register.log import NAME as LOG
from conformance.register.verifying import (
    MAX_ENVELOPE_BYTES,
    MAX_PACKAGE_BYTES,
    display_name,
    member,
)
from conformance.register.writing import keep, put
from conformance.regular_file import is_regular
from conformance.reports.attestation import ENVELOPE

PROGRESS_EVERY = 2.0  # seconds between progress lines
KEPT = ("packages", "keys", "summaries")  # named by digests: the same bytes every night
CHECKPOINT, BODY_KEY = "checkpoint.intoto.jsonl", "body.pub.pem"
CHUNK = 1 << 20


def clock() -> datetime.datetime:
    """The body's clock: the time of every event this run logs."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def public_pem(path: Path) -> bytes:
    """A vendor's key as published: its public PEM, whatever form the keyring gave it in."""
    key = serialization.load_pem_public_key(path.read_bytes())
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@dataclass
class Result:
    history: history.History
    out: Path
    uploads: int
    time: str
    new: int = 0
    known: int = 0
    unpublished: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)

    def counts(self) -> str:
        statuses = [r["status"] for r in self.history.records]
        said = ", ".join(
            f"{statuses.count(s)} {s}"
            for s in (history.CERTIFIED, history.SUPERSEDED, history.EXPIRED, history.REVOKED)
        )
        return (
            f"{said}; {len(self.history.failures)} verified but not certified published, "
            f"{len(self.unpublished)} not published"
        )

    def report(self, arguments) -> int:
        print(
            f"register {self.out / 'index.html'}: {self.counts()}; {self.new} new of "
            f"{self.uploads} package(s), {self.known} already registered, {len(self.rejected)} "
            "rejected"
        )
        for path, reason in self.unpublished:
            say(f"not certified, not published: {site.shown(path)}: {site.shown(reason)}")
        for path, reason in self.rejected:
            say(f"rejected {site.shown(path)}: {site.shown(reason)}")
        if arguments.rejections is not None:  # appended: the body's record of every night
            with arguments.rejections.open("a", encoding="utf-8") as record:
                for path, reason in self.rejected:
                    line = {"time": self.time, "package": path, "reason": reason}
                    record.write(json.dumps(line, ensure_ascii=False) + "\n")
        return 1 if self.rejected else 0


def say(line: str) -> None:
    print(f"petstore-conformance: register: {line}", file=sys.stderr, flush=True)


class Run:
    def __init__(self, arguments, keyring, policy, signer, past, made: Path, progress):
        self.arguments, self.keyring, self.policy, self.signer = arguments, keyring, policy, signer
        self.past, self.made, self.progress = past, made, progress
        self.out: Path = arguments.out
        self.now = clock()
        self.seen: dict[str, str] = {}  # package sha256: the upload it was first seen as
        self.time = self.now.strftime(TIME_FORMAT)

    def register(self, paths: list[Path], judge) -> Result:
        result = Result(self.past, self.out, len(paths), self.time)
        for name in KEPT:
            for old in (self.out / name).glob("*"):
                keep(old, self.made / name / old.name)
        self.rejudge(judge)
        self.uploads(paths, judge, result)
        history.revoke(self.past, self.keyring.revocations, self.now)
        history.settle(self.past, self.now)
        self.write()
        return result

    # -- judging --------------------------------------------------------------------------------

    def uploads(self, paths: list[Path], judge, result: Result) -> None:
        last = time.monotonic()
        for number, path in enumerate(paths, 1):
            self.upload(path, judge, result)
            if time.monotonic() - last >= PROGRESS_EVERY or number == len(paths):
                last = time.monotonic()
                self.progress(
                    f"{number} of {len(paths)} packages: {result.new} new, {result.known} "
                    f"already registered, {len(result.rejected)} rejected"
                )

    def upload(self, path: Path, judge, result: Result) -> None:
        """The upload judged from a copy of it in the new site, the bytes that are published."""
        incoming = self.made / "packages" / ".incoming.zip"
        found = self.copied(path, incoming)
        if found is None:
            found = judge(incoming, self.now, None)
        if isinstance(found, str):
            incoming.unlink(missing_ok=True)
            result.rejected.append((display_name(path), found))
            return
        first = self.seen.setdefault(found.package_sha256, display_name(path))
        if first != display_name(path) or self.past.known(found.package_sha256):
            incoming.unlink()
            result.known += 1
            self.progress(f"{display_name(path)}: a copy of {first}, already judged; counted once")
            return
        if found.reason is not None and not self.arguments.publish_failures:
            incoming.unlink()
            result.unpublished.append((display_name(path), found.reason))
            return
        self.publish(found, incoming)
        result.new += 1

    @staticmethod
    def copied(path: Path, incoming: Path) -> str | None:
        """The upload copied (a regular file, no larger than a package); the reason it cannot
        be, or None. The copy is what is judged and published: one set of bytes."""
        if not is_regular(path):
            return "not a regular file"
        with path.open("rb") as source, incoming.open("xb") as copy:
            while chunk := source.read(CHUNK):
                copy.write(chunk)
                if copy.tell() > MAX_PACKAGE_BYTES:
                    return f"more than a package can be ({MAX_PACKAGE_BYTES} bytes)"
        return None

    def publish(self, found, incoming: Path) -> None:
        envelope = member(incoming, ENVELOPE, MAX_ENVELOPE_BYTES) or b""
        made = history.record(found, self.time, hashlib.sha256(envelope).hexdigest())
        incoming.rename(self.made / made["package"])
        key = self.made / made["key"]
        if not key.exists():
            put(key, public_pem(found.key_path))
        (self.past.records if found.reason is None else self.past.failures).append(made)
        self.past.log.append(
            self.time, "registered", certificate=made["page"],
            package_sha256=made["package_sha256"],
            vendor=made["vendor"], implementation=made["implementation"], run_id=made["run_id"],
            key_fingerprint=made["key_fingerprint"], status=made["status"],
        )  # fmt: skip

    def rejudge(self, judge) -> None:
        """Where the keyring or the policy changed since the last run, every certificate judged
        again, as of its first registration; one that no longer holds is revoked, saying why."""
        fingerprints = sorted({k.fingerprint for ks in self.keyring.vendors.values() for k in ks})
        for gone in sorted(set(self.past.key_fingerprints) - set(fingerprints)):
            self.past.log.append(self.time, "key withdrawn", key_fingerprint=gone)
        if self.past.policy_sha256 != self.policy.sha256:
            self.past.log.append(
                self.time,
                "policy changed",
                uri=self.policy.uri,
                sha256=self.policy.sha256,
                previous=self.past.policy_sha256,
            )
        unchanged = (self.past.keyring_sha256, self.past.policy_sha256) == (
            self.keyring.sha256, self.policy.sha256)  # fmt: skip
        self.past.keyring_sha256, self.past.policy_sha256 = self.keyring.sha256, self.policy.sha256
        self.past.key_fingerprints = fingerprints
        if unchanged:
            return
        revocations = self.keyring.revocations
        for found in self.past.records:
            # A revocation is applied as the body wrote it (history.revoke), not as a rejudging.
            if found["revoked"] is not None or any(
                r.matches(found["run_id"], found["package_sha256"]) for r in revocations
            ):
                continue
            first_seen = parse_time(found["first_seen"])
            # As of its registration: expiry since is a status, not a reason to revoke.
            again = judge(self.made / found["package"], first_seen, first_seen)
            if isinstance(again, str):
                history.withdraw(found, f"no longer verifies: {again}", self.now)
            elif again.reason is not None:
                history.withdraw(found, f"no longer certified: {again.reason}", self.now)

    # -- writing --------------------------------------------------------------------------------

    def write(self) -> None:
        body_name, signed = self.arguments.body, self.signer is not None
        everything = self.past.everything()
        if signed:
            self.sign_summaries(everything)
            put(self.made / BODY_KEY, self.body_key())
        put(self.made / "style.css", site.STYLE.encode())
        for found in everything:
            page = site.certificate(found, body_name, self.now, signed)
            put(self.made / found["page"], page.encode("utf-8"))
        for path, (status, version) in history.badges(self.past).items():
            put(self.made / path, site.badge_svg(status, version).encode("utf-8"))
        index = site.index(self.past, self.arguments.title, body_name, self.now, signed)
        put(self.made / "index.html", index.encode("utf-8"))
        log = self.past.log.data()
        put(self.made / LOG, log)
        register = self.register_json(signed)
        put(self.made / "register.json", register)
        if signed:
            made = body.checkpoint(hashlib.sha256(log).hexdigest(), len(self.past.log.lines),
                                   self.past.log.head, hashlib.sha256(register).hexdigest(),
                                   self.time)  # fmt: skip
            put(self.made / CHECKPOINT, body.signed(made, self.signer))

    def sign_summaries(self, everything: list[dict]) -> None:
        for found in everything:
            if found["summary"] is None:
                found["summary"] = f"summaries/{found['package_sha256']}.intoto.jsonl"
                made = body.summary(found, self.arguments.body_id, self.policy,
                                    found["envelope_sha256"])  # fmt: skip
                put(self.made / found["summary"], body.signed(made, self.signer))

    def body_key(self) -> bytes:
        key = serialization.load_pem_private_key(self.arguments.sign_key.read_bytes(), None)
        return key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def register_json(self, signed: bool) -> bytes:
        past = self.past
        document = {
            "register": "petstore-conformance",
            "title": self.arguments.title,
            "generated": self.time,
            "valid_days": self.arguments.valid_days,
            "body": {"name": self.arguments.body, "id": self.arguments.body_id,
                     "key": BODY_KEY if signed else None},
            "policy": {"uri": self.policy.uri, "sha256": self.policy.sha256},
            "certificates": past.records,
            "not_certified": past.failures,
            "log": {"lines": len(past.log.lines), "head": past.log.head},
            "checkpoint": CHECKPOINT if signed else None,
            "state": {"keyring_sha256": past.keyring_sha256, "policy_sha256": past.policy_sha256,
                      "key_fingerprints": past.key_fingerprints},
        }  # fmt: skip
        return (strict_json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
