"""Unit tests of conformance.generation: fairness rules, budget sizing, seeding. No network."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import strategies as st

from conformance import generation
from conformance.generation import (
    NO_BODY,
    Allowance,
    Expectation,
    allocate,
    derive_seed,
    examples_for,
    exhaustion_reserve,
    explore,
    fair_new_category,
    fit_text,
    generated_request_budget,
    join_name,
    judge_new_category,
    prefixed,
    text_problem,
    utf16_length,
)
from conformance.httpclient.budget import Budget
from conformance.judging.categories import category_problems
from conformance.settings import Settings

STEM = "psc-abcd2-1"

# -- fairness: text -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["a", "Dogs", " leading space", "猫と犬", "Кошки", "قطط وكلاب", "🐕🐈", "x" * 32, "😀" * 16],
)
def test_printable_names_of_1_to_32_must_be_accepted(text):
    assert text_problem(text) is None
    assert text_problem(text, generation.NAME_LIMIT) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("   ", "blank"),
        ("tab\there", "U+0009"),
        ("nul\x00", "U+0000"),
        ("c1\x85", "U+0085"),
        ("zwj\u200d", "U+200D"),
        ("nbsp\xa0", "U+00A0"),
        ("unassigned\U000e0fff", "U+E0FFF"),
        ("x" * 33, "longer than 32"),
        ("😀" * 17, "longer than 32"),  # 17 code points, 34 UTF-16 units
        ("😀" * 16 + "x", "longer than 32"),  # 17 code points, 33 UTF-16 units
    ],
)
def test_text_a_server_may_refuse(text, problem):
    assert problem in text_problem(text)


def test_utf16_counts_astral_characters_twice():
    assert utf16_length("a😀") == 3
    assert text_problem("😀" * 16) is None  # 16 code points, 32 UTF-16 units
    assert "UTF-16" in text_problem("a" + "😀" * 16)  # 17 code points, 33 UTF-16 units
    assert text_problem("😀" * 50, limit=100) is None


def test_fit_text_drops_unprintable_and_cuts_in_both_measures():
    assert fit_text("a\x00b\nc", 10) == "abc"
    assert fit_text("x" * 150, 100) == "x" * 100
    assert fit_text("😀" * 60, 100) == "😀" * 50
    assert fit_text("a" + "😀" * 60, 100) == "a" + "😀" * 49


def test_join_name_with_limit_gives_a_must_accept_name():
    name = join_name(STEM, "\x07" + "é" * 200, limit=32)
    assert name.startswith(STEM + "-")
    assert len(name) == 32
    assert text_problem(name) is None
    assert join_name(STEM, "\x00\x01", limit=32) == STEM
    assert join_name(STEM, "") == STEM
    assert join_name(STEM, "x" * 200) == f"{STEM}-{'x' * 200}"  # no limit: kept as generated


# -- fairness: bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Dogs"},
        {"name": "Dogs", "description": "Good boys"},
        {"name": "🐕 " * 10},  # 20 code points, 30 UTF-16 units
        {"name": "x" * 32, "description": "y" * 100},
    ],
)
def test_valid_printable_new_category_must_be_accepted(body):
    assert judge_new_category(body).expectation is Expectation.MUST_ACCEPT


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "  "},
        {"name": "x" * 33},  # names over 32 may be refused (docs/design.md)
        {"name": "line\nbreak"},
        {"name": "Dogs", "description": ""},
        {"name": "Dogs", "description": " "},
        {"name": "Dogs", "description": "d" * 101},
        {"name": "Dogs", "extra": 1},  # fields the document does not describe
        b'{"name": "Dogs"}',  # raw bytes that are a valid NewCategory
        b'\xef\xbb\xbf{"name": "Dogs"}',  # with a byte order mark
        b'{"name": "Dogs", "x": NaN}',  # not JSON, but Python-like parsers read it
    ],
)
def test_schema_valid_but_unusual_body_may_go_either_way(body):
    assert judge_new_category(body).expectation is Expectation.MAY_REJECT


@pytest.mark.parametrize(
    ("body", "requirement"),
    [
        ({}, "VAL-MISSING-FIELD-400"),
        ({"description": "no name"}, "VAL-MISSING-FIELD-400"),
        ({"nam": "typo"}, "VAL-MISSING-FIELD-400"),
        ({"name": 42}, "VAL-INVALID-VALUE-400"),
        ({"name": True}, "VAL-INVALID-VALUE-400"),
        ({"name": None}, "VAL-INVALID-VALUE-400"),
        ({"name": ["Dogs"]}, "VAL-INVALID-VALUE-400"),
        ({"name": {"text": "Dogs"}}, "VAL-INVALID-VALUE-400"),
        ({"name": "Dogs", "description": None}, "VAL-INVALID-VALUE-400"),
        ({"name": "Dogs", "description": 7}, "VAL-INVALID-VALUE-400"),
        ([{"name": "Dogs"}], "VAL-MALFORMED-BODY-400"),
        ("Dogs", "VAL-MALFORMED-BODY-400"),
        (7, "VAL-MALFORMED-BODY-400"),
        (None, "VAL-MALFORMED-BODY-400"),  # sent as the JSON literal null
        (NO_BODY, "VAL-MALFORMED-BODY-400"),
        (b"\x00", "VAL-MALFORMED-BODY-400"),
        (b'{"name": ', "VAL-MALFORMED-BODY-400"),
        (b"\xff\xfe", "VAL-MALFORMED-BODY-400"),
        (b"", "VAL-MALFORMED-BODY-400"),
        (b"[1, 2]", "VAL-MALFORMED-BODY-400"),
        (b"{}", "VAL-MISSING-FIELD-400"),
        (b'{"name": 1}', "VAL-INVALID-VALUE-400"),
    ],
)
def test_body_that_is_no_new_category_must_be_refused(body, requirement):
    verdict = judge_new_category(body)
    assert verdict.expectation is Expectation.MUST_REJECT
    assert verdict.requirement_id == requirement
    assert verdict.reason


def test_every_must_reject_id_is_in_the_catalogue():
    from conformance.spec import catalogue

    for requirement in (
        generation.MISSING_FIELD,
        generation.INVALID_VALUE,
        generation.MALFORMED_BODY,
    ):
        assert requirement in catalogue()


def test_prefixed_puts_the_run_stem_before_string_names_only():
    stems = iter(["s-1", "s-2"])
    assert prefixed({"name": "Dogs", "x": 1}, lambda: next(stems)) == {"name": "s-1-Dogs", "x": 1}
    assert prefixed({"name": ""}, lambda: next(stems)) == {"name": "s-2"}
    untouched = [{"name": 5}, {"description": "d"}, b"raw", NO_BODY, ["Dogs"]]
    for body in untouched:
        assert (
            prefixed(body, lambda: pytest.fail("no stem for a body without a string name")) is body
        )


@pytest.mark.parametrize(
    "generated",
    [
        {"name": ""},
        {"name": "\x00\x01", "description": "\n"},
        {"name": "é" * 300, "description": "😀" * 80, "extra": [1]},
        {"name": "ok", "description": "  "},
        {"description": 5},
        b"\x00",
        NO_BODY,
    ],
)
def test_fair_new_category_is_always_a_must_accept_body(generated):
    body = fair_new_category(generated, STEM)
    assert set(body) <= {"name", "description"}
    assert body["name"].startswith(STEM)
    assert judge_new_category(body).expectation is Expectation.MUST_ACCEPT


def test_fair_new_category_keeps_what_is_already_fair():
    body = fair_new_category({"name": "Dogs", "description": "Good boys"}, STEM)
    assert body == {"name": f"{STEM}-Dogs", "description": "Good boys"}


def test_fingerprint_tells_bodies_apart_and_ignores_key_order():
    first = generation.fingerprint("post", "/categories", {"a": 1, "b": 2})
    assert first == generation.fingerprint("POST", "/categories", {"b": 2, "a": 1})
    assert first != generation.fingerprint("POST", "/categories", {"a": 1})
    assert generation.fingerprint("POST", "/c", b"{}") != generation.fingerprint("POST", "/c", {})
    assert generation.fingerprint("POST", "/c", NO_BODY) != generation.fingerprint(
        "POST", "/c", None
    )


# -- responses ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "category",
    [
        {"id": 1, "name": "Dogs"},
        {"id": 2**63 - 1, "name": "", "description": "d"},
        {"id": -(2**63), "name": "x", "extra": [1]},
    ],
)
def test_category_schema_accepts_categories(category):
    assert category_problems(category) == []


@pytest.mark.parametrize(
    "value",
    [
        [],
        None,
        {"name": "Dogs"},
        {"id": 1},
        {"id": "1", "name": "Dogs"},
        {"id": 1.0, "name": "Dogs"},
        {"id": True, "name": "Dogs"},
        {"id": 2**63, "name": "Dogs"},
        {"id": 1, "name": 5},
        {"id": 1, "name": "Dogs", "description": None},
    ],
)
def test_category_schema_finds_problems(value):
    assert category_problems(value)


# -- budget -------------------------------------------------------------------------------------


def settings_for(**options) -> Settings:
    return Settings(base_url="http://127.0.0.1:1/v1", api_key="key-main-k", **options)


@pytest.mark.parametrize("plan", ["pro", "business"])
def test_a_default_full_budget_gives_the_target(plan):
    settings = settings_for(plan=plan)
    per_minute = settings.plan_limits[0]
    assert generated_request_budget(settings.budget, per_minute) == 120


@pytest.mark.parametrize("plan", ["free", "enterprise"])
def test_a_free_plan_keeps_the_main_key_within_two_windows(plan):
    # 2 * 60 - 50 (scenarios) - 15 (margin): on a real minute each further window of the main
    # key is a minute more of waiting.
    settings = settings_for(plan=plan)
    assert generated_request_budget(settings.budget, settings.plan_limits[0]) == 55


def test_a_smaller_budget_gives_fewer_requests_and_keeps_the_reserve():
    assert generated_request_budget(360, 60) == 33  # (360 - 250) * 0.3
    assert generated_request_budget(260, 60) == 3
    assert generated_request_budget(250, 60) == 0
    assert generated_request_budget(10, 60) == 0
    for budget in range(0, 2_000, 7):
        share = generated_request_budget(budget, 300)
        assert 0 <= share <= 120
        assert share + exhaustion_reserve(300) <= max(budget, exhaustion_reserve(300))


def test_no_budget_means_the_target_within_the_main_key_room():
    assert generated_request_budget(None, 300) == 120
    assert generated_request_budget(None, 60) == 55
    assert generated_request_budget(None, 30) == 30  # never fewer than a useful few


def test_exhaustion_reserve_matches_the_settings_budget():
    for plan in ("free", "pro", "business"):
        settings = settings_for(plan=plan)
        assert settings.budget - exhaustion_reserve(settings.plan_limits[0]) == 400


@pytest.mark.parametrize("total", [0, 1, 2, 5, 7, 39, 100, 120, 1_000])
def test_allocate_splits_exactly_and_deterministically(total):
    parts = allocate(total)
    assert set(parts) == {name for name, _ in generation.SHARES}
    assert sum(parts.values()) == total
    assert all(part >= 0 for part in parts.values())
    assert parts == allocate(total)


def test_allocate_follows_the_weights():
    parts = allocate(120)
    assert parts["create_positive"] >= parts["create_negative"] > parts["create_then_list"]
    assert parts["create_then_list"] > parts["get_pet_by_id"] > parts["list_categories"]
    with pytest.raises(ValueError):
        allocate(-1)


def test_examples_leave_room_for_duplicates():
    assert examples_for(0) == 0
    assert examples_for(1) > 1
    assert examples_for(43) >= 86
    assert examples_for(10_000) == generation.MAX_EXAMPLES


def test_allowance_stops_at_the_share_and_at_the_reserve():
    allowance = Allowance(share=3, reserve=70)
    assert allowance.permits(1, client_remaining=None)
    assert allowance.permits(2, client_remaining=72)
    assert not allowance.permits(2, client_remaining=71)  # would eat into the reserve
    allowance.record(2)
    assert allowance.permits(1, client_remaining=100)
    assert not allowance.permits(2, client_remaining=100)  # beyond the share
    allowance.record(1)
    assert not allowance.permits(1, client_remaining=None)


class SpareSentBeside:
    """A client whose every main-key request overlaps five of the spare key's: its exhaustion,
    sent beside the generated tests from a thread of its own. Counted by the client's Budget."""

    max_requests = None

    def __init__(self):
        self.budget = Budget(None, lambda label: None)

    def requests_per_key(self) -> dict[str, int]:
        return self.budget.per_label()

    def request(self, method: str, path: str, **kwargs) -> str:
        for _ in range(5):
            self.budget.count("spare")
        self.budget.count("main")
        return f"{method} {path}"


