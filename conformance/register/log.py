"""The register's append-only log, `log.jsonl`: one event a line (registered, superseded,
expired, revoked, key withdrawn, policy changed), each line naming the sha256 of the line
before it, so that a line removed or changed breaks the chain after it. `audit(old, new)` says
whether a newer log extends an older one: every old line kept, byte for byte.

A line is canonical JSON (keys sorted, no white space, UTF-8) followed by a newline; its sha256
is that of its bytes without the newline.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

NAME = "log.jsonl"
MAX_LINE_BYTES = 64 * 1024
MAX_LOG_BYTES = 512 * 1024 * 1024


class Broken(ValueError):
    """A log that is not one this register wrote; one line, naming the line."""


def digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def encode(event: dict) -> bytes:
    return json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def lines_of(path: Path) -> list[bytes]:
    """The log's lines (without their newlines); [] where there is no log."""
    if not path.is_file():
        return []
    if path.stat().st_size > MAX_LOG_BYTES:
        raise Broken(f"{path}: larger than {MAX_LOG_BYTES} bytes")
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        raise Broken(f"{path}: its last line is cut (no newline)")
    return data.splitlines()


def check(lines: list[bytes], where: str = NAME) -> None:
    """Each line an event of this log, numbered in order, naming the sha256 of the one before."""
    previous = None
    for number, line in enumerate(lines, 1):
        try:
            event = json.loads(line) if len(line) <= MAX_LINE_BYTES else None
        except ValueError:
            event = None
        if not isinstance(event, dict) or event.get("line") != number:
            raise Broken(f"{where} line {number}: not an event of this log")
        if event.get("previous") != previous:
            raise Broken(f"{where} line {number}: does not name the sha256 of line {number - 1}")
        previous = digest(line)


class Log:
    """The log as read, and the events this run appends."""

    def __init__(self, lines: list[bytes]):
        check(lines)
        self.lines = list(lines)

    @classmethod
    def read(cls, folder: Path) -> Log:
        return cls(lines_of(folder / NAME))

    @property
    def head(self) -> str | None:
        return digest(self.lines[-1]) if self.lines else None

    def append(self, time: str, event: str, **fields) -> None:
        line = encode(
            {"line": len(self.lines) + 1, "previous": self.head, "time": time, "event": event,
             **fields}
        )  # fmt: skip
        self.lines.append(line)

    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)


def first_difference(old: list[bytes], new: list[bytes]) -> str | None:
    """Where `new` stops extending `old`; None where every old line is kept, unchanged."""
    for number, line in enumerate(old, 1):
        if number > len(new):
            return f"line {number} of the old log is missing from the new one"
        if new[number - 1] != line:
            return f"line {number} differs"
    return None
