"""`petstore-conformance`: check a target (or the bundled reference), write the reports, exit
0 conformant, 1 not conformant, 2 no verdict."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from conformance import interruption
from conformance.console import closed_pipe
from conformance.judging import checks
from conformance.judging.verdict import STOPPED_EARLY
from conformance.options import OPTIONS
from conformance.run import NoVerdict, open_run
from conformance.settings import SettingsError, describe_day_plan, resolve

NO_VERDICT = 2


@dataclass(frozen=True)
class Subcommand:
    """A command beside the run: the module whose `main` runs it, a line for the run's --help,
    and its own --help where its arguments are too few for a parser of their own ("{usage}"
    stands for the module's USAGE). The module is imported when the command is asked for: the
    signing, in-toto and register code is some 0.2 s that every checker run would otherwise
    spend on starting."""

    module: str
    summary: str
    help: str = ""

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


# `petstore-conformance WORD ...`: words no run option or pytest argument starts with, so the
# run's own forms are unchanged. A new command is one entry here.
SUBCOMMANDS = {
    "client": Subcommand(
        "conformance.client_mode.command",
        "`petstore-conformance client --command CMD` (certify a client; see client --help)",
    ),
    "verify": Subcommand(
        "conformance.reports.verify",
        "`petstore-conformance verify FILE.zip|DIR [--key PUBLIC.pem]` (check a package or a "
        "signed report folder)",
        "usage: {usage}\n\n"
        "Check a package (--package) or a report folder: every file against its hash, the "
        "verdict against the outcomes; with --key, the signed in-toto attestation against the "
        "signer's public key (PEM). Exit 0 intact, 1 altered or not signed by that key, 2 "
        "unreadable. With --keyring KEYRING.yaml [--policy POLICY.yaml] [--valid-days DAYS]: "
        "the certification body's judgement of a package, by the register's own code: exit 0 "
        "only where `register` would certify it, 1 where not (why), 2 unusable keyring or "
        "policy. See docs/certification.md.",
    ),
    "compare": Subcommand(
        "conformance.evidence.compare",
        "`petstore-conformance compare BEFORE AFTER` (what changed between two runs)",
        "usage: petstore-conformance compare BEFORE AFTER\n\n"
        "What changed between two runs, each a conformance.json, its report folder or a "
        "package: regressions, fixes, requirements newly tested or not. Exit 1 on a regression, "
        "0 otherwise, 2 when a side cannot be read.",
    ),
    "intoto": Subcommand(
        "conformance.reports.attestation",
        "`petstore-conformance intoto DIR` (a report folder's in-toto Statement, unsigned, for "
        "another signer)",
        "usage: petstore-conformance intoto DIR\n\n"
        "Print the in-toto Statement (test-result v0.1) of a report folder, unsigned, for a "
        "signer of your own (cosign attest-blob, GitHub's artifact attestations).",
    ),
    "register": Subcommand(
        "conformance.register.command",
        "`petstore-conformance register PACKAGES... --keyring KEYRING.yaml --out SITE_DIR` (a "
        "certification body's register)",
        "usage: {usage} [--valid-days N] [--title TEXT]\n"
        "       petstore-conformance register --audit OLD_SITE NEW_SITE [--key BODY.pub.pem]\n\n"
        "A certification body's register: verify every package (*.zip, folders searched) "
        "against the keys the keyring registers for the vendor it names, and extend the "
        "register SITE_DIR holds: every certificate ever issued with its status (certified, "
        "superseded, expired, revoked), its page, package and key, a badge per implementation, "
        "register.json and the log, signed with --sign-key. Exit 0 when every package was "
        "registered, 1 when any was rejected, 2 when the input is unusable. --audit: exit 0 "
        "when NEW's log extends OLD's. See docs/certification.md.",
    ),
    "history": Subcommand(
        "conformance.evidence.history",
        "`petstore-conformance history RUN... --out DIR` (many nights' statements as one page)",
        "usage: {usage}\n\n"
        "Read the statements of many nights, each RUN a conformance.json, its report folder, a "
        "package or a folder of those, and write DIR/history.html and DIR/history.json: each "
        "night's verdict, each requirement's state and the night since which it has been so, "
        "the requirements that flipped more than once (unstable), the run's time, requests and "
        "peak memory across nights, and notes where nights checked different targets, plans, "
        "profiles or suite versions. --nights N keeps the newest N (at most 365, the default). "
        "A statement that cannot be read is one line on stderr and skipped. Exit 0 written, 2 "
        "when no statement could be read or DIR cannot be written.",
    ),
}
MAX_SHOWN_WORD = 40
"""Characters of an unknown command shown back: enough to see the typo, not a pasted page."""


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes get one line and exit status 2, never a page of usage or a traceback."""

    def error(self, message: str):
        self.exit(NO_VERDICT, f"{self.prog}: {message} (see --help)\n")


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="petstore-conformance",
        description="Check a Pet Store API v1 implementation against interface 1.0.0. Without "
        "--base-url it starts the bundled reference and certifies that. Options after `--` go "
        "to pytest. Every option also reads its environment variable.",
        epilog="Also: " + "; ".join(command.summary for command in SUBCOMMANDS.values()) + ".",
    )
    for option in OPTIONS:
        if option.switch:
            parser.add_argument(
                option.flag, action="store_true", default=None, help=option.describe()
            )
        else:
            parser.add_argument(
                option.flag,
                choices=option.choices or None,
                metavar=option.metavar or None,
                help=option.describe(),
            )
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def pytest_arguments(arguments: argparse.Namespace, report_dir: Path, profile: str) -> list[str]:
    extra = [arg for arg in arguments.pytest_args if arg != "--"]
    return [
        *("--pyargs", "conformance.suite"),
        *("-p", "no:cacheprovider"),
        # The checker's own console in place of pytest's rows, unless -v or --pytest-output.
        *("-p", "conformance.console.areas"),
        # One process: the client paces and budgets every request of the run.
        *("-p", "no:xdist"),
        # Its collections of the garbage at the end, hunting exceptions raised where none can
        # be (a __del__), cost a tenth of a second of every run and tell a user nothing.
        *("-p", "no:unraisableexception"),
        # The suite asserts through expect/require; rewriting would only cost start-up time.
        "--assert=plain",
        # `--option=PATH` in one word: pytest takes a lone existing path for its rootdir, and
        # the test ids would then be written relative to the report folder.
        f"--html={report_dir / 'report.html'}",
        "--self-contained-html",
        f"--junitxml={report_dir / 'junit.xml'}",
        f"--report-dir={report_dir}",
        # The resolved profile: PETSTORE_PROFILE must select the tests, not only the budget.
        *("--profile", profile),
        *extra,
    ]


