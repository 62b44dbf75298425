"""Unit tests of `conformance.settings`: options from the command line and the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.options import BY_NAME, OPTIONS
from conformance.settings import SMOKE_BUDGET, TAG_ALPHABET, Settings, SettingsError, resolve

MAIN = "sk-main-Secret-7f3a"
SPARE = "sk-spare-Secret-91bc"
BASE = "http://petstore.test/v1"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """No PETSTORE_* variable of the machine running the tests leaks into these."""
    for option in OPTIONS:
        monkeypatch.delenv(option.environment, raising=False)


def settings(**options) -> Settings:
    return Settings(**{"base_url": BASE, "api_key": MAIN, **options})


def test_every_option_has_a_petstore_variable():
    assert BY_NAME["base_url"].environment == "PETSTORE_BASE_URL"
    assert BY_NAME["api_key"].environment == "PETSTORE_API_KEY"
    assert BY_NAME["spare_api_key"].environment == "PETSTORE_SPARE_API_KEY"
    assert all(option.environment.startswith("PETSTORE_") for option in OPTIONS)


def test_nothing_given_resolves_to_none_and_not_strict():
    options = resolve({})
    assert set(options) == set(BY_NAME)
    assert options["strict"] is False
    assert options["allow_key_in_url"] is False
    assert all(options[o.name] is None for o in OPTIONS if not o.switch)


def test_resolve_reads_the_environment(monkeypatch):
    """A run set up wholly from the environment, as CI hands it over (each option's own variable
    is tested in tests/checker/test_options.py): the values parsed, the run's settings built."""
    given = {
        "PETSTORE_BASE_URL": BASE,
        "PETSTORE_API_KEY": MAIN,
        "PETSTORE_PLAN": "enterprise",
        "PETSTORE_REQUESTS_PER_MINUTE": "500",
        "PETSTORE_REQUESTS_PER_DAY": "20000",
        "PETSTORE_MAX_REQUESTS": "25",
        "PETSTORE_DEADLINE": "600",
        "PETSTORE_REPORT_DIR": "out/here",
        "PETSTORE_STRICT": "true",
        "PETSTORE_USER_AGENT": "curl/8.5.0",
    }
    for variable, value in given.items():
        monkeypatch.setenv(variable, value)
    options = resolve({})
    assert options["requests_per_minute"] == 500
    assert options["report_dir"] == Path("out/here")
    assert options["strict"] is True
    built = Settings(**{name: value for name, value in options.items() if value is not None})
    assert built.plan_limits == (500, 20_000)
    assert built.budget == 25
    assert built.user_agent == "curl/8.5.0"
    assert built.run_deadline == 600
    assert built.report_dir == Path("out/here")
    assert built.strict is True
    assert built.profile == "full"  # not given: its declared default


def test_an_option_given_nowhere_takes_its_declared_default():
    built = Settings(base_url=BASE, api_key=MAIN)
    for option in OPTIONS[2:]:
        assert getattr(built, option.name) == (False if option.switch else option.default)
    assert (built.plan, built.profile, built.seed) == ("free", "full", 0)
    assert built.report_dir == Path("reports") and built.spare_api_key is None


def test_keys_and_what_files_are_read_into_are_not_shown():
    shown = repr(Settings(base_url=BASE, api_key=MAIN, spare_api_key=SPARE))
    assert MAIN not in shown and SPARE not in shown
    assert "sign_key" not in shown and "previous" not in shown


def test_the_run_deadline_defaults_to_what_the_profile_needs():
    full = Settings(base_url=BASE, api_key=MAIN)
    smoke = Settings(base_url=BASE, api_key=MAIN, profile="smoke")
    assert full.run_deadline == 1080  # ten minutes and the exhaustion's four windows and resets
    assert smoke.run_deadline == 300
    with pytest.raises(SettingsError, match="--deadline must be a positive"):
        Settings(base_url=BASE, api_key=MAIN, deadline=0)


