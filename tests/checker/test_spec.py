"""The spec folder: the OpenAPI description is valid and the requirements catalogue well formed."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from openapi_spec_validator import validate

from conformance.spec import interface_path, interface_sha256, openapi, requirements_path
from tests.checker.test_options import rendered

REQUIREMENT_ID = re.compile(r"^[A-Z]+(-[A-Z0-9]+)+$")


def _raw_requirements() -> list[dict]:
    return yaml.safe_load(requirements_path().read_text(encoding="utf-8"))["requirements"]


def test_openapi_description_is_valid():
    validate(openapi())


def test_openapi_is_version_1_0_0_with_v1_servers():
    description = openapi()
    assert description["info"]["version"] == "1.0.0"
    for server in description["servers"]:
        variables = server.get("variables", {})
        url = server["url"].format(**{name: v["default"] for name, v in variables.items()})
        assert url.rstrip("/").endswith("/v1"), url


def test_requirement_ids_are_unique():
    counts = Counter(entry["id"] for entry in _raw_requirements())
    assert [name for name, count in counts.items() if count > 1] == []


@pytest.mark.parametrize("entry", _raw_requirements(), ids=lambda entry: entry["id"])
def test_requirement_is_well_formed(entry):
    assert REQUIREMENT_ID.match(entry["id"]), entry["id"]
    assert entry["level"] in {"MUST", "SHOULD"}
    assert isinstance(entry["section"], str) and entry["section"].strip()
    assert isinstance(entry["statement"], str) and entry["statement"].strip()
    tests, reason = entry.get("tests") or [], entry.get("not_testable")
    # Inferno's rule: every requirement is verified by named tests or says why it cannot be.
    assert bool(tests) != bool(reason), "an entry needs either `tests` or `not_testable`"
    if reason:
        assert isinstance(reason, str) and reason.strip()
    # A server requirement names suite tests; a client one the checks of client_mode/rules.py.
    form = (
        r"^rules\.py::check_\w+$" if entry.get("role") == "client" else r"^test_\w+\.py::test_\w+$"
    )
    for test in tests:
        assert re.match(form, test), test
    assert entry.get("role", "server") in {"server", "client"}


@pytest.mark.parametrize(
    "entry",
    [e for e in _raw_requirements() if e.get("role") == "client"],
    ids=lambda entry: entry["id"],
)
def test_client_requirement_states_its_basis(entry):
    """Client requirements are new: each MUST says what makes it one (the working format)."""
    basis = entry.get("basis")
    if entry["level"] == "MUST":
        assert basis is not None, "a client MUST names its basis"
    if basis == "document":
        assert entry.get("quote"), "basis: document needs the document's words in `quote`"
        document = " ".join(interface_path().read_text(encoding="utf-8").split())
        assert " ".join(entry["quote"].split()) in document, "the quote is not verbatim"
    elif basis is not None:
        assert basis["rfc"].startswith("RFC ") and basis["words"].strip()
        if entry["level"] == "MUST":
            assert re.search(r"\b(MUST|REQUIRED|SHALL)\b", basis["words"]), basis["words"]


def test_the_interface_document_ships_in_the_spec_folder():
    raw = yaml.safe_load(requirements_path().read_text(encoding="utf-8"))
    assert raw["document_file"] == interface_path().name == "interface.md"
    text = interface_path().read_text(encoding="utf-8")
    assert text.startswith("# Pet Store Service Interface Specification")
    assert f"The interface version is {raw['document_version']}." in text
    assert interface_sha256() == hashlib.sha256(interface_path().read_bytes()).hexdigest()


def test_a_fresh_clone_needs_nothing_beside_it():
    """A user's clone has no ../shared: nothing the project ships may point there."""
    root = Path(__file__).resolve().parents[2]
    shipped = [root / "README.md", *root.glob("spec/*"), *root.glob("conformance/**/*.py")]
    for path in shipped:
        assert "../shared" not in path.read_text(encoding="utf-8"), path


# -- the basis of every MUST (what makes it one) ----------------------------------------------

RFC_SECTION = re.compile(r"^RFC \d+ section \d+(\.\d+)*$")
REQUIREMENT_LEVEL = re.compile(r"\b(MUST( NOT)?|REQUIRED|SHALL( NOT)?)\b")
# A SHOULD may rest on an RFC's recommendation (SHOULD, RECOMMENDED) as well.
RECOMMENDATION_LEVEL = re.compile(
    r"\b(MUST( NOT)?|REQUIRED|SHALL( NOT)?|SHOULD( NOT)?|RECOMMENDED)\b"
)


def folded(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("entry", _raw_requirements(), ids=lambda entry: entry["id"])
def test_every_must_names_its_basis(entry):
    basis = entry.get("basis")
    if entry["level"] == "SHOULD" and basis is None:
        return  # a SHOULD needs none: good practice is reason enough for a warning
    assert basis is not None, f"{entry['id']} is a MUST without a basis: make it a SHOULD"
    if basis == "document":
        quote = entry.get("quote") or ""
        document = interface_path().read_text(encoding="utf-8")
        assert quote.strip() and folded(quote) in folded(document), (
            f"{entry['id']}: its quote is not the document's own words: {quote!r}"
        )
    else:
        assert isinstance(basis, dict) and set(basis) == {"rfc", "words"}, basis
        assert RFC_SECTION.match(basis["rfc"]), basis["rfc"]
        level = REQUIREMENT_LEVEL if entry["level"] == "MUST" else RECOMMENDATION_LEVEL
        assert level.search(basis["words"]), (
            f"{entry['id']}: the RFC's words are not at the level of a {entry['level']}"
        )


def test_no_must_yields_to_a_should():
    """A MUST failure is never hidden behind a warning on the same response."""
    levels = {entry["id"]: entry["level"] for entry in _raw_requirements()}
    hidden = [
        f"{entry['id']} yields to {other}"
        for entry in _raw_requirements()
        if entry["level"] == "MUST"
        for other in entry.get("yields_to") or ()
        if levels[other] == "SHOULD"
    ]
    assert hidden == []


def test_the_site_lists_every_requirement_with_what_judges_it():
    """The catalogue page is made from spec/requirements.yaml at build time: every entry is
    there under its id, with its level, its quote, its basis or rationale, and its checks."""
    entries = re.split(r"^### ", rendered("requirements.md"), flags=re.MULTILINE)[1:]
    by_id = {entry.split("\n", 1)[0]: entry for entry in entries}
    raw = _raw_requirements()
    assert sorted(by_id) == sorted(entry["id"] for entry in raw)
    for entry in raw:
        shown = by_id[entry["id"]]
        assert f"**{entry['level']}**, section " in shown, entry["id"]
        if entry.get("quote"):
            assert " ".join(entry["quote"].split()) in shown, entry["id"]
        assert ("**Basis**" in shown) == bool(entry.get("basis")), entry["id"]
        assert ("**Rationale**" in shown) == bool(entry.get("rationale")), entry["id"]
        for test in entry.get("tests") or ():
            assert f"`{test}`" in shown, (entry["id"], test)
        assert ("**Not testable**" in shown) == bool(entry.get("not_testable")), entry["id"]
