"""The certification body's own YAML files (the keyring, the policy), read as untrusted input
all the same: a regular file of bounded size, UTF-8, YAML with every value read as text (no
implicit numbers, dates or booleans: an integer of thousands of digits is text like any other),
each key once in a mapping (YAML's reader would keep the last of two silently), no aliases,
nested a few levels at most, then held to a JSON Schema. Every mistake is one line naming the
file and the place; nothing in it is printed raw.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

import jsonschema
import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from conformance import regular_file

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 12
"""Levels of nesting: a keyring has five."""


class DocumentError(ValueError):
    """A keyring or policy the register cannot use; one line."""


def shown(value: object, longest: int = 120) -> str:
    """Text as it may be printed: no control character, no lone surrogate, cut for a message."""
    text = str(value)
    text = text if len(text) <= longest else text[:longest] + "..."
    return "".join(
        c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else f"\\u{ord(c):04x}"
        for c in text
    )


class StrictLoader(yaml.BaseLoader):
    """BaseLoader (every scalar a str), refusing aliases, deep nesting and a key twice."""

    depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if self.check_event(yaml.AliasEvent):
            raise ComposerError(None, None, "an alias (*name) is not read here", event.start_mark)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                raise ConstructorError(
                    None, None, f"{shown(key)!r} appears twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(path: Path, what: str) -> object:
    """The document of `path` (a str, list or dict of them); DocumentError in one line."""
    try:
        data = regular_file.read(path, MAX_BYTES)
    except OSError as error:
        raise DocumentError(f"{what} {path}: cannot read it ({error.strerror or error})") from None
    if len(data) > MAX_BYTES:
        raise DocumentError(f"{what} {path}: larger than {MAX_BYTES} bytes")
    try:
        document = yaml.load(data.decode("utf-8"), Loader=StrictLoader)  # noqa: S506 - BaseLoader
    except UnicodeDecodeError:
        raise DocumentError(f"{what} {path}: not UTF-8 text") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f" (line {mark.line + 1})" if mark else ""
        problem = shown(error.problem or error.context or "not YAML")
        raise DocumentError(f"{what} {path}: not YAML this register reads{at}: {problem}") from None
    except (yaml.YAMLError, RecursionError, ValueError):
        raise DocumentError(f"{what} {path}: not YAML this register reads") from None
    lone = surrogate_text(document)
    if lone is not None:
        raise DocumentError(f"{what} {path}: the text '{shown(lone)}' holds a lone surrogate")
    return document


def surrogate_text(document: object) -> str | None:
    """The first text holding a lone surrogate (YAML's "\\ud800" escape makes one)."""
    if isinstance(document, dict):
        document = [*document, *document.values()]
    if isinstance(document, list):
        return next((t for t in map(surrogate_text, document) if t is not None), None)
    if isinstance(document, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in document):
        return document
    return None


@functools.cache
def schema(name: str) -> dict:
    """A schema shipped beside this module (and published in the docs)."""
    return json.loads(resources.files("conformance.register").joinpath(name).read_text("utf-8"))


def validate(document: object, schema_name: str, path: Path, what: str) -> None:
    validator = jsonschema.Draft202012Validator(schema(schema_name))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return
    where = "/".join(shown(p, 60) for p in error.absolute_path) or "the top"
    raise DocumentError(f"{what} {path}: at {where}: {shown(error.message, 200)}")
