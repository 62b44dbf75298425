"""The spec folder: the OpenAPI description is valid and the requirements catalogue well formed."""

from __future__ import annotations

import re
from collections import Counter

import pytest
import yaml
from openapi_spec_validator import validate

from conformance.spec import openapi, requirements_path

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
    for test in tests:
        assert re.match(r"^test_\w+\.py::test_\w+$", test), test