def test_a_generated_test_spends_its_share_on_its_own_requests_only():
    from conformance.suite.test_generated import Generated, Sender

    shares = {"create_negative": 3}
    generated = Generated({}, shares, reserve=0, seed=1, exhaustion_key="spare")
    sender = Sender(SpareSentBeside(), generated, "create_negative")
    sent = []
    while sender.can_send():
        sent.append(sender.send("POST", "/categories"))
    assert sent == ["POST /categories"] * 3  # not one, its share gone on the spare's five
    assert sender.allowance.spent == 3


# -- seeding and running ------------------------------------------------------------------------


def test_derived_seeds_are_stable_and_differ_by_label_and_seed():
    assert derive_seed(0, "create_positive") == derive_seed(0, "create_positive")
    assert derive_seed(0, "create_positive") != derive_seed(0, "create_negative")
    assert derive_seed(0, "create_positive") != derive_seed(1, "create_positive")
    assert 0 <= derive_seed(123, "x") < 2**64


def draws(seed: int, examples: int = 20) -> list:
    seen: list = []
    explore(
        st.dictionaries(st.text(), st.integers()),
        lambda value: seen.append(value) is None,
        examples=examples,
        seed=seed,
    )
    return seen


def test_explore_is_deterministic_under_a_seed():
    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert len(draws(7, examples=20)) == 20


