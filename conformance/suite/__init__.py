"""The conformance suite: one test module per area of the interface."""
