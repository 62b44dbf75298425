"""For ci-templates/check.sh: `summary.py verdict STATEMENT` prints the verdict of a
conformance.json (or "no verdict" when there is none); `summary.py markdown STATEMENT STATUS
[HISTORY]` prints a job summary, with HISTORY (the history.json of `petstore-conformance
history`, this run its newest night) the night since which each failed requirement fails, and
the requirements that flipped more than once.
Standard library only: it runs on whatever python3 the CI image has."""

import json
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def ids(entries):
    return ", ".join(entry["id"] if isinstance(entry, dict) else entry for entry in entries)


def day(moment):
    """2026-11-21 of 2026-11-21T03:17:00Z: nights are told apart by their dates."""
    return moment[:10] if isinstance(moment, str) and len(moment) == 20 else str(moment)


def history_facts(statement, history):
    """Failing since when, and the unstable ones; none where the history's newest night is
    not this run (the history could not be written, or the run wrote no statement)."""
    nights = history.get("nights") or [] if isinstance(history, dict) else []
    if not nights or nights[0].get("run_id") != statement.get("run_id"):
        return []
    since = {e.get("id"): e.get("since") for e in history.get("failing") or []}
    failing = [
        f"{i} (since {day(since[i])})" if since.get(i) else i
        for i in statement.get("failed_requirements") or []
    ]
    unstable = [f"{e.get('id')} ({e.get('flips')} flips)" for e in history.get("unstable") or []]
    return [
        ("Failing since", ", ".join(failing)),
        (f"Unstable: flipped more than once in {len(nights)} nights", ", ".join(unstable)),
    ]


def markdown(statement, status, history=None):
    # In words that agree with the exit status (an expected-failures file may change it).
    result = statement.get("result") or statement.get("verdict", "no verdict")
    if str(statement.get("exit_status", status)) != str(status):
        result = "no verdict"
    lines = [f"### Pet Store conformance: {result} (exit {status})", ""]
    if not statement:
        return lines + ["The checker wrote no statement: see the job log."]
    lines.append(
        f"Target `{statement.get('target')}`, plan {statement.get('plan')}, profile "
        f"{statement.get('profile')}, run {statement.get('run_id')}."
    )
    facts = [
        ("Reason", statement.get("reason")),
        ("Why no verdict", statement.get("result_reason")),
        ("New failures", ids(statement.get("unexpected_failures", []))),
        ("Expected failures", ids(statement.get("expected_failures", []))),
        (
            "Stale expected failures (remove them)",
            ids(statement.get("stale_expected_failures", [])),
        ),
        ("Expired expected failures", ids(statement.get("expired_expected_failures", []))),
        ("Warnings", ids(statement.get("warned_requirements", []))),
    ]
    comparison = statement.get("comparison") or {}
    facts.append(("Regressions since the previous run", ids(comparison.get("regressions", []))))
    facts.append(("Fixes since the previous run", ids(comparison.get("fixes", []))))
    facts += history_facts(statement, history or {})
    lines += [""] + [f"- {name}: {value}" for name, value in facts if value]
    kept = "The reports are kept as this job's artifact"
    if history:
        kept += f", with the history page of the last {len(history.get('nights') or [])} nights"
    return lines + ["", kept + "."]


def main(argv):
    if argv[1:2] == ["verdict"] and len(argv) == 3:
        print(load(argv[2]).get("verdict", "no verdict"))
        return 0
    if argv[1:2] == ["markdown"] and len(argv) in (4, 5):
        history = load(argv[4]) if len(argv) == 5 else None
        print("\n".join(markdown(load(argv[2]), argv[3], history)))
        return 0
    print(
        "usage: summary.py verdict STATEMENT | summary.py markdown STATEMENT STATUS [HISTORY]",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
