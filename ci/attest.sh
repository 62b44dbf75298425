#!/usr/bin/env bash
# For the GitHub Action's `attest` input: the report folder's in-toto Statement (the checker's
# `intoto` command: the same subjects and test-result predicate `--sign-key` signs), split into
# what actions/attest takes: the predicate as a file and the subjects as a checksums file. GitHub
# then signs that Statement with the workflow's identity. Sets the step outputs `predicate-path`
# and `subject-checksums`; sets none when the run wrote no statement (nothing to attest).
set -uo pipefail
report_dir="${PETSTORE_REPORT_DIR:-petstore-conformance-reports}"
venv="${PSC_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-venv}"
checker=petstore-conformance
if [ -x "$venv/bin/petstore-conformance" ]; then
    checker="$venv/bin/petstore-conformance"
fi
out="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-attestation"
mkdir -p "$out"
if ! "$checker" intoto "$report_dir" > "$out/statement.json"; then
    echo "petstore-conformance: nothing to attest: no statement in $report_dir"
    exit 0
fi
python3 "$(dirname "${BASH_SOURCE[0]}")/attest.py" "$out/statement.json" "$out" || exit 2
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'predicate-path=%s\nsubject-checksums=%s\n' \
        "$out/predicate.json" "$out/subjects.sha256" >> "$GITHUB_OUTPUT"
fi
