"""For ci-templates/check.sh: `summary.py verdict STATEMENT` prints the verdict of a
conformance.json (or "no verdict" when there is none); `summary.py markdown STATEMENT STATUS`
prints a job summary.
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


def markdown(statement, status):
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
    lines += [""] + [f"- {name}: {value}" for name, value in facts if value]
    return lines + ["", "The reports are kept as this job's artifact."]


def main(argv):
    if argv[1:2] == ["verdict"] and len(argv) == 3:
        print(load(argv[2]).get("verdict", "no verdict"))
        return 0
    if argv[1:2] == ["markdown"] and len(argv) == 4:
        print("\n".join(markdown(load(argv[2]), argv[3])))
        return 0
    print(
        "usage: summary.py verdict STATEMENT | summary.py markdown STATEMENT STATUS",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
