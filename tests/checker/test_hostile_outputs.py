"""A target cannot break the checker's outputs: the checker run against each hostile mode of
the double (`HOSTILE` in tests/shared/double/behaviours.py) keeps the invariant that mode attacks.
No encoding of a key in any artifact (base64, hex, %XX, HTML character references), strict
JSON, JUnit agreeing with the exit status (checked on every run by tests/shared/checker_runs.py),
a body nested too deep judged rather than crashing a test, the User-Agent named and no cookie
sent back, nothing written outside the report folder."""

from __future__ import annotations

import base64
import json
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from conformance import strict_json
from conformance.httpclient.redaction import Secrets
from tests.shared.checker_runs import CheckerRun, assert_no_key_leaked, new_keys, run_checker

REPORTS = {"report.html", "junit.xml", "conformance.json", "exchanges.har", "badge.svg"}


def artifacts(run: CheckerRun) -> dict[str, str]:
    """Every output as text, and each JSON one as a reader sees it once decoded: its strings,
    where a `\\u0070` written as `\\\\u0070` is one backslash again."""
    texts = {"console": run.output}
    for path in run.report_dir.rglob("*"):
        if path.is_file():
            texts[path.name] = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix in (".json", ".har"):
                texts[f"{path.name}, decoded"] = "\n".join(strings(json.loads(texts[path.name])))
    return texts


def strings(document: Any) -> list[str]:
    if isinstance(document, dict):
        return [*document, *(s for value in document.values() for s in strings(value))]
    if isinstance(document, list):
        return [s for value in document for s in strings(value)]
    return [document] if isinstance(document, str) else []


