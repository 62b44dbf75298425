"""`petstore-conformance client --command CMD [--scenario NAME ...] [--report-dir DIR]
[--timeout S] [--strict] [--package FILE.zip] [--sign-key FILE]`: run a client through the
scenarios, judge it, write the reports (signed, with `--sign-key`, as the checker's are); exit 0
conformant, 1 not conformant, 2 no verdict (bad usage, a key that cannot sign, a command that
cannot start, or a client that sent too little to judge every MUST requirement)."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from conformance import signing_keys as keys
from conformance.client_mode import reaping, reports, rules
from conformance.client_mode.runner import (
    CommandDidNotStart,
    ScenarioRun,
    reap_strays,
    run_scenario,
    stop_all,
)
from conformance.client_mode.scenarios import BY_NAME, SCENARIOS, Scenario
from conformance.judging.verdict import Verdict, decide
from conformance.reports import attestation

PROG = "petstore-conformance client"
NO_VERDICT = 2
DEFAULT_TIMEOUT = 90.0
REAP_SECONDS = 0.5  # how often the orphans clients leave are reaped while the run goes on
SWITCH_WORDS = ("1", "true", "yes", "on")


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes get one line and exit status 2, never a page of usage or a traceback."""

    def error(self, message: str):
        self.exit(NO_VERDICT, f"{self.prog}: {message} (see --help)\n")


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < 86400:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 seconds")
    return value


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROG,
        description="Certify a Pet Store API client: run CMD (through the shell) once per "
        "scenario against a scenario server, with PETSTORE_BASE_URL, PETSTORE_API_KEY, "
        "PETSTORE_OPERATION, PETSTORE_CATEGORY_NAME, PETSTORE_REPEAT and PETSTORE_SCENARIO in "
        "its environment, and judge what it sent.",
    )
    parser.add_argument("--command", metavar="CMD", help="the client's command line")
    parser.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help=f"a scenario to run (repeat for more; default all): {', '.join(BY_NAME)}",
    )
    parser.add_argument(
        "--report-dir",
        metavar="DIR",
        default=os.environ.get("PETSTORE_REPORT_DIR", "reports"),
        help="where the reports go (default reports) [env PETSTORE_REPORT_DIR]",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help="seconds a client may run per scenario before it is stopped (default 90)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        default=os.environ.get("PETSTORE_STRICT", "").lower() in SWITCH_WORDS,
        help="SHOULD failures count as failures [env PETSTORE_STRICT]",
    )
    parser.add_argument(
        "--package",
        metavar="FILE.zip",
        default=os.environ.get("PETSTORE_PACKAGE") or None,
        help="also bundle the reports with a manifest of hashes [env PETSTORE_PACKAGE]",
    )
    parser.add_argument(
        "--sign-key",
        metavar="FILE",
        default=os.environ.get("PETSTORE_SIGN_KEY") or None,
        help="PEM private key (Ed25519 or ECDSA P-256, unencrypted): sign the reports as an "
        "in-toto attestation, conformance.intoto.jsonl [env PETSTORE_SIGN_KEY]",
    )
    return parser


def chosen_scenarios(names: list[str] | None) -> list[Scenario]:
    if not names:
        return list(SCENARIOS)
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown scenario {unknown[0]!r}: choose from {', '.join(BY_NAME)}")
    return [BY_NAME[name] for name in dict.fromkeys(names)]


def run_all(scenarios: list[Scenario], command: str, timeout: float) -> list[ScenarioRun]:
    """Every scenario at once, each on its own server: the run takes as long as its longest.
    Whatever the clients started is stopped before it returns, however it detached."""
    reaping.become_subreaper()
    try:
        with ThreadPoolExecutor(max_workers=len(scenarios)) as pool:
            futures = [pool.submit(run_scenario, s, command, timeout) for s in scenarios]
            try:
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, REAP_SECONDS, FIRST_EXCEPTION)
                    for future in done:
                        future.result()  # a command that cannot start raises here
                    reap_strays()
                return [future.result() for future in futures]
            except BaseException:  # Ctrl-C, or a command that cannot start: stop every client
                stop_all()
                raise
    finally:
        reaping.stop_everything_below()


def verdict_of(runs: list[ScenarioRun], strict: bool) -> Verdict:
    """The verdict of every scenario's run. With every scenario, a MUST requirement left
    unjudged means no verdict (the client sent too little); with some (--scenario), only what
    those scenarios can show is judged, and the rest is not tested. A client that sent no whole
    request has no verdict."""
    every = {run.scenario.name for run in runs} == {scenario.name for scenario in SCENARIOS}
    settled = rules.settle_across_run([r for run in runs for r in rules.check_scenario(run)])
    verdict = decide(
        settled.kept,
        strict=strict,
        role="client",
        profile="full" if every else "scenarios",
        untested_reason="no scenario of this run gave the client a chance to show it"
        if every
        else "not shown by the scenarios chosen (--scenario)",
        cannot_check={**rules.unshown(runs), **settled.displaced_reasons()},
        no_verdict_reason=rules.nothing_shown(runs),
    )
    judged = {o.requirement.id: o.outcome for o in verdict.outcomes}
    for outcome in verdict.outcomes:
        blockers = sorted(settled.displaced.get(outcome.requirement.id, ()))
        if outcome.outcome == "not-tested" and blockers:
            outcome.blocked_by = blockers
            named = ", ".join(f"{other} ({judged.get(other, 'failed')})" for other in blockers)
            outcome.reason = f"blocked by {named}: one retry policy, one cause"
    return verdict


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the clients are stopped, not left behind


def main(argv: list[str]) -> int:
    arguments = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupted)
    command = (arguments.command or "").strip()
    try:
        if not command:
            raise ValueError("--command is required: the client's command line")
        scenarios = chosen_scenarios(arguments.scenario)
        # Read before any client runs: a key that cannot sign is one line, not a lost run.
        signer = keys.load_signer(Path(arguments.sign_key)) if arguments.sign_key else None
        started_at, started = time.time(), time.monotonic()
        runs = run_all(scenarios, command, arguments.timeout)
    except (ValueError, CommandDidNotStart) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return NO_VERDICT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; every client was stopped", file=sys.stderr)
        return NO_VERDICT
    client_run = reports.ClientRun(
        command=command,
        runs=runs,
        verdict=verdict_of(runs, arguments.strict),
        strict=arguments.strict,
        run_id=secrets.token_hex(6),
        started_at=started_at,
        seconds=time.monotonic() - started,
    )
    report_dir = Path(arguments.report_dir)
    try:
        packaged = reports.write(
            client_run,
            report_dir,
            Path(arguments.package) if arguments.package else None,
            signer,
        )
    except (OSError, attestation.Unreadable) as error:
        why = getattr(error, "strerror", None) or error
        print(f"{PROG}: cannot write the reports: {why}", file=sys.stderr)
        return NO_VERDICT
    for line in reports.console_lines(client_run, report_dir):
        print(line)
    if signer is not None:
        print(
            f"attestation: {report_dir / attestation.ENVELOPE}, signed with the "
            f"{keys.describe(signer.public_key)} (check it with petstore-conformance verify "
            f"{report_dir} --key PUBLIC.pem)"
        )
        # A client's package names no vendor (client mode has no --vendor): a register finds a
        # vendor's keys by that name, so none accepts it; say so where the signing is seen.
        print(
            "attestation: warning: a client run names no vendor: no certification register "
            "accepts its package (verify --key still checks it)"
        )
    if packaged is not None:
        print(f"package: {packaged} (check it with petstore-conformance verify {packaged})")
    return client_run.verdict.exit_status
