"""MkDocs hook: `{{ options:GROUP }}` in a page becomes the table of that group's options, made
from their one declaration (conformance/options.py), so the docs never list an option by hand."""

from __future__ import annotations

import re

from conformance.options import GROUPS, markdown_table

PLACEHOLDER = re.compile(r"\{\{ options:(\w+) \}\}")


def on_page_markdown(markdown: str, **_: object) -> str:
    def table(match: re.Match[str]) -> str:
        group = match.group(1)
        if group not in GROUPS:
            raise ValueError(f"no group of options named {group!r}: use one of {', '.join(GROUPS)}")
        return markdown_table(group)

    return PLACEHOLDER.sub(table, markdown)