def base64_traces(secret: bytes) -> set[str]:
    """What base64 or base64url text holding `secret` anywhere always contains: the characters
    encoding its bytes alone, at each of the three offsets it may sit at."""
    traces = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            encoded = encode(bytes(offset) + secret).decode()
            traces.add(encoded[4 if offset else 0 : (offset + len(secret)) // 3 * 4])
    return traces


def bytewise_traces(secret: bytes) -> set[str]:
    """Lower-case forms that text holding `secret`, in hex, `%XX` of every byte, HTML
    character references (decimal or hex) or JSON `\\u00XX` escapes, contains once lower-cased,
    whatever its case."""
    return {
        secret.hex(),
        "".join(f"%{byte:02x}" for byte in secret),
        "".join(f"&#{byte};" for byte in secret),
        "".join(f"&#x{byte:x};" for byte in secret),
        "".join(f"\\u{byte:04x}" for byte in secret),
    }


def test_no_encoded_form_of_a_key_leaves_the_run(tmp_path: Path) -> None:
    run = run_checker(tmp_path / "reports", ["echo-credentials-encoded"])
    assert run.status == 0, run.describe()
    texts = artifacts(run)
    for header in ("x-debug-key-b64", "x-debug-key-hex", "x-debug-auth-html", "x-debug-key-json-u"):
        assert header in texts["exchanges.har"].lower(), f"the target echoed no {header}"
    # Found first, then asserted: pytest would explain `trace not in text` with a diff of
    # megabytes of text.
    for key in run.keys:
        for where, text in texts.items():
            found = [trace for trace in base64_traces(key.encode()) if trace in text]
            found += [trace for trace in bytewise_traces(key.encode()) if trace in text.lower()]
            assert not found, f"{len(found)} encoded forms of a key in {where}: {found[0][:40]}"
    assert_no_key_leaked(run)


def strict_load(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON (RFC 8259)")

    return json.loads(text, parse_constant=refuse)


def test_every_json_output_is_strict_whatever_the_target_sent(tmp_path: Path) -> None:
    package = tmp_path / "evidence.zip"
    run = run_checker(
        tmp_path / "reports", ["huge-number-ids"], options=["--package", str(package)]
    )
    assert run.status == 1 and "CAT-SCHEMA" in run.statement["failed_requirements"], run.describe()
    for name in ("conformance.json", "exchanges.har"):
        strict_load((run.report_dir / name).read_text(encoding="utf-8"))
    with zipfile.ZipFile(package) as archive:
        strict_load(archive.read("manifest.json").decode("utf-8"))
    # The number as the target wrote it, not a float it is not.
    assert any(c.get("id") == "1e999999" for c in run.statement["created_categories"])


def test_junit_fails_a_run_whose_failure_no_test_verifies(tmp_path: Path) -> None:
    """The 429 asking for 68 years fails LIM-RESET-UNIX-TIME in the exhaustion, which does not
    verify it: pytest alone wrote a JUnit without a failure for this exit 1."""
    run = run_checker(tmp_path / "reports", ["refusal-for-68-years"])
    assert run.status == 1, run.describe()
    assert run.statement["failed_requirements"] == ["LIM-RESET-UNIX-TIME"]
    suite = ElementTree.parse(run.report_dir / "junit.xml").getroot().find("testsuite")
    failed = [
        case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None
    ]
    assert "LIM-RESET-UNIX-TIME" in failed


def test_a_body_nested_too_deep_fails_the_rule_that_reads_it(tmp_path: Path) -> None:
    run = run_checker(tmp_path / "reports", ["deep-nesting"])
    assert run.status == 1, run.describe()
    assert run.statement["verdict"] == "not conformant"
    assert run.statement["failed_requirements"] == ["ERR-SCHEMA"], run.describe()
    assert "RecursionError" not in run.output


def test_the_user_agent_is_named_and_no_cookie_goes_back(tmp_path: Path) -> None:
    """A cookie sent back would be served as the key it was issued to: the requests without a
    key would then not be answered 401 (AUTH-MISSING-KEY-401)."""
    package = tmp_path / "evidence.zip"
    run = run_checker(tmp_path / "reports", ["session-cookie"], options=["--package", str(package)])
    assert run.status == 0, run.describe()
    agent = run.statement["user_agent"]
    assert agent.startswith("petstore-conformance/")
    assert agent in (run.report_dir / "report.html").read_text(encoding="utf-8")
    assert agent in run.output
    with zipfile.ZipFile(package) as archive:
        assert json.loads(archive.read("manifest.json"))["user_agent"] == agent


def test_a_user_agent_of_the_users_choice_is_sent_and_named(tmp_path: Path) -> None:
    """A target that serves its headers only to the checker's name fails once the run calls
    itself curl, and the statement says how it was called."""
    options = ["--user-agent", "curl/8.5.0"]
    run = run_checker(tmp_path / "reports", ["fingerprint-user-agent"], options=options)
    assert run.status == 1, run.describe()
    assert "LIM-HEADERS-PRESENT" in run.statement["failed_requirements"]
    assert run.statement["user_agent"] == "curl/8.5.0"


def test_nothing_is_written_outside_the_report_folder(tmp_path: Path) -> None:
    """Run from an empty working folder: it stays empty (Hypothesis keeps its cache in the
    working folder, whatever its example database says; pytest its own)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    run = run_checker(tmp_path / "reports", cwd=cwd)
    assert run.status == 0, run.describe()
    assert not list(cwd.iterdir()), [path.name for path in cwd.iterdir()]
    written = {path.name for path in run.report_dir.iterdir()}
    assert written == REPORTS, written - REPORTS


# -- the parts, on their own ------------------------------------------------------------------


@pytest.mark.parametrize("key", ["psc-main-0f3a9c2b7d1e4a6b", "psc-main-???>>>???>>>???"])
@pytest.mark.parametrize("prefix", [b"", b"x", b"xy", b'{"authorization": "Bearer '])
def test_base64_of_a_secret_anywhere_is_redacted(key: str, prefix: bytes) -> None:
    """At every offset, in base64 and base64url, and with "/" escaped as JSON may (PHP's
    json_encode does); the second key's base64 is full of "/" and "+"."""
    password = "proxy-pass-5ecret"
    secrets = Secrets({"main": key}, hidden=[password])
    for secret in (key.encode(), password.encode()):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(prefix + secret + b'", "more": 1}').decode()
            for escape in (str, lambda text: text.replace("/", "\\/")):
                redacted = secrets.redact(escape(text))
                assert all(escape(trace) not in redacted for trace in base64_traces(secret))


@pytest.mark.parametrize("key", ["psc-main-0f3a9c2b7d1e4a6b", "psc-main-???>>>???>>>???"])
@pytest.mark.parametrize("upper", [False, True])
def test_hex_percent_and_character_references_of_a_secret_anywhere_are_redacted(key, upper):
    """Within the form of longer text (`Bearer <key>` in a JSON dump), as a server's debug
    output writes it: hex, %XX of every byte, decimal and hex character references, JSON
    `\\u00XX` escapes (whose `u` stays lower case: only the digits change case)."""
    password = "proxy-pass-5ecret"
    secrets = Secrets({"main": key}, hidden=[password])
    for secret in (key, password):
        dump = f'{{"authorization": "Bearer {secret}", "more": 1}}'.encode()
        forms = [
            dump.hex(),
            "".join(f"%{byte:02x}" for byte in dump),
            "".join(f"&#{byte};" for byte in dump),
            "".join(f"&#x{byte:x};" for byte in dump),
        ]
        forms = [form.upper() if upper else form for form in forms]
        forms.append("".join((r"\u%04X" if upper else r"\u%04x") % byte for byte in dump))
        for form in forms:
            text = f"debug: {form} end"
            redacted = secrets.redact(text).lower()
            assert "***" in redacted
            assert all(trace not in redacted for trace in bytewise_traces(secret.encode()))
            assert redacted.startswith("debug: ") and redacted.endswith(" end")


def test_a_proxy_password_is_taken_out_never_put_in() -> None:
    secrets = Secrets({"main": new_keys()[0]}, hidden=["proxy-pass-5ecret"])
    line = secrets.shell_word("echo proxy-pass-5ecret")
    assert "proxy-pass-5ecret" not in line and "***" in line
    assert secrets.labels_in("proxy-pass-5ecret") == []


@pytest.mark.parametrize(
    "body", ["[NaN]", '{"id": Infinity}', "-Infinity", "[" * 200 + "]" * 200, "[" * 10**5]
)
def test_a_body_strict_json_cannot_read_is_a_value_error(body: str) -> None:
    with pytest.raises(ValueError):
        strict_json.loads(body)


def nested(levels: int) -> str:
    """Arrays and objects in turn, `levels` deep, each beside an empty one a level shallower."""
    text = "[1, 2]"
    for level in range(1, levels):
        text = f'{{"a": {text}, "b": {{}}}}' if level % 2 else f"[{text}, []]"
    return text


@pytest.mark.parametrize("levels", [1, 2, 127, strict_json.MAX_DEPTH])
def test_a_body_up_to_the_nesting_bound_is_read_at_its_depth(levels: int) -> None:
    document = strict_json.loads(nested(levels))
    assert strict_json.depth(document) == levels


def test_a_body_one_level_past_the_nesting_bound_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested deeper"):
        strict_json.loads(nested(strict_json.MAX_DEPTH + 1))


def test_numbers_no_float_holds_are_kept_as_text_and_written_strictly() -> None:
    document = strict_json.loads('{"id": 1e999999, "n": 1.5, "deep": [[[1]]]}')
    assert document == {"id": "1e999999", "n": 1.5, "deep": [[[1]]]}
    written = strict_json.dumps({"nan": float("nan"), "inf": [float("inf")], "id": document["id"]})
    assert strict_load(written) == {"nan": "nan", "inf": ["inf"], "id": "1e999999"}
