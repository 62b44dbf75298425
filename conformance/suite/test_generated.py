"""Generated properties: requests drawn from spec/openapi.yaml, judged by the catalogue.

schemathesis' Hypothesis strategies draw the requests of every operation: positive and negative
NewCategory bodies, arbitrary pet ids, the parameterless GETs. None is sent by schemathesis:
each goes through the run's `ConformanceClient`, so it is paced per key, counted against the
request budget and recorded redacted like any other request of the run. The rules a response
must meet are this module's, each citing its requirement id; what every response must meet
(rate-limit headers, no 5xx, Error bodies on 400 and 401) the plugin checks already.

Fair where the document is silent (conformance/generation.py holds the rules): a NewCategory
must be accepted only when its name is 1 to 32 and its description 1 to 100 printable
characters and it has no other fields; it must be refused only when it truly is not a
NewCategory (no object, no `name`, a field that is not a string, not JSON); everything in
between may go either way. Every name the run sends starts with the run's prefix, and every
category created is remembered.

Requests: generation.generated_request_budget(budget, per-minute figure), at most 120 (a full
run on a default budget), split by generation.SHARES; never any of the reserve that exhausting
a key needs. The same --seed draws the same requests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import strategies as st
from schemathesis.generation import GenerationMode

from conformance import generation
from conformance.generation import NO_BODY, Allowance, BodyVerdict, Expectation
from conformance.httpclient.budget import BudgetExhausted
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.categories import (
    check_json_media_type,
    created_category,
    listed_categories,
)
from conformance.judging.checks import expect
from conformance.judging.pets import announces_itself, served_a_pet

LIST_STATUSES = frozenset({200, 401, 429})
CREATE_STATUSES = frozenset({201, 400, 401, 413, 415, 429})
"""GEN-DOCUMENTED-STATUS: the documented answers, and 413 / 415 for a large or non-JSON body."""
OVERSIZED_LENGTH = 4_000
"""Longest name or description sent: far past 100, well below any sane body-size limit."""
SIMPLE_PET_ID = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~")


@dataclass
class Generated:
    """What the module's tests share: the operations, the split of the requests, what they made."""

    operations: dict[str, Any]
    shares: dict[str, int]
    reserve: int
    seed: int
    exhaustion_key: str
    created_ids: set[int] = field(default_factory=set)


@pytest.fixture(scope="module")
def generated(settings: Any) -> Generated:
    per_minute = settings.plan_limits[0]
    total = generation.generated_request_budget(settings.budget, per_minute)
    return Generated(
        operations=generation.load_operations(settings.base_url),
        shares=generation.allocate(total),
        reserve=generation.exhaustion_reserve(per_minute),
        seed=settings.seed,
        exhaustion_key=settings.exhaustion_key,
    )


class Sender:
    """Sends one generated test's requests through the client, inside the test's allowance."""

    def __init__(self, client: ConformanceClient, generated: Generated, label: str):
        share = generated.shares.get(label, 0)
        if share <= 0:
            pytest.skip("the request budget leaves no requests for this generated test")
        self.client = client
        self.generated = generated
        self.label = label
        self.seed = generation.derive_seed(generated.seed, label)
        self.allowance = Allowance(share=share, reserve=generated.reserve)
        self.examples = generation.examples_for(share)
        self.seen: set[str] = set()
        self.exhausted = False

    def first_time(self, key: str) -> bool:
        """True once per request key: a request drawn twice is sent once."""
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def can_send(self, cost: int = 1) -> bool:
        if self.exhausted:
            return False
        limit = self.client.max_requests
        remaining = None if limit is None else limit - self.client.requests_sent
        if remaining is not None and self.generated.exhaustion_key == "spare":
            # The spare key's exhaustion runs beside these tests: what it has spent already
            # came out of the reserve kept for it.
            spent = self.client.requests_per_key().get("spare", 0)
            remaining += min(spent, self.generated.reserve)
        return self.allowance.permits(cost, remaining)

    def send(self, method: str, path: str, **kwargs: Any) -> Exchange | None:
        """One request on the main key (the client retries 429s); None once the run's budget
        is spent."""
        before = self.main_key_sent()
        try:
            return self.client.request(method, path, **kwargs)
        except BudgetExhausted:
            self.exhausted = True  # stop here; the scenarios still to come keep their reserve
            return None
        finally:
            self.allowance.record(self.main_key_sent() - before)

    def main_key_sent(self) -> int:
        # The main key's count alone: the spare key's exhaustion runs beside, and what it sends
        # while this request waits is not this test's (on a loaded machine it was, and spent a
        # test's whole share on its first request).
        return self.client.requests_per_key().get("main", 0)

    def explore(self, strategy: st.SearchStrategy[Any], step: Callable[[Any], bool]) -> None:
        generation.explore(strategy, step, examples=self.examples, seed=self.seed)
        if self.allowance.spent == 0:
            pytest.skip("no generated request could be sent within the request budget")


