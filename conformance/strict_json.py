"""JSON as RFC 8259 defines it, both ways, whatever a target sends.

Reading a target's body: `NaN` and `Infinity` are not JSON (Python's parser takes them), a
number too large for a float (`1e999999`) is kept as its text rather than turned into an
infinity no strict parser would read back, and a body nested deeper than `MAX_DEPTH` is refused
as unreadable (RFC 8259 section 9 lets a parser limit nesting) rather than crashing the check
that reads it. Writing a report: never `NaN` or `Infinity`, whatever slipped through.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 128
"""Levels of nesting read; the interface's bodies have three at most."""


class OutOfRange(str):
    """A JSON number no float can hold, kept as the text the target sent."""


def loads(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """Parse a target's JSON; ValueError where it is not strict JSON or is nested too deep.
    `unique_keys`: a name twice in one object is refused too (RFC 8259 leaves it to the reader,
    and readers differ: Python keeps the last, others the first), for evidence whose every
    reader must see the same thing."""
    hook = _unique if unique_keys else None
    try:
        document = json.loads(
            text, parse_constant=_not_json, parse_float=_finite, object_pairs_hook=hook
        )
    except RecursionError:
        raise ValueError(f"JSON nested deeper than this checker reads ({MAX_DEPTH})") from None
    if _may_be_deep(text) and depth(document) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than this checker reads ({MAX_DEPTH})")
    return document


def dumps(document: Any, **options: Any) -> str:
    """`json.dumps` that writes strict JSON: a non-finite number becomes its text."""
    try:
        return json.dumps(document, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_finite_only(document), allow_nan=False, **options)


def depth(document: Any) -> int:
    """Levels of arrays and objects, counted a level at a time without recursion: each level's
    containers found by a comprehension, a quarter of the time of an item-by-item walk (a
    listing of 4 MB took half a second, every time it was read)."""
    levels = 0
    containers = [document] if isinstance(document, dict | list) else []
    while containers:
        levels += 1
        containers = [
            item
            for container in containers
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, dict | list)
        ]
    return levels


def _may_be_deep(text: str | bytes) -> bool:
    opening = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    return text.count(opening[0]) + text.count(opening[1]) > MAX_DEPTH


def _unique(pairs: list[tuple[str, Any]]) -> dict:
    document = dict(pairs)
    if len(document) != len(pairs):
        names = [name for name, _ in pairs]
        twice = next(name for name in names if names.count(name) > 1)
        raise ValueError(f"the name {twice!r} appears twice in one object")
    return document


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value (RFC 8259)")


def _finite(text: str) -> float | OutOfRange:
    number = float(text)
    return number if math.isfinite(number) else OutOfRange(text)


def _finite_only(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {key: _finite_only(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_only(item) for item in value]
    return value
