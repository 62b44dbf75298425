#!/usr/bin/env bash
# For ci-templates/check.sh, when PSC_HISTORY_NIGHTS is a number above 0: keep this run's
# statement among the last PSC_HISTORY_NIGHTS in PSC_HISTORY_DIR (the cache carries that folder
# from one night to the next), drop older ones, and write the history page of those kept to
# PSC_HISTORY_OUT (history.html, history.json), beside the report folder, never in it: a signed
# report folder holds only what was signed. Usage: history.sh CHECKER STATEMENT
set -uo pipefail
checker="$1"
statement="$2"
dir="${PSC_HISTORY_DIR:-.petstore-history}"
out="${PSC_HISTORY_OUT:-petstore-conformance-history}"
reports="${PETSTORE_REPORT_DIR:-petstore-conformance-reports}"
reports="${reports%/}"
case "$out" in
    "$reports"/*) out="$reports-history" ;;  # a report-dir given as reports/ made reports/-history
esac
nights="${PSC_HISTORY_NIGHTS:-0}"
case "$nights" in
    '' | *[!0-9]*)
        echo "petstore-conformance: PSC_HISTORY_NIGHTS is $nights, not a number of nights; no history"
        exit 0
        ;;
esac
nights=$((10#$nights))
if [ "$nights" -eq 0 ]; then
    exit 0
fi
if [ "$nights" -gt 365 ]; then
    nights=365  # what the history command reads at most
fi
mkdir -p "$dir"
if [ -f "$statement" ]; then
    # Named by the moment it was kept: the names sort as the nights do.
    cp "$statement" "$dir/$(date -u +%Y%m%dT%H%M%SZ)-$$.json"
fi
mapfile -t kept < <(find "$dir" -maxdepth 1 -type f -name '*.json' | sort)
for ((i = 0; i < ${#kept[@]} - nights; i++)); do
    rm -f -- "${kept[$i]}"
done
if [ "${#kept[@]}" -gt 0 ]; then
    "$checker" history "$dir" --out "$out" --nights "$nights"
fi
