#!/usr/bin/env bash
# Run petstore-conformance in CI and exit with its status (0 conformant, 1 not, 2 no verdict).
# Every option comes from its PETSTORE_* variable, the keys from secrets: an empty variable (an
# input left blank) counts as not given. Reports go to PETSTORE_REPORT_DIR. On GitHub it also
# sets the step outputs `verdict` and `exit-status` and writes the job summary. With
# PSC_HISTORY_NIGHTS above 0, the last that many statements are kept in PSC_HISTORY_DIR, the
# newest is the one compared with, and the history page goes to PSC_HISTORY_OUT (history.sh).
set -uo pipefail
export PETSTORE_REPORT_DIR="${PETSTORE_REPORT_DIR:-petstore-conformance-reports}"
venv="${PSC_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-venv}"
checker=petstore-conformance
if [ -x "$venv/bin/petstore-conformance" ]; then
    checker="$venv/bin/petstore-conformance"
fi

# With a history kept (PSC_HISTORY_NIGHTS), last night's statement is its newest.
history_nights="${PSC_HISTORY_NIGHTS:-0}"
if [ "$history_nights" != 0 ] && [ -n "$history_nights" ] && [ -z "${PETSTORE_PREVIOUS:-}" ]; then
    newest="$(find "${PSC_HISTORY_DIR:-.petstore-history}" -maxdepth 1 -type f -name '*.json' 2>/dev/null | sort | tail -n 1)"
    if [ -n "$newest" ]; then
        export PETSTORE_PREVIOUS="$newest"
    fi
fi

# A nightly job names last night's statement; the first night there is none yet.
if [ -n "${PETSTORE_PREVIOUS:-}" ] && [ ! -e "$PETSTORE_PREVIOUS" ]; then
    echo "petstore-conformance: no previous statement at $PETSTORE_PREVIOUS yet; no comparison this run"
    unset PETSTORE_PREVIOUS
fi

started="$(mktemp)"
"$checker"
status=$?

# A statement left by an earlier run in the same folder must not speak for this one.
statement="$PETSTORE_REPORT_DIR/conformance.json"
if [ ! "$statement" -nt "$started" ]; then
    statement=/nonexistent
fi
rm -f "$started"
# For ci-templates/attest.sh (the action's `attest` input): this job's own statement, or none.
fresh="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-statement"
if [ "$statement" != /nonexistent ]; then
    printf '%s\n' "$statement" > "$fresh"
else
    rm -f "$fresh"
fi
# The nights kept, this one among them, as a page beside the reports: failing since when.
history=()
if [ "$history_nights" != 0 ] && [ -n "$history_nights" ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/history.sh" "$checker" "$statement"
    history=("${PSC_HISTORY_OUT:-petstore-conformance-history}/history.json")
fi
summary_py="$(dirname "${BASH_SOURCE[0]}")/summary.py"
verdict="$(python3 "$summary_py" verdict "$statement")"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'verdict=%s\nexit-status=%s\n' "$verdict" "$status" >> "$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    python3 "$summary_py" markdown "$statement" "$status" "${history[@]}" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