@pytest.mark.parametrize("agent", ["", " ", "curl/8\r\nX-Injected: 1", "agent\u00e9", "x" * 257])
def test_a_user_agent_that_is_no_header_value_is_refused(agent):
    with pytest.raises(SettingsError, match="--user-agent"):
        Settings(base_url=BASE, api_key=MAIN, user_agent=agent)


def test_the_default_user_agent_names_the_checker():
    assert Settings(base_url=BASE, api_key=MAIN).user_agent.startswith("petstore-conformance/")


def test_environment_values_are_stripped_and_blank_means_absent(monkeypatch):
    monkeypatch.setenv("PETSTORE_API_KEY", f"  {MAIN}\n")
    monkeypatch.setenv("PETSTORE_SPARE_API_KEY", "   ")
    monkeypatch.setenv("PETSTORE_SEED", " 3 ")
    options = resolve({})
    assert options["api_key"] == MAIN
    assert options["spare_api_key"] is None
    assert options["seed"] == 3


def test_the_command_line_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("PETSTORE_BASE_URL", "http://from-env.test/v1")
    monkeypatch.setenv("PETSTORE_API_KEY", "env-key")
    monkeypatch.setenv("PETSTORE_PLAN", "pro")
    monkeypatch.setenv("PETSTORE_MAX_REQUESTS", "99")
    monkeypatch.setenv("PETSTORE_STRICT", "1")
    options = resolve(
        {
            "base_url": BASE,
            "api_key": MAIN,
            "plan": "business",
            "max_requests": "12",
            "strict": False,
        }
    )
    assert options["base_url"] == BASE
    assert options["api_key"] == MAIN
    assert options["plan"] == "business"
    assert options["max_requests"] == 12
    assert options["strict"] is False


def test_an_option_not_given_on_the_command_line_falls_back_to_the_environment(monkeypatch):
    monkeypatch.setenv("PETSTORE_API_KEY", "env-key")
    options = resolve({"base_url": BASE, "api_key": None})
    assert options["api_key"] == "env-key"


@pytest.mark.parametrize("text", ["1", "true", "YES", "on", " True "])
def test_strict_from_the_environment_true(monkeypatch, text):
    monkeypatch.setenv("PETSTORE_STRICT", text)
    assert resolve({})["strict"] is True


@pytest.mark.parametrize("text", ["0", "false", "no", "off", "maybe"])
def test_strict_from_the_environment_false(monkeypatch, text):
    monkeypatch.setenv("PETSTORE_STRICT", text)
    assert resolve({})["strict"] is False


@pytest.mark.parametrize(
    ("name", "variable", "flag"),
    [
        ("max_requests", "PETSTORE_MAX_REQUESTS", "--max-requests"),
        ("requests_per_minute", "PETSTORE_REQUESTS_PER_MINUTE", "--requests-per-minute"),
        ("requests_per_day", "PETSTORE_REQUESTS_PER_DAY", "--requests-per-day"),
        ("seed", "PETSTORE_SEED", "--seed"),
    ],
)
@pytest.mark.parametrize("bad", ["ten", "1.5", "12abc", "1e3"])
def test_a_bad_integer_raises_a_one_line_settings_error(monkeypatch, name, variable, flag, bad):
    with pytest.raises(SettingsError) as from_command_line:
        resolve({name: bad})
    monkeypatch.setenv(variable, bad)
    with pytest.raises(SettingsError) as from_environment:
        resolve({})
    for error in (from_command_line.value, from_environment.value):
        message = str(error)
        assert "\n" not in message
        assert flag in message
        assert repr(bad) in message


def test_a_bad_integer_with_a_newline_still_gives_one_line():
    with pytest.raises(SettingsError) as error:
        resolve({"max_requests": "12\nrm -rf"})
    assert "\n" not in str(error.value)


def test_settings_error_is_a_value_error():
    assert issubclass(SettingsError, ValueError)


