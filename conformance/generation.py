"""Generated property tests: the data, the fairness rules and the share of the request budget.

The generated tests (`conformance/suite/test_generated.py`) draw requests from spec/openapi.yaml
with schemathesis' Hypothesis strategies and send every one of them through the run's
`ConformanceClient`, so that pacing, the request budget and redaction hold for them too. This
module holds what they share and what can be tested without a network:

- the fairness rules: which generated NewCategory bodies a correct server must accept, which it
  must refuse (and which requirement a 2xx would break), and which it may answer either way;
- the share of the request budget the generated tests may spend, and its split between them;
- `explore`, which runs a step over a strategy's examples, deterministically under a seed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import hypothesis
import hypothesis.errors
from hypothesis import strategies as st

from conformance import spec
from conformance.settings import exhaustion_reserve

NAME_LIMIT = 32
"""The longest name a server must accept (docs/design.md, "Strictness", CAT-NAME-RANGE)."""
DESCRIPTION_LIMIT = 100
"""The longest description the generated tests hold a server must accept."""
LIMITS = {"name": NAME_LIMIT, "description": DESCRIPTION_LIMIT}

NEW_CATEGORY_FIELDS = frozenset({"name", "description"})

GENERATED_REQUEST_TARGET = 120
"""Requests the generated tests aim to spend on a full run whose budget has room for them."""
GENERATED_SHARE = 0.3
"""Of the budget left after the exhaustion reserve, the part the generated tests may spend; the
rest is the hand-written scenarios'. With the default full budget (settings.SCENARIO_BUDGET =
400, plus the reserve) this gives exactly the target: 0.3 * 400 = 120."""
MAIN_KEY_SCENARIOS = 50
"""Requests the hand-written scenarios count against the main key's own limit."""
MAIN_KEY_MARGIN = 15
DEFAULT_PER_MINUTE = 60

SHARES: tuple[tuple[str, int], ...] = (
    # GET without parameters: Hypothesis has one request to draw, and stops after it.
    ("list_categories", 2),
    ("list_store_orders", 2),
    ("get_pet_by_id", 10),
    # Two requests per example: the create and the list that must show it.
    ("create_then_list", 16),
    ("create_negative", 34),
    ("create_positive", 36),
)
"""How the generated tests split their requests (weights, out of 100)."""

EXAMPLES_PER_REQUEST = 2
EXTRA_EXAMPLES = 10
MAX_EXAMPLES = 1_000
"""Hypothesis examples per test: more than the requests, as duplicates are not sent again."""


# -- the schema -------------------------------------------------------------------------------


def schemathesis_config(base_url: str) -> Any:
    """schemathesis' configuration for the generated tests, whatever a schemathesis.toml says.

    Only Hypothesis generation is used (`as_strategy`): no coverage, stateful or crash-replay
    machinery, no cache folder, no example database, and no Authorization header generated
    from the security scheme (the client sends the run's key). `from_path` ignores servers[0],
    so the base URL is given here (it shows in schemathesis' own curl lines).
    """
    from schemathesis.config import GenerationConfig, SchemathesisConfig

    config = SchemathesisConfig.from_dict(
        {
            "base-url": base_url,
            "cache": {"enabled": False},
            "analysis": {"constants": {"enabled": False}},
            "phases": {
                "coverage": {"enabled": False},
                "stateful": {"enabled": False},
            },
        }
    )
    # No codec: the same characters as "utf-8" (every one but a lone surrogate, which
    # schemathesis leaves out itself), without Hypothesis' table of what "utf-8" encodes. That
    # table is built by trying all 1,114,112 code points, a tuple each: some 200 MB at the
    # peak of every run, as Hypothesis' cache (where it would be kept) is made afresh in the
    # report folder. A config made in Python, as the file form takes no null.
    config.projects.default.generation = GenerationConfig(
        with_security_parameters=False, database="none", no_shrink=True, codec=None
    )
    return config


def load_operations(base_url: str) -> dict[str, Any]:
    """The operations of spec/openapi.yaml by operationId, loaded with schemathesis."""
    import schemathesis

    config = schemathesis_config(base_url)
    schema = schemathesis.openapi.from_path(spec.openapi_path(), config=config)
    operations = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        operations[operation.definition.raw["operationId"]] = operation
    return operations


def case_body(case: Any) -> Any:
    """The body of a schemathesis Case as this module sees it: NO_BODY when there is none."""
    from schemathesis.core import NotSet

    return NO_BODY if isinstance(case.body, NotSet) else case.body


