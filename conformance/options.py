"""Every option of a checker run, declared once: its name, kind, default and help.

The command line (`cli.py`), the pytest plugin's options (`plugin.py`), reading each option's
environment variable and parsing it (`settings.resolve`), the fields of `Settings`
(`settings.py`) and the options table of the docs (`docs/hooks.py`) are all made from `OPTIONS`;
`tests/checker/test_options.py` checks that they agree. Adding an option is one entry here and
the code that uses it.

Every option reads an environment variable (`PETSTORE_` and its name): CI systems hand secrets
over as variables, not arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.evidence import baseline, compare
from conformance.httpclient.client import DEFAULT_USER_AGENT

# Requests per minute and per day of each published plan (interface document, Limits).
PLANS: dict[str, tuple[int, int]] = {
    "free": (60, 1_000),
    "pro": (300, 10_000),
    "business": (1_000, 100_000),
}
PLAN_NAMES = (*PLANS, "enterprise")
PROFILES = ("full", "smoke", "day")
TRUE_WORDS = ("1", "true", "yes", "on")
"""How a switch is turned on in the environment (given alone on the command line, it is on)."""


def load_signer(path: Path) -> Any:
    # Imported when a key is given: cryptography and securesystemslib are some 60 ms that
    # every run would otherwise spend on starting.
    from conformance import signing_keys

    return signing_keys.load_signer(path)


class SettingsError(ValueError):
    """An option is missing or malformed; the message is one line for the user."""


@dataclass(frozen=True)
class Option:
    """One option. `kind` says how it is given and read:

    - `text`: a string as given;
    - `choice`: one of `choices`;
    - `count`: a positive whole number; `number`: any whole number;
    - `switch`: on or off (alone on the command line; TRUE_WORDS in the environment);
    - `file`: a path, read by `read` at once, so that a bad file is refused before the run
      sends a request (a path is kept as a Path where `read` is not given).
    """

    name: str  # the Settings field
    kind: str
    help: str
    default: Any = None  # the value when it is given nowhere (a switch: False)
    absent: str = ""  # where there is no default value: what not giving it means, in words
    metavar: str = ""
    choices: tuple[str, ...] = ()
    read: Callable[[Path], Any] = Path
    group: str = "run"  # the docs' table it belongs to (GROUPS)
    pytest_flag: str = ""  # where the option's own flag means something else to pytest
    secret: bool = False  # a key: never in a repr

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def environment(self) -> str:
        return "PETSTORE_" + self.name.upper()

    @property
    def switch(self) -> bool:
        return self.kind == "switch"

    @property
    def default_words(self) -> str:
        """The default for --help and the docs; empty where the help says it."""
        given = self.default not in (None, False)
        return self.absent or (str(self.default) if given else "")

    def describe(self) -> str:
        """The help line, with the default and the environment variable."""
        default = f" (default: {self.default_words})" if self.default_words else ""
        return f"{self.help}{default} [env {self.environment}]"

    def settings_field(self) -> tuple[str, type, dataclasses.Field]:
        """The field of `Settings` that holds the option's value. What a file is read into (a
        baseline, a statement, a signer) is neither shown nor compared; a key is not shown."""
        loaded = self.read is not Path
        default = False if self.switch else self.default
        shown = not (self.secret or loaded)
        field = dataclasses.field(default=default, repr=shown, compare=not loaded)
        return self.name, Any if loaded else KINDS[self.kind], field

    def parse(self, value: str | bool | None) -> Any:
        """The value as the run uses it; None where absent."""
        if self.switch:
            return value if isinstance(value, bool) else (value or "").strip().lower() in TRUE_WORDS
        if value is None or value == "":
            return None
        if self.kind in ("count", "number"):
            return self.whole_number(str(value))
        if self.kind == "file":
            try:
                return self.read(Path(value))
            except ValueError as error:  # BaselineError, UnreadableStatement, KeyFileError
                raise SettingsError(str(error)) from None
        return value

    def whole_number(self, text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise SettingsError(f"{self.flag} takes a whole number, not {text!r}") from None
        if self.kind == "count" and number < 1:
            raise SettingsError(f"{self.flag} must be a positive whole number")
        return number


KINDS = {"text": str, "choice": str, "count": int, "number": int, "switch": bool, "file": Path}
"""The type of each kind's value."""

GROUPS = {
    "target": "The target and its keys",
    "run": "What the run does",
    "reports": "Reports, nightly CI and certification",
    "https": "HTTPS",
}