@pytest.mark.parametrize("plan", ["gold", "Free", ""])
def test_an_unknown_plan_is_rejected(plan):
    with pytest.raises(SettingsError, match="plan"):
        settings(plan=plan)


@pytest.mark.parametrize("profile", ["quick", "FULL", ""])
def test_an_unknown_profile_is_rejected(profile):
    with pytest.raises(SettingsError, match="profile"):
        settings(profile=profile)


@pytest.mark.parametrize("name", ["max_requests", "requests_per_minute", "requests_per_day"])
@pytest.mark.parametrize("value", [0, -5])
def test_counts_must_be_positive(name, value):
    with pytest.raises(SettingsError, match="--" + name.replace("_", "-")):
        settings(**{name: value})


def test_a_missing_api_key_is_a_settings_error_naming_the_variable():
    with pytest.raises(SettingsError, match="PETSTORE_API_KEY"):
        settings(api_key="")


def test_the_smoke_budget_is_small_whatever_the_plan():
    assert settings(profile="smoke").budget == SMOKE_BUDGET == 30
    assert settings(profile="smoke", plan="business").budget == 30


@pytest.mark.parametrize(
    ("plan", "extra", "budget"),
    [
        ("free", {}, 650),  # 400 + 4 * 60 + 10
        ("pro", {}, 1610),
        ("business", {}, 4410),
        ("enterprise", {}, 650),
        ("enterprise", {"requests_per_minute": 10_000}, 40_410),
        ("enterprise", {"requests_per_minute": 120}, 890),
    ],
)
def test_the_full_budget_depends_on_the_per_minute_figure(plan, extra, budget):
    assert settings(plan=plan, **extra).budget == budget


def test_the_full_budget_covers_four_minutes_of_the_plan():
    # Headers that report the day's window hide where a minute ends: the exhaustion may need
    # two minutes' quota to prove a limit is (not) enforced, and two more when 429s came too
    # late in their windows to tell.
    for plan in ("free", "pro", "business"):
        full = settings(plan=plan)
        assert full.budget > 4 * full.plan_limits[0]


def test_max_requests_overrides_the_budget():
    assert settings(max_requests=5).budget == 5
    assert settings(profile="smoke", max_requests=500).budget == 500


def test_plan_limits_of_published_plans_and_enterprise():
    assert settings(plan="free").plan_limits == (60, 1_000)
    assert settings(plan="pro").plan_limits == (300, 10_000)
    assert settings(plan="business").plan_limits == (1_000, 100_000)
    assert settings(plan="enterprise").plan_limits == (None, None)
    assert settings(plan="enterprise", requests_per_day=5).plan_limits == (None, 5)


def test_the_spare_key_is_exhausted_when_given_else_the_main_key():
    assert settings(spare_api_key=SPARE).exhaustion_key == "spare"
    assert settings().exhaustion_key == "main"
    assert settings(spare_api_key="").exhaustion_key == "main"


def test_keys_are_labelled():
    assert settings().keys == {"main": MAIN}
    assert settings(spare_api_key=SPARE).keys == {"main": MAIN, "spare": SPARE}


def test_the_name_prefix_carries_the_run_tag():
    run = settings(run_id="20250301120000-abcd")
    assert run.name_prefix == "psc-abcd-"


def test_the_name_prefix_is_short_and_readable():
    # 10 characters leave 19 of the 32 every server must accept for a counter and a text.
    for _ in range(50):
        prefix = settings().name_prefix
        assert len(prefix) == 10
        tag = prefix.removeprefix("psc-").removesuffix("-")
        assert set(tag) <= set(TAG_ALPHABET)


def test_two_runs_get_different_run_ids_and_prefixes():
    assert settings().name_prefix != settings().name_prefix


def test_the_repr_never_contains_the_keys():
    built = settings(spare_api_key=SPARE)
    for text in (repr(built), str(built), f"{built}", repr([built])):
        assert MAIN not in text
        assert SPARE not in text
        assert BASE in text  # the repr is still useful