def case_query(case: Any) -> dict[str, str] | None:
    """Generated query parameters as strings (the interface declares none; kept if drawn)."""
    query = case.query or {}
    if not query:
        return None
    return {
        str(name): value if isinstance(value, str) else json.dumps(value)
        for name, value in query.items()
    }


# -- budget -----------------------------------------------------------------------------------


def generated_request_budget(budget: int | None, per_minute: int | None) -> int:
    """Requests the generated tests may spend in all, out of a run's `budget`.

    Never more than GENERATED_REQUEST_TARGET, never any of what exhausting a key needs, and on a
    small plan no more than lets the main key's whole run fit in two of its windows: on a real
    minute, each window more the main key needs is a minute more of waiting, and past a
    hundred requests generated ones buy little more evidence.
    """
    room = max(30, 2 * (per_minute or DEFAULT_PER_MINUTE) - MAIN_KEY_SCENARIOS - MAIN_KEY_MARGIN)
    if budget is None:
        return min(GENERATED_REQUEST_TARGET, room)
    available = budget - exhaustion_reserve(per_minute)
    share = math.floor(available * GENERATED_SHARE)
    return max(0, min(GENERATED_REQUEST_TARGET, room, share))


def allocate(total: int, shares: tuple[tuple[str, int], ...] = SHARES) -> dict[str, int]:
    """Split `total` by the weights of `shares` (largest remainder): the parts add up to it."""
    if total < 0:
        raise ValueError(f"cannot allocate a negative number of requests: {total}")
    weight = sum(share for _, share in shares)
    exact = {name: total * share / weight for name, share in shares}
    parts = {name: math.floor(value) for name, value in exact.items()}
    left = total - sum(parts.values())
    # Ties go to the later (larger) share, in a fixed order: the split is deterministic.
    order = sorted(
        range(len(shares)),
        key=lambda index: (exact[shares[index][0]] - parts[shares[index][0]], index),
        reverse=True,
    )
    for index in order[:left]:
        parts[shares[index][0]] += 1
    return parts


def examples_for(requests: int) -> int:
    """Hypothesis examples to draw for a test that may send `requests` requests."""
    if requests <= 0:
        return 0
    return min(MAX_EXAMPLES, requests * EXAMPLES_PER_REQUEST + EXTRA_EXAMPLES)


@dataclass
class Allowance:
    """What one generated test may still send: its share, minus what it spent, and never the
    requests the rest of the run keeps in reserve (`reserve`, out of the client's remaining)."""

    share: int
    reserve: int = 0
    spent: int = 0

    def permits(self, cost: int, client_remaining: int | None) -> bool:
        if self.spent + cost > self.share:
            return False
        return client_remaining is None or client_remaining - cost >= self.reserve

    def record(self, sent: int) -> None:
        self.spent += sent


def derive_seed(seed: int, label: str) -> int:
    """A seed of its own for each generated test, fixed by the run's seed and the test's label."""
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