# -- checks -----------------------------------------------------------------------------------


def shown(body: Any, limit: int = 120) -> str:
    if body is NO_BODY:
        return "no body"
    text = repr(body)
    return text if len(text) <= limit else text[:limit] + "..."


def check_key_accepted(exchange: Exchange) -> None:
    expect(
        "AUTH-BEARER-ACCEPTED",
        exchange.status != 401,
        f"{exchange.method} with the run's API key as a bearer token must be served, got 401",
        exchange,
    )


def check_documented_status(exchange: Exchange, operation: str, allowed: frozenset[int]) -> None:
    if exchange.status >= 500:
        return  # GEN-NO-SERVER-ERROR: the plugin's check of every response
    expect(
        "GEN-DOCUMENTED-STATUS",
        exchange.status in allowed,
        f"{operation} answers only {', '.join(map(str, sorted(allowed)))}; got {exchange.status}",
        exchange,
    )


def check_listing(exchange: Exchange) -> list[Any] | None:
    """GET /categories: 200, a JSON array of Category objects. Returns the array, if it is one."""
    if exchange.status == 429:
        return None  # still limited after the client's retries: nothing to judge
    check_key_accepted(exchange)
    check_documented_status(exchange, "listCategories", LIST_STATUSES)
    if not expect(
        "CAT-LIST-200",
        exchange.status == 200,
        f"GET /categories with a valid key must be answered 200, got {exchange.status}",
        exchange,
    ):
        return None
    check_json_media_type(exchange, "GET /categories")
    return listed_categories(exchange)


def check_created(exchange: Exchange, run: Any, generated: Generated) -> dict[str, Any] | None:
    """A 201 of POST /categories: a JSON Category with an id of its own. Returns it, if valid."""
    check_json_media_type(exchange, "POST /categories")
    category, problem = created_category(exchange)
    if isinstance(category, dict):
        run.remember_category(category)
    if not expect("CAT-SCHEMA", problem is None, problem or "the created Category", exchange):
        return None
    expect(
        "CAT-ID-UNIQUE",
        category["id"] not in generated.created_ids,
        f"every created category must get an id of its own; id {category['id']} was given before",
        exchange,
    )
    generated.created_ids.add(category["id"])
    return category


def check_echo(exchange: Exchange, sent: dict[str, str], category: dict[str, Any]) -> None:
    for name in ("name", "description"):
        if name in sent:
            expect(
                "CAT-ECHO",
                category.get(name) == sent[name],
                f"the created Category must echo the {name} exactly: sent {sent[name]!r}, "
                f"got {category.get(name, '(absent)')!r}",
                exchange,
            )


def judge_creation(
    exchange: Exchange, sent: Any, verdict: BodyVerdict, run: Any, generated: Generated
) -> dict[str, Any] | None:
    """Judge the answer to POST /categories with `sent` by `verdict`; returns what was created."""
    if exchange.status == 429:
        return None  # still limited after the client's retries: nothing to judge
    check_key_accepted(exchange)
    check_documented_status(exchange, "createCategory", CREATE_STATUSES)
    body = f"POST /categories with {shown(sent)}"
    if verdict.expectation is Expectation.MUST_REJECT:
        expect(
            verdict.requirement_id,
            400 <= exchange.status < 500,
            f"{body} must be refused (400), as {verdict.reason}; got {exchange.status}",
            exchange,
        )
    elif verdict.expectation is Expectation.MUST_ACCEPT:
        if set(sent) == {"name"}:
            expect(
                "CAT-NAME-RANGE",
                exchange.status != 400,
                f"{body} must be accepted: a name of 1 to {generation.NAME_LIMIT} printable "
                f"characters ({len(sent['name'])} code points); got {exchange.status}",
                exchange,
            )
        expect(
            "CAT-CREATE-201",
            exchange.status == 201,
            f"{body} ({verdict.reason}) must be answered 201, got {exchange.status}",
            exchange,
        )
    if exchange.status != 201:
        return None
    category = check_created(exchange, run, generated)
    if category is not None and verdict.expectation is Expectation.MUST_ACCEPT:
        check_echo(exchange, sent, category)
    return category


