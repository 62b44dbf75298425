"""Tests of the bundled reference implementation."""
