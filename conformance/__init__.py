"""Conformance suite and API checker for the Pet Store HTTP API v1."""

__version__ = "0.1.0"
