"""Tests of the client mode, and the client zoo it certifies."""