# -- fairness ---------------------------------------------------------------------------------


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: what a JavaScript or Java server counts."""
    return len(text.encode("utf-16-le")) // 2


def text_problem(text: str, limit: int = NAME_LIMIT) -> str | None:
    """Why a server may refuse `text` as a name or description, or None when it must accept it.

    Must be accepted: 1 to `limit` printable characters (`str.isprintable`), not all blank,
    counted both in code points and in UTF-16 code units.
    """
    if not text:
        return "it is empty"
    unprintable = next((char for char in text if not char.isprintable()), None)
    if unprintable is not None:
        return f"it holds U+{ord(unprintable):04X}, which is not a printable character"
    if not text.strip():
        return "it is blank"
    if len(text) > limit or utf16_length(text) > limit:
        return (
            f"it is longer than {limit} characters ({len(text)} code points, "
            f"{utf16_length(text)} UTF-16 units)"
        )
    return None


def fit_text(text: str, limit: int) -> str:
    """`text` without its unprintable characters, cut to at most `limit` code points and UTF-16
    units: generated text made into text a server must accept (when not empty or blank)."""
    kept = "".join(char for char in text if char.isprintable())
    while kept and (len(kept) > limit or utf16_length(kept) > limit):
        kept = kept[:-1]
    return kept


def fill_text(text: str, limit: int) -> str:
    """Printable `text` repeated up to exactly `limit` code points (fewer only where an astral
    character would overrun `limit` UTF-16 units): generated text at the length boundary."""
    kept = fit_text(text, limit) or "x"
    repeated = kept * (limit // len(kept) + 1)
    return fit_text(repeated, limit)


def join_name(stem: str, text: str, limit: int | None = None) -> str:
    """The run's unique `stem` (it carries the run's prefix) and generated `text`.

    With a `limit`, `text` is first made to fit, so that the whole name is a must-accept name.
    """
    if limit is not None:
        text = fit_text(text, limit - len(stem) - 1)
    return f"{stem}-{text}" if text else stem


class Expectation(Enum):
    MUST_ACCEPT = "must be accepted (201)"
    MAY_REJECT = "may be accepted (201) or refused (400)"
    MUST_REJECT = "must be refused (4xx)"


@dataclass(frozen=True)
class BodyVerdict:
    """What a correct server does with a POST /categories body, and why."""

    expectation: Expectation
    reason: str
    requirement_id: str | None = None
    """For MUST_REJECT: the requirement a 2xx answer breaks."""


MISSING_FIELD = "VAL-MISSING-FIELD-400"
INVALID_VALUE = "VAL-INVALID-VALUE-400"
MALFORMED_BODY = "VAL-MALFORMED-BODY-400"


class _NoBody:
    def __repr__(self) -> str:
        return "NO_BODY"


NO_BODY: Any = _NoBody()
"""A request without a body (schemathesis' NOT_SET, translated)."""


def judge_new_category(body: Any) -> BodyVerdict:
    """Judge a POST /categories body as it is sent: a JSON value, raw `bytes`, or NO_BODY."""
    if body is NO_BODY:
        return BodyVerdict(Expectation.MUST_REJECT, "there is no body", MALFORMED_BODY)
    if isinstance(body, bytes | bytearray):
        return _judge_raw(bytes(body))
    return _judge_document(body)


def _judge_raw(raw: bytes) -> BodyVerdict:
    readings = json_readings(raw)
    if not readings:
        return BodyVerdict(
            Expectation.MUST_REJECT, f"the body {raw[:40]!r} is not JSON", MALFORMED_BODY
        )
    verdicts = [_judge_document(document) for document in readings]
    if all(verdict.expectation is Expectation.MUST_REJECT for verdict in verdicts):
        return verdicts[0]
    # Some lenient reading of these bytes is a NewCategory: refusing and accepting both conform.
    return BodyVerdict(
        Expectation.MAY_REJECT, f"a lenient parser may read {raw[:40]!r} as a NewCategory"
    )


def json_readings(raw: bytes) -> list[Any]:
    """Every JSON document a strict or a lenient server might read from `raw`."""
    texts = []
    for encoding, errors in (("utf-8", "strict"), ("utf-8-sig", "strict"), ("utf-8", "replace")):
        try:
            texts.append(raw.decode(encoding, errors))
        except UnicodeDecodeError:
            continue
    readings: list[Any] = []
    for source in [*texts, raw]:  # bytes: Python's detection of UTF-16 and UTF-32 too
        try:
            document = json.loads(source)
        except (ValueError, RecursionError):
            continue
        if not any(document == seen and type(document) is type(seen) for seen in readings):
            readings.append(document)
    return readings


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _judge_document(document: Any) -> BodyVerdict:
    if not isinstance(document, dict):
        return BodyVerdict(
            Expectation.MUST_REJECT,
            f"the body is a JSON {_json_kind(document)}, not an object",
            MALFORMED_BODY,
        )
    if "name" not in document:
        return BodyVerdict(Expectation.MUST_REJECT, "the required `name` is missing", MISSING_FIELD)
    for field in ("name", "description"):
        if field in document and not isinstance(document[field], str):
            return BodyVerdict(
                Expectation.MUST_REJECT,
                f"`{field}` is a JSON {_json_kind(document[field])}, not a string",
                INVALID_VALUE,
            )
    extra = sorted(set(document) - NEW_CATEGORY_FIELDS)
    if extra:
        # Request fields the document does not describe: it does not say they are ignored.
        return BodyVerdict(
            Expectation.MAY_REJECT, f"it has fields NewCategory does not describe: {extra[:3]!r}"
        )
    for field in ("name", "description"):
        if field in document and (problem := text_problem(document[field], LIMITS[field])):
            return BodyVerdict(Expectation.MAY_REJECT, f"`{field}`: {problem}")
    return BodyVerdict(Expectation.MUST_ACCEPT, "a NewCategory of printable name and description")


def oversized_new_category(body: Any, stem: str, field: str, length: int) -> dict[str, str]:
    """A fair NewCategory whose `field` ("name" or "description") is filled to `length`
    characters of its generated text: past the limit a server may refuse it, never with a 5xx."""
    fair = fair_new_category(body, stem)
    generated = body if isinstance(body, dict) else {}
    text = generated.get(field)
    text = text if isinstance(text, str) else ""
    if field == "name":
        fair["name"] = f"{stem}-{fill_text(text, max(length - len(stem) - 1, 1))}"
    else:
        fair["description"] = fill_text(text, length)
    return fair


def prefixed(body: Any, stem: Callable[[], str]) -> Any:
    """`body` with its string `name` put after the run's unique `stem()`: every category the run
    may create carries the prefix. Bodies without a string name are returned as they are."""
    if isinstance(body, dict) and isinstance(body.get("name"), str):
        return {**body, "name": join_name(stem(), body["name"])}
    return body


def fair_new_category(body: Any, stem: str, *, longest: bool = False) -> dict[str, str]:
    """A NewCategory a correct server must accept, made from a generated one: only `name` and
    `description`, printable, within the length rule, and the name after the run's `stem`.

    `longest` fills the name and the description up to their limits (32, 100) with their
    generated text, so that the boundary is tried in every script the generator draws.
    """
    generated = body if isinstance(body, dict) else {}
    name_text = generated.get("name")
    name_text = name_text if isinstance(name_text, str) else ""
    if longest:
        name = f"{stem}-{fill_text(name_text, NAME_LIMIT - len(stem) - 1)}"
    else:
        name = join_name(stem, name_text, NAME_LIMIT)
    fair = {"name": name}
    description = generated.get("description")
    if isinstance(description, str):
        text = (fill_text if longest else fit_text)(description, DESCRIPTION_LIMIT)
        if text_problem(text, DESCRIPTION_LIMIT) is None:
            fair["description"] = text
    return fair


def fingerprint(method: str, path: str, body: Any, query: Mapping[str, Any] | None = None) -> str:
    """A stable key of a request as generated (before any prefix), to send no request twice."""
    if body is NO_BODY:
        shown = "-"
    elif isinstance(body, bytes | bytearray):
        shown = "bytes:" + bytes(body).hex()
    else:
        shown = "json:" + json.dumps(body, sort_keys=True, default=repr)
    parameters = json.dumps(dict(query or {}), sort_keys=True, default=repr)
    return f"{method.upper()} {path} {parameters} {shown}"


# -- running ----------------------------------------------------------------------------------


class _Enough(BaseException):  # noqa: N818 - not an error: the exploration is done
    """Raised by an exploration's step to stop Hypothesis there. Not an `Exception`: Hypothesis
    takes those (and SystemExit) for a failure to shrink and replay, and lets the others
    through at once, as it does KeyboardInterrupt."""


def explore(
    strategy: st.SearchStrategy[Any],
    step: Callable[[Any], bool],
    *,
    examples: int,
    seed: int,
) -> int:
    """Call `step` on up to `examples` values of `strategy`; returns how many it was called on.

    Deterministic: the same seed draws the same values (no example database, no shrinking, no
    health checks that a live target trips, no deadline). `step` returns False to stop; an
    exception it raises stops the exploration and is raised again here, once, without
    Hypothesis replaying the example (a replay would send the request again). Either stops
    Hypothesis at once: it would otherwise draw the rest of `examples` for nothing, half the
    CPU of a run's generated tests.
    """
    if examples <= 0:
        return 0
    state: dict[str, Any] = {"calls": 0, "error": None}

    @hypothesis.seed(seed)
    @hypothesis.settings(
        max_examples=examples,
        phases=(hypothesis.Phase.explicit, hypothesis.Phase.generate),
        database=None,
        deadline=None,
        derandomize=False,  # the explicit seed fixes the draws
        suppress_health_check=list(hypothesis.HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=hypothesis.Verbosity.quiet,
    )
    @hypothesis.given(strategy)
    def run(value: Any) -> None:
        state["calls"] += 1
        try:
            go_on = step(value)
        except Exception as error:  # raised again below, outside Hypothesis
            state["error"] = error
            go_on = False
        if not go_on:
            raise _Enough

    # Unsatisfiable: every draw was rejected by the strategy, so nothing was sent.
    with contextlib.suppress(hypothesis.errors.Unsatisfiable, _Enough):
        run()
    if state["error"] is not None:
        raise state["error"]
    return state["calls"]