def test_explore_stops_when_the_step_says_so():
    calls: list = []

    def step(value):
        calls.append(value)
        return len(calls) < 3

    assert explore(st.integers(), step, examples=50, seed=1) == 3
    assert len(calls) == 3


def test_explore_draws_nothing_once_the_step_says_stop():
    """Hypothesis is stopped there, not left to draw the rest of the examples for nothing."""
    drawn: list = []

    @st.composite
    def counted(draw):
        drawn.append(draw(st.integers()))
        return drawn[-1]

    assert explore(counted(), lambda value: len(drawn) < 3, examples=50, seed=1) == 3
    assert len(drawn) == 3


def test_explore_raises_a_step_error_once_without_replaying():
    calls: list = []

    class Boom(Exception):
        pass

    def step(value):
        calls.append(value)
        raise Boom("target unreachable")

    with pytest.raises(Boom):
        explore(st.integers(), step, examples=50, seed=1)
    assert len(calls) == 1


def test_explore_with_no_examples_draws_nothing():
    assert explore(st.integers(), lambda value: pytest.fail("drawn"), examples=0, seed=1) == 0


# -- the schema -----------------------------------------------------------------------------------


def test_operations_load_from_the_spec_without_a_network():
    operations = generation.load_operations("http://127.0.0.1:1/v1")
    assert set(operations) == {"listCategories", "createCategory", "getPetById", "listStoreOrders"}
    config = operations["createCategory"].schema.config
    assert config.base_url == "http://127.0.0.1:1/v1"
    assert config.phases.coverage.enabled is False
    assert config.generation.with_security_parameters is False