def main(argv: list[str] | None = None) -> int:
    # Whoever reads the output may leave before it ends (`| head`): the command goes on to its
    # exit status (a run to its verdict and reports), and no traceback is shown for that.
    with closed_pipe.survived():
        return dispatch(sys.argv[1:] if argv is None else argv)


def dispatch(argv: list[str]) -> int:
    if argv and not argv[0].startswith("-"):
        return subcommand(argv[0], argv[1:])
    arguments = build_parser().parse_args(argv)
    restore_signals = interruption.install()
    try:
        return check(arguments)
    finally:
        restore_signals()  # main() may be called in a process that goes on (tests)


def subcommand(word: str, argv: list[str]) -> int:
    """Run the command `word` names; a word that names none is a usage error, not a path for
    pytest (which would answer with its own help)."""
    command = SUBCOMMANDS.get(word)
    if command is None:
        shown = repr(word[:MAX_SHOWN_WORD] + ("..." if len(word) > MAX_SHOWN_WORD else ""))
        print(
            f"petstore-conformance: unknown command {shown} "
            f"(commands: {', '.join(SUBCOMMANDS)}; or run options)",
            file=sys.stderr,
        )
        return NO_VERDICT
    module = command.load()
    if command.help and {"-h", "--help"} & set(argv):
        print(command.help.format(usage=getattr(module, "USAGE", "")))
        return 0
    return module.main(argv)


def check(arguments: argparse.Namespace) -> int:
    """A run of the checker, its reports written; the exit status."""
    try:
        options = resolve({option.name: getattr(arguments, option.name) for option in OPTIONS})
        checks.start_run()
        checks.set_current_test("preflight")
        run = open_run(options)
    except (SettingsError, NoVerdict) as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return NO_VERDICT
    except KeyboardInterrupt:  # SIGTERM or SIGINT before any test: nothing seen to report
        by = interruption.signal_received() or "SIGINT"
        print(f"petstore-conformance: no verdict: interrupted ({by}) before the run began")
        return NO_VERDICT
    for warning in run.warnings:
        print(f"petstore-conformance: warning: {warning}", file=sys.stderr)
    if run.settings.profile == "day":
        print(f"petstore-conformance: {describe_day_plan(run.settings)}")
    try:
        status = pytest.main(
            pytest_arguments(arguments, run.settings.report_dir, run.settings.profile),
            plugins=[run],
        )
    except KeyboardInterrupt:
        status = NO_VERDICT
    finally:
        run.close()
    statement = statement_of(run.settings.report_dir, run.settings.run_id)
    # No statement of this run (pytest stopped, or was asked only to collect): nothing proved,
    # whatever pytest's own status.
    status = int(status) if int(status) in (0, 1) and statement else NO_VERDICT
    print(closing_line(statement, run.settings.report_dir, status))
    return status


def statement_of(report_dir: Path, run_id: str) -> dict:
    """This run's conformance.json; empty when absent or left by an earlier run."""
    try:
        statement = json.loads((report_dir / "conformance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return statement if isinstance(statement, dict) and statement.get("run_id") == run_id else {}


def closing_line(statement: dict, report_dir: Path, status: int) -> str:
    """The verdict, last on the console where a person or a CI log reader looks first."""
    if not statement:
        return f"petstore-conformance: no verdict (exit {status}); pytest stopped before one"
    failed = statement.get("failed_requirements") or []
    expected = {entry.get("id") for entry in statement.get("expected_failures") or []}
    named = [f"{i} (expected)" if i in expected else i for i in failed]
    detail = f": failed {', '.join(named)}" if failed else ""
    stale = [entry.get("id") for entry in statement.get("stale_expected_failures") or []]
    detail += f"; stale expected failures {', '.join(stale)}" if stale else ""
    # The words agree with the exit status: a baseline may excuse a failure, or leave a run that
    # its verdict decided with no verdict; a package that could not be written ends in 2.
    result = statement.get("result") or statement.get("verdict")
    if status != statement.get("exit_status"):
        result = "no verdict"
    why = statement.get("result_reason") or statement.get("reason")
    if result == "no verdict" and why:
        detail = f": {why}"
    elif STOPPED_EARLY in (statement.get("reason") or ""):
        detail += "; stopped early: " + statement["reason"].partition(STOPPED_EARLY)[2]
    return (
        f"petstore-conformance: {result} (exit {status}){detail}; "
        f"report {report_dir / 'report.html'}"
    )


if __name__ == "__main__":
    sys.exit(main())
