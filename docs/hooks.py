"""MkDocs hook: `{{ options:GROUP }}` in a page becomes the table of that group's options, made
from their one declaration (conformance/options.py), and `{{ client_options }}` the table of the
client mode's options, made from its parser: the docs never list an option by hand.
`{{ requirements }}` becomes the requirements catalogue, made from spec/requirements.yaml as the
site is built."""

from __future__ import annotations

import re

from conformance import spec
from conformance.client_mode.command import build_parser
from conformance.options import GROUPS, markdown_table

PLACEHOLDER = re.compile(r"\{\{ options:(\w+) \}\}")
CLIENT_PLACEHOLDER = "{{ client_options }}"
REQUIREMENTS_PLACEHOLDER = "{{ requirements }}"
ROLES = {"server": "Requirements of a server", "client": "Requirements of a client"}
ENVIRONMENT = re.compile(r"\s*\[env (\w+)\]")


def on_page_markdown(markdown: str, **_: object) -> str:
    def table(match: re.Match[str]) -> str:
        group = match.group(1)
        if group not in GROUPS:
            raise ValueError(f"no group of options named {group!r}: use one of {', '.join(GROUPS)}")
        return markdown_table(group)

    markdown = PLACEHOLDER.sub(table, markdown)
    markdown = markdown.replace(CLIENT_PLACEHOLDER, client_table())
    if REQUIREMENTS_PLACEHOLDER in markdown:
        markdown = markdown.replace(REQUIREMENTS_PLACEHOLDER, requirements_catalogue())
    return markdown


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


def requirements_catalogue() -> str:
    """Every requirement under its id: level, section, the document's words, the statement, its
    basis or rationale, and the checks (the suite's tests) that judge it."""
    parts = []
    for role, title in ROLES.items():
        parts.append(f"## {title}")
        parts.extend(requirement_entry(r) for r in spec.catalogue(role).values())
    return "\n\n".join(parts)


def one_line(text: str) -> str:
    return " ".join(text.split())


def requirement_entry(requirement: spec.Requirement) -> str:
    lines = [
        f"### {requirement.id}",
        "",
        f"**{requirement.level}**, section {one_line(requirement.section)}.",
        "",
    ]
    if requirement.quote:
        lines += [f"> {one_line(requirement.quote)}", ""]
    lines += [one_line(requirement.statement), ""]
    if requirement.basis is not None:
        source = requirement.basis.rfc or "the document's own words (quoted above)"
        words = f': "{one_line(requirement.basis.words)}"' if requirement.basis.rfc else ""
        lines += [f"**Basis**: {source}{words}", ""]
    if requirement.rationale:
        lines += [f"**Rationale**: {one_line(requirement.rationale)}", ""]
    if requirement.tests:
        checks = ", ".join(f"`{test}`" for test in requirement.tests)
        lines += [f"**Judged by**: {checks}", ""]
    if requirement.not_testable:
        lines += [f"**Not testable**: {one_line(requirement.not_testable)}", ""]
    return "\n".join(lines).rstrip()