OPTIONS: tuple[Option, ...] = (
    # --- the target and its keys
    Option(
        "base_url",
        "text",
        "base address of the target, ending in /v1",
        absent="start the bundled reference on a free loopback port and certify it",
        metavar="URL",
        group="target",
    ),
    Option(
        "api_key",
        "text",
        "the API key every test uses, sent as `Authorization: Bearer KEY`; 8 characters at least",
        metavar="KEY",
        group="target",
        secret=True,
    ),
    Option(
        "spare_api_key",
        "text",
        "a second key of the same plan: the one exhausted to prove 429, Retry-After and the "
        "reset, and to show that limits are per key",
        absent="the main key is exhausted, last",
        metavar="KEY",
        group="target",
        secret=True,
    ),
    Option(
        "plan",
        "choice",
        "the keys' plan; X-RateLimit-Limit must be its per-minute or per-day figure",
        default="free",
        choices=PLAN_NAMES,
        group="target",
    ),
    Option(
        "requests_per_minute",
        "count",
        "per-minute figure of an enterprise plan",
        metavar="N",
        group="target",
    ),
    Option(
        "requests_per_day",
        "count",
        "per-day figure of an enterprise plan",
        metavar="N",
        group="target",
    ),
    Option(
        "user_agent",
        "text",
        "the User-Agent every request sends (printable ASCII, 256 characters at most), stated "
        "in every report",
        default=DEFAULT_USER_AGENT,
        metavar="TEXT",
        group="target",
    ),
    # --- what the run does
    Option(
        "profile",
        "choice",
        "full certifies; smoke is read-only (no POST, no exhaustion) and spends at most 30 "
        "requests; day does what full does, then spends the spare key's day, window after "
        "window (17 minutes on a free plan's real minute; see docs/day-profile.md)",
        default="full",
        choices=PROFILES,
    ),
    Option(
        "max_requests",
        "count",
        "the request budget of the run",
        absent="what the profile needs on the plan",
        metavar="N",
    ),
    Option(
        "deadline",
        "count",
        "seconds the whole run may take; past them it sends nothing more",
        absent="what the profile needs",
        metavar="SECONDS",
    ),
    Option(
        "seed",
        "number",
        "seed of the generated tests: the same seed sends the same requests",
        default=0,
        metavar="N",
    ),
    Option(
        "strict", "switch", "count SHOULD failures as failures", pytest_flag="--petstore-strict"
    ),
    Option(
        "allow_key_in_url",
        "switch",
        "also check that a key sent only in the query string is refused, which sends the real "
        "main key in a URL (it lands in the target's access logs)",
    ),
    Option(
        "pytest_output",
        "switch",
        "print pytest's own console (a row of dots per test module, pytest's summary) in place "
        "of the checker's (its areas, waits and progress); `-- -v` also does, naming each test",
    ),
    # --- reports, nightly CI and certification
    Option(
        "report_dir",
        "file",
        "the folder the reports are written to, and nothing outside it",
        default=Path("reports"),
        metavar="DIR",
        group="reports",
    ),
    Option(
        "expected_failures",
        "file",
        "YAML of known failed requirements (id, reason, until): listed failures do not fail "
        "the run; an unlisted failure, a listed requirement that passed or an expired entry does",
        metavar="FILE",
        read=baseline.load,
        group="reports",
    ),
    Option(
        "write_expected_failures",
        "file",
        "write this run's failed requirements as such a YAML file",
        metavar="FILE",
        group="reports",
    ),
    Option(
        "previous",
        "file",
        "an earlier conformance.json (or its folder): the report and the statement say what "
        "changed since",
        metavar="STATEMENT",
        read=compare.load_statement,
        group="reports",
    ),
    Option(
        "package",
        "file",
        "also bundle the reports in a zip with a manifest.json of sha256 hashes",
        metavar="FILE.zip",
        group="reports",
    ),
    Option(
        "vendor",
        "text",
        "who makes the implementation, stated in the signed statement and every report; a "
        "certification body's register looks its signing key up by this name (printable, 100 "
        "characters at most)",
        metavar="NAME",
        group="reports",
    ),
    Option(
        "implementation",
        "text",
        "the implementation and its version, as it is to appear in a register (printable, 200 "
        "characters at most)",
        metavar="TEXT",
        group="reports",
    ),
    Option(
        "sign_key",
        "file",
        "PEM private key (Ed25519 or ECDSA P-256, unencrypted): sign the reports as an in-toto "
        "attestation, conformance.intoto.jsonl in the report folder",
        metavar="FILE",
        read=load_signer,
        group="reports",
    ),
    # --- HTTPS
    Option(
        "ca_bundle",
        "file",
        "PEM file of the CAs to trust for the target's certificate (a company's own CA)",
        absent="certifi's CAs, or SSL_CERT_FILE / SSL_CERT_DIR when set",
        metavar="FILE",
        group="https",
    ),
    Option(
        "client_cert",
        "file",
        "PEM client certificate, for a gateway that requires mutual TLS",
        metavar="FILE",
        group="https",
    ),
    Option(
        "client_key",
        "file",
        "PEM private key of --client-cert, unencrypted (not needed when the certificate's file "
        "holds it)",
        metavar="FILE",
        group="https",
    ),
    Option(
        "insecure",
        "switch",
        "do not verify the target's TLS certificate (stated in every report)",
        group="https",
    ),
)

BY_NAME = {option.name: option for option in OPTIONS}


def markdown_table(group: str) -> str:
    """The options of `group` as a Markdown table, for the docs (docs/hooks.py)."""
    rows = [
        "| option | environment | default | meaning |",
        "|---|---|---|---|",
    ]
    for option in OPTIONS:
        if option.group != group:
            continue
        given = "" if option.switch else " " + (option.metavar or "|".join(option.choices))
        default = option.default_words
        default = f"`{default}`" if default in option.choices else default
        rows.append(
            f"| `{option.flag}{given}` | `{option.environment}` | {default or '–'} "
            f"| {option.help} |"
        )
    return "\n".join(rows)
