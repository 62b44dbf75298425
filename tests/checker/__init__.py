"""Tests of the checker: its client, burst, judging, reports, command line and verdicts."""