def test_generated_create_bodies_are_deterministic_and_carry_no_authorization():
    from schemathesis.generation import GenerationMode

    operation = generation.load_operations("http://127.0.0.1:1/v1")["createCategory"]

    def collect(mode):
        cases: list = []
        explore(
            operation.as_strategy(generation_mode=mode),
            lambda case: cases.append(case) is None,
            examples=15,
            seed=5,
        )
        return cases

    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        first, second = collect(mode), collect(mode)
        bodies = [generation.case_body(case) for case in first]
        assert bodies == [generation.case_body(case) for case in second]
        assert all("authorization" not in {k.lower() for k in case.headers or {}} for case in first)
    positive = [generation.case_body(case) for case in collect(GenerationMode.POSITIVE)]
    assert all(
        judge_new_category(body).expectation is not Expectation.MUST_REJECT for body in positive
    )


def test_case_query_stringifies_values():
    class Case:
        query = {"a": 1, "b": "x", "c": [1, 2]}

    assert generation.case_query(Case()) == {"a": "1", "b": "x", "c": json.dumps([1, 2])}
    Case.query = {}
    assert generation.case_query(Case()) is None


@pytest.mark.parametrize("text", ["", "ab", "\x00", "😀", "a😀", "猫と犬", "x" * 300])
def test_fill_text_reaches_the_limit_in_both_measures(text):
    filled = generation.fill_text(text, 75)
    assert text_problem(filled, limit=75) is None
    assert len(filled) == 75 or utf16_length(filled) >= 74