def post_category(sender: Sender, body: Any, media_type: str | None) -> Exchange | None:
    """POST a generated body as generated: JSON, raw bytes, or nothing."""
    if body is NO_BODY:
        return sender.send("POST", "/categories", headers={"Content-Type": "application/json"})
    if isinstance(body, bytes | bytearray):
        return sender.send(
            "POST",
            "/categories",
            content=bytes(body),
            headers={"Content-Type": media_type or "application/json"},
        )
    return sender.send("POST", "/categories", json=body)


def json_serialisable(body: Any) -> bool:
    if body is NO_BODY or isinstance(body, bytes | bytearray):
        return True
    try:
        json.dumps(body, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def explore_gets(sender: Sender, operation: Any, check: Callable[[Any, Exchange], Any]) -> None:
    """Send each distinct generated GET of `operation` once and judge its answer with `check`
    (a 429 that outlasted the client's retries is not judged)."""

    def step(case: Any) -> bool:
        query = generation.case_query(case)
        key = generation.fingerprint("GET", case.formatted_path, NO_BODY, query)
        if not sender.first_time(key):
            return True
        if not sender.can_send():
            return False
        exchange = sender.send("GET", case.formatted_path, params=query)
        if exchange is None:
            return False
        if exchange.status != 429:
            check(case, exchange)
        return True

    sender.explore(operation.as_strategy(), step)


# -- tests ------------------------------------------------------------------------------------


def test_generated_list_categories(client, generated):
    """listCategories: 200, a JSON array of Category objects, documented statuses only."""
    sender = Sender(client, generated, "list_categories")
    explore_gets(sender, generated.operations["listCategories"], lambda _, ex: check_listing(ex))


def test_generated_create_category_positive(client, run, generated):
    """createCategory with schema-valid bodies: the fair ones are created and echoed exactly."""
    sender = Sender(client, generated, "create_positive")
    operation = generated.operations["createCategory"]

    def step(drawn: tuple[Any, str, int]) -> bool:
        case, form, length = drawn
        raw = generation.case_body(case)
        size = length if form.startswith("long ") else ""
        key = f"{form} {size} " + generation.fingerprint("POST", case.formatted_path, raw)
        if not sender.first_time(key) or not json_serialisable(raw):
            return True
        if not sender.can_send():
            return False
        if form == "as generated":
            body = generation.prefixed(raw, run.unique_name)
        elif form.startswith("long "):
            field = form.removeprefix("long ")
            body = generation.oversized_new_category(raw, run.unique_name(), field, length)
        else:
            longest = form == "made fair, longest"
            body = generation.fair_new_category(raw, run.unique_name(), longest=longest)
        exchange = post_category(sender, body, case.media_type)
        if exchange is None:
            return False
        judge_creation(exchange, body, generation.judge_new_category(body), run, generated)
        return True

    forms = st.sampled_from(
        ["as generated", "made fair", "made fair, longest", "long name", "long description"]
    )
    # Past the limits (32 for a name) a server may refuse (400), but not fail (5xx).
    lengths = st.integers(min_value=generation.NAME_LIMIT + 1, max_value=OVERSIZED_LENGTH)
    sender.explore(st.tuples(operation.as_strategy(), forms, lengths), step)


# The two kinds of invalid NewCategory the document names (no `name`; a `name` that is not a
# string), sent before the drawn ones: for some seeds (6, 23 and 50 of the first 70), the
# negative draws within the share held no name of the wrong type, and that went unchecked.
NAMED_NEGATIVES = ({"description": "a category without a name"}, {"name": 12345})


def test_generated_create_category_negative(client, run, generated):
    """createCategory with bodies that break the schema: never created (a 4xx, 400 preferred)."""
    sender = Sender(client, generated, "create_negative")
    operation = generated.operations["createCategory"]

    def step(raw: Any, path: str = "/categories", media_type: str | None = None) -> bool:
        key = generation.fingerprint("POST", path, raw)
        if not sender.first_time(key) or not json_serialisable(raw):
            return True
        if not sender.can_send():
            return False
        body = generation.prefixed(raw, run.unique_name)
        exchange = post_category(sender, body, media_type)
        if exchange is None:
            return False
        judge_creation(exchange, body, generation.judge_new_category(body), run, generated)
        return True

    for body in NAMED_NEGATIVES:
        if not step(body):
            break  # out of requests: the draws below stop at once, or skip if none was sent
    sender.explore(
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        lambda case: step(generation.case_body(case), case.formatted_path, case.media_type),
    )


def test_generated_created_category_is_listed(client, run, generated):
    """Stateful: a category created from generated valid data then appears in GET /categories."""
    sender = Sender(client, generated, "create_then_list")
    operation = generated.operations["createCategory"]

    def step(case: Any) -> bool:
        raw = generation.case_body(case)
        if not sender.first_time(json.dumps(generation.fair_new_category(raw, ""))):
            return True
        if not sender.can_send(cost=2):
            return False
        body = generation.fair_new_category(raw, run.unique_name())
        verdict = generation.judge_new_category(body)
        created = post_category(sender, body, case.media_type)
        if created is None:
            return False
        category = judge_creation(created, body, verdict, run, generated)
        if category is None:
            return True
        listing = sender.send("GET", "/categories")
        if listing is None:
            return False
        listed = check_listing(listing)
        if listed is None:
            return True
        found = [
            item
            for item in listed
            if isinstance(item, dict)
            and item.get("id") == category["id"]
            and item.get("name") == body["name"]
            and ("description" not in body or item.get("description") == body["description"])
        ]
        expect(
            "CAT-LIST-COMPLETE",
            found,
            f"GET /categories must list the category just created, id {category['id']} with "
            f"name {body['name']!r} and description {body.get('description', '(not sent)')!r}",
            listing,
        )
        return True

    sender.explore(operation.as_strategy(), step)


def test_generated_get_pet_by_id(client, generated):
    """getPetById with arbitrary ids: the endpoint exists; 404 (no such pet) and 400 are fine."""
    sender = Sender(client, generated, "get_pet_by_id")

    def check(case: Any, exchange: Exchange) -> None:
        check_key_accepted(exchange)
        expect(
            "EP-PETS-EXISTS",
            exchange.status not in (405, 501),
            f"GET /pets/{{petId}} exists: it must not be answered {exchange.status}",
            exchange,
        )
        if 200 <= exchange.status < 300:
            for requirement, header in (
                ("DEP-DEPRECATION-HEADER", "Deprecation"),
                ("DEP-SUNSET-HEADER", "Sunset"),
            ):
                expect(
                    requirement,
                    exchange.header(header) is not None,
                    f"a {exchange.status} of the deprecated GET /pets/{{petId}} should carry "
                    f"a {header} header",
                    exchange,
                )
        pet_id = case.path_parameters.get("petId", "")
        if exchange.status == 404 and pet_id and set(pet_id) <= SIMPLE_PET_ID:
            # Only a plain id surely reached the endpoint: others may end on another route.
            expect(
                "EP-PETS-EXISTS",
                announces_itself(exchange) or served_a_pet(client),
                f"a 404 for pet {pet_id!r} must come from the deprecated endpoint: it carries "
                "neither Deprecation nor Sunset, and the endpoint served no pet in this run",
                exchange,
            )

    explore_gets(sender, generated.operations["getPetById"], check)


def test_generated_list_store_orders(client, generated):
    """listStoreOrders: the endpoint exists and serves a valid key (a 2xx)."""
    sender = Sender(client, generated, "list_store_orders")

    def check(_: Any, exchange: Exchange) -> None:
        check_key_accepted(exchange)
        expect(
            "EP-ORDERS-EXISTS",
            200 <= exchange.status < 300,
            f"GET /store/orders with a valid key must be answered with a 2xx, "
            f"got {exchange.status}",
            exchange,
        )

    explore_gets(sender, generated.operations["listStoreOrders"], check)
