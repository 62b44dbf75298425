"""MkDocs hook: `{{ options:GROUP }}` in a page becomes the table of that group's options, made
from their one declaration (conformance/options.py), and `{{ client_options }}` the table of the
client mode's options, made from its parser: the docs never list an option by hand."""

from __future__ import annotations

import re

from conformance.client_mode.command import build_parser
from conformance.options import GROUPS, markdown_table

PLACEHOLDER = re.compile(r"\{\{ options:(\w+) \}\}")
CLIENT_PLACEHOLDER = "{{ client_options }}"
ENVIRONMENT = re.compile(r"\s*\[env (\w+)\]")


def on_page_markdown(markdown: str, **_: object) -> str:
    def table(match: re.Match[str]) -> str:
        group = match.group(1)
        if group not in GROUPS:
            raise ValueError(f"no group of options named {group!r}: use one of {', '.join(GROUPS)}")
        return markdown_table(group)

    markdown = PLACEHOLDER.sub(table, markdown)
    return markdown.replace(CLIENT_PLACEHOLDER, client_table())


def client_table() -> str:
    rows = ["| option | environment | meaning |", "|---|---|---|"]
    for action in build_parser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        flag = action.option_strings[-1]
        if action.metavar:
            flag += f" {action.metavar}"
        help_text = action.help or ""
        found = ENVIRONMENT.search(help_text)
        environment = f"`{found.group(1)}`" if found else ""
        meaning = ENVIRONMENT.sub("", help_text).replace("|", "\\|")
        rows.append(f"| `{flag}` | {environment} | {meaning} |")
    return "\n".join(rows)
