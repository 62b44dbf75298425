"""`badge.svg`: the interface version and the verdict, in the usual two-part badge shape, for a
README or a status page. Plain SVG text, no fonts or images fetched; well-formed XML whatever
the text (a character XML 1.0 does not allow, a control or a lone surrogate, is shown as
U+FFFD)."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

COLOURS = {"conformant": "#2e7d32", "not conformant": "#c62828", "no verdict": "#6d6d6d",
           # the register's statuses: only a certificate in force is green
           "certified": "#2e7d32", "revoked": "#c62828", "expired": "#b35900",
           "not certified": "#c62828"}  # fmt: skip
CHARACTER_WIDTH = 7  # about the width of an 11 px Verdana character
PADDING = 12
HEIGHT = 20
# What XML 1.0 does not allow in a document (its Char production), surrogates included.
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    return escape(NOT_XML.sub("\ufffd", text))


def width_of(text: str) -> int:
    return len(text) * CHARACTER_WIDTH + PADDING


def svg(interface_version: str, verdict: str) -> str:
    label, value = f"Pet Store v{interface_version}", verdict
    left, right = width_of(label), width_of(value)
    total = left + right
    colour = COLOURS.get(verdict, COLOURS["no verdict"])
    title = xml_text(f"{label}: {value}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{HEIGHT}" '
        f'role="img" aria-label="{title}"><title>{title}</title>'
        f'<rect width="{left}" height="{HEIGHT}" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="{HEIGHT}" fill="{colour}"/>'
        '<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11" '
        'text-anchor="middle">'
        f'<text x="{left / 2}" y="14">{xml_text(label)}</text>'
        f'<text x="{left + right / 2}" y="14">{xml_text(value)}</text>'
        "</g></svg>\n"
    )


def write(path: Path, interface_version: str, verdict: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(svg(interface_version, verdict), encoding="utf-8")
