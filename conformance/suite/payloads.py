"""Request bodies shared by the hand-written scenarios: what a NewCategory must and must not be.

The interface document gives NewCategory as `name` (string, required) and `description`
(string, optional); it publishes no length limits. Names are built by the run
(`run.unique_name`, at most 13 characters) so that every category the suite creates carries
the run's prefix; the texts below are what follows it, after a space, within 32 in all.
"""

from __future__ import annotations

import json
from typing import Any

NAME_LIMIT = 32
"""The longest name a server must accept (docs/design.md, "Strictness", CAT-NAME-RANGE)."""

WRONG_TYPE_VALUES: dict[str, Any] = {
    "number": 42,
    "boolean": True,
    "array": ["Dogs"],
    "object": {"text": "Dogs"},
    "null": None,
}
"""JSON values that are not strings: a NewCategory field holding one is an invalid value."""

NON_OBJECT_KINDS = ("array", "string", "number", "null")


def non_object_body(kind: str, name: str) -> bytes:
    """A well-formed JSON document of `kind` that is not a NewCategory object.

    Sent as raw bytes, so that `null` really is the JSON literal and not an empty body; the
    array wraps a valid NewCategory, so only its being an array makes it wrong.
    """
    documents: dict[str, Any] = {
        "array": [{"name": name}],
        "string": name,
        "number": 7,
        "null": None,
    }
    return json.dumps(documents[kind]).encode("utf-8")


MALFORMED_JSON = b'{"name": '

LEGITIMATE_NAMES: dict[str, tuple[str, str | None]] = {
    # case id: (text after the run's prefix, description or None for "not sent")
    "plain-ascii": ("Dogs", None),
    "mixed-case-spaces": ("Dogs and BIG Cats", "Dogs and cats of every size"),
    "latin-accents": ("Chats élégants", "Des chats très élégants, « naïfs » et âgés"),
    "cjk": ("猫と犬", "猫と犬のカテゴリー"),
    "cyrillic": ("Кошки и собаки", "Домашние животные"),
    "arabic-rtl": ("قطط وكلاب", "حيوانات أليفة"),
    "emoji": ("🐕‍🦺 🇫🇷 🐈", "Service dogs 🐕‍🦺 from France 🇫🇷"),
    "punctuation-description": (
        "Birds",
        "He said \"tweet\" — it's <b>&amp;</b> 100% {json} [ok] \\ / ; 'quoted' ✓",
    ),
}
"""Texts of at most 18 characters (code points and UTF-16 units) in several scripts, with and
without description: after the run's name they make names of at most 32 characters, which
must be accepted and echoed exactly (CAT-NAME-RANGE, CAT-ECHO)."""