@pytest.mark.parametrize(
    "generated",
    [{"name": ""}, {"name": "é", "description": "😀"}, {"name": "\x00", "description": " "}],
)
def test_longest_fair_new_category_sits_on_the_boundary(generated):
    body = fair_new_category(generated, STEM, longest=True)
    assert len(body["name"]) == 32
    assert judge_new_category(body).expectation is Expectation.MUST_ACCEPT
    if "description" in body:
        assert len(body["description"]) == 100 or utf16_length(body["description"]) >= 99


@pytest.mark.parametrize("field", ["name", "description"])
@pytest.mark.parametrize("length", [101, 1_500])
def test_oversized_new_category_may_be_refused(field, length):
    generated = {"name": "猫", "description": "😀x"}
    body = generation.oversized_new_category(generated, STEM, field, length)
    assert len(body[field]) == length or utf16_length(body[field]) >= length - 1
    assert body["name"].startswith(STEM)
    verdict = judge_new_category(body)
    assert verdict.expectation is Expectation.MAY_REJECT
    assert f"`{field}`: it is longer than {generation.LIMITS[field]}" in verdict.reason


GENERATION_PEAK_MB = 160  # drawing every operation's cases; Hypothesis' utf-8 table alone is ~200


def test_generating_cases_stays_small_with_a_fresh_hypothesis_cache(tmp_path):
    """Every run starts with an empty Hypothesis cache (in its report folder): the generated
    tests must not make Hypothesis build its table of what a codec encodes, a tuple for each of
    1,114,112 code points (280 MB at the peak in a process that drew every operation's cases)."""
    # The process's own high-water mark (VmHWM), not getrusage's ru_maxrss: Linux carries the
    # spawning process's peak over into a child's ru_maxrss at exec, and a pytest worker deep in
    # a parallel run is bigger than the bound (it read 259 MB where VmHWM said 91).
    draw = (
        "import hypothesis\n"
        "from hypothesis.configuration import set_hypothesis_home_dir\n"
        "from conformance import generation\n"
        f"set_hypothesis_home_dir({str(tmp_path / '.hypothesis')!r})\n"
        "for operation in generation.load_operations('http://127.0.0.1:1/v1').values():\n"
        "    generation.explore(operation.as_strategy(), lambda case: True, examples=20, seed=1)\n"
        "status = open('/proc/self/status').read()\n"
        "print(int(status.split('VmHWM:')[1].split()[0]) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", draw], capture_output=True, text=True, timeout=300, check=True
    )
    peak_mb = int(done.stdout.split()[-1])
    print(f"{peak_mb} MB drawing cases")
    assert peak_mb < GENERATION_PEAK_MB, f"{peak_mb} MB drawing cases"
