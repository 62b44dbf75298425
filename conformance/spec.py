"""Where the interface description and the requirements catalogue live, and how to read them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

_PACKAGE = Path(__file__).resolve().parent


# libyaml's loader where PyYAML was built with it: the catalogue is read by every run and every
# test process, and the pure-Python loader took a tenth of a second of a run's CPU on it.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Our own spec files (trusted, shipped with the checker): the same as `yaml.safe_load`."""
    return yaml.load(text, Loader=SAFE_LOADER)


def spec_dir() -> Path:
    """The spec folder: the copy inside an installed wheel, else the checkout's `spec/`."""
    for candidate in (_PACKAGE / "_spec", _PACKAGE.parent / "spec"):
        if (candidate / "openapi.yaml").is_file():
            return candidate
    raise FileNotFoundError("spec/openapi.yaml is missing from this installation")


def openapi_path() -> Path:
    return spec_dir() / "openapi.yaml"


def requirements_path() -> Path:
    return spec_dir() / "requirements.yaml"


def interface_path() -> Path:
    """The interface document itself, shipped so that a clone or a wheel stands alone."""
    return spec_dir() / "interface.md"


@cache
def openapi() -> dict:
    return load_yaml(openapi_path().read_text(encoding="utf-8"))


def openapi_sha256() -> str:
    return hashlib.sha256(openapi_path().read_bytes()).hexdigest()


def interface_sha256() -> str:
    return hashlib.sha256(interface_path().read_bytes()).hexdigest()


def spec_version() -> str:
    return str(openapi()["info"]["version"])


def component_schema(name: str) -> dict:
    return openapi()["components"]["schemas"][name]


@dataclass(frozen=True)
class Basis:
    """What makes a requirement a MUST: the document's own words (its `quote`), or an RFC's
    requirement-level sentence."""

    words: str
    rfc: str | None = None  # "RFC 9110 section 15.5.2"; None for the document

    @property
    def source(self) -> str:
        return self.rfc or "document"

    def cited(self) -> str:
        """One line: whose words, and the words."""
        words = " ".join(self.words.split())
        return f'{self.rfc}: "{words}"' if self.rfc else f'the document: "{words}"'


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str  # "MUST" or "SHOULD"
    section: str
    statement: str
    tests: tuple[str, ...] = field(default_factory=tuple)
    not_testable: str | None = None
    rationale: str | None = None
    quote: str | None = None  # the document's own words
    yields_to: tuple[str, ...] = field(default_factory=tuple)
    needs: tuple[str, ...] = field(default_factory=tuple)
    basis: Basis | None = None  # every MUST has one; a SHOULD may
    role: str = "server"  # whom it binds: "server", or "client" (judged by the client mode)


@cache
def catalogue(role: str = "server") -> dict[str, Requirement]:
    """The requirements of one role (servers by default) by id, in catalogue order."""
    return {id_: r for id_, r in all_requirements().items() if r.role == role}


@cache
def all_requirements() -> dict[str, Requirement]:
    """Every requirement, of servers and of clients, by id, in catalogue order."""
    raw = load_yaml(requirements_path().read_text(encoding="utf-8"))
    entries = {}
    for item in raw["requirements"]:
        requirement = Requirement(
            id=item["id"],
            level=item["level"],
            section=item["section"],
            statement=item["statement"],
            tests=tuple(item.get("tests") or ()),
            not_testable=item.get("not_testable"),
            rationale=item.get("rationale"),
            quote=item.get("quote"),
            yields_to=tuple(item.get("yields_to") or ()),
            needs=tuple(item.get("needs") or ()),
            basis=read_basis(item.get("basis"), item.get("quote")),
            role=item.get("role", "server"),
        )
        entries[requirement.id] = requirement
    return entries


def read_basis(raw: object, quote: str | None) -> Basis | None:
    """`basis: document` (the entry's quote) or `basis: {rfc: ..., words: ...}`."""
    if raw == "document" and quote:
        return Basis(quote)
    if isinstance(raw, dict) and raw.get("rfc") and raw.get("words"):
        return Basis(str(raw["words"]), str(raw["rfc"]))
    return None
