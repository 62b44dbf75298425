"""Each option of a run is declared once (conformance/options.py), and the command line, the
pytest plugin, the environment, the Settings and the docs are made from that declaration: these
tests fail when an option is declared in one place and missing from another."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import cli, plugin
from conformance.options import BY_NAME, GROUPS, OPTIONS
from conformance.settings import Settings, SettingsError, resolve

DOCS = Path(__file__).resolve().parents[2] / "docs"
NOT_OPTIONS = {"run_id"}  # Settings fields the run makes itself


def test_every_option_is_a_settings_field_and_every_field_an_option():
    fields = {field.name for field in dataclasses.fields(Settings)} - NOT_OPTIONS
    assert {option.name for option in OPTIONS} == fields


def test_the_command_line_has_every_option_and_no_other():
    parser = cli.build_parser()
    flags = {flag for action in parser._actions for flag in action.option_strings}
    assert flags - {"-h", "--help"} == {option.flag for option in OPTIONS}


def test_the_pytest_plugin_has_every_option_and_no_other():
    added: list[tuple[tuple[str, ...], dict]] = []

    class Group:
        def addoption(self, *names: str, **settings: object) -> None:
            added.append((names, settings))

    class Parser:
        def getgroup(self, *_: object) -> Group:
            return Group()

    plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    assert {names[0] for names, _ in added} == {o.pytest_flag or o.flag for o in OPTIONS}
    assert {settings["dest"] for _, settings in added} == {f"petstore_{o.name}" for o in OPTIONS}


VALUES = {"text": "sk-from-the-environment", "count": "7", "number": "-3", "switch": "yes"}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
def test_every_option_reads_its_environment_variable(option, monkeypatch, tmp_path):
    for other in OPTIONS:
        monkeypatch.delenv(other.environment, raising=False)
    if option.kind == "file":
        # A file that is not there: the option's reader refuses it, or it is kept as the path.
        missing = tmp_path / "not-there"
        monkeypatch.setenv(option.environment, str(missing))
        try:
            assert resolve({})[option.name] == missing
        except SettingsError as error:
            assert "not-there" in str(error)
        return
    value = option.choices[-1] if option.choices else VALUES[option.kind]
    monkeypatch.setenv(option.environment, value)
    resolved = resolve({})[option.name]
    assert resolved == (True if option.switch else int(value) if value[-1].isdigit() else value)


def test_given_on_the_command_line_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv(BY_NAME["plan"].environment, "pro")
    assert resolve({"plan": "business"})["plan"] == "business"


def rendered(page: str) -> str:
    """A page of the docs as MkDocs renders it, through the docs' own hook."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)  # type: ignore[union-attr]
    return hooks.on_page_markdown((DOCS / page).read_text(encoding="utf-8"))


def test_every_option_of_the_help_is_in_the_docs():
    """What `petstore-conformance --help` offers, the options page documents, with its
    environment variable: the page's tables are made from the declaration."""
    shown = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flags = set(re.findall(r"^  (--[a-z][a-z-]+)", shown, re.MULTILINE)) - {"--help"}
    assert len(flags) == len(OPTIONS), sorted(flags)
    page = rendered("options.md")
    for flag in flags:
        assert f"`{flag}" in page, f"{flag} is offered by --help but not documented"
    for option in OPTIONS:
        assert f"`{option.environment}`" in page, option.environment


def test_every_group_of_options_is_on_the_options_page():
    page = (DOCS / "options.md").read_text(encoding="utf-8")
    for group in GROUPS:
        assert f"{{{{ options:{group} }}}}" in page, group
    assert {option.group for option in OPTIONS} <= set(GROUPS)


def test_every_option_of_the_client_mode_is_in_the_docs():
    """`petstore-conformance client --help` and the client page's table come from one parser."""
    shown = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "client", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flags = set(re.findall(r"^  (--[a-z][a-z-]+)", shown, re.MULTILINE)) - {"--help"}
    assert "--command" in flags and "--scenario" in flags, shown
    page = rendered("clients.md")
    for flag in flags:
        assert f"`{flag}" in page, f"client {flag} is offered by --help but not documented"
    for variable in re.findall(r"\[env (\w+)\]", shown):
        assert f"`{variable}`" in page, variable


@pytest.mark.parametrize("subcommand", cli.SUBCOMMANDS)
def test_every_subcommand_answers_help(subcommand):
    shown = subprocess.run(
        [sys.executable, "-m", "conformance.cli", subcommand, "--help"],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"petstore-conformance {subcommand}" in shown.stdout
