"""A test double of the Pet Store API: correct by default, faulty or varied on request.

Importing this package starts nothing: `FAULTS` and `VARIANTS` are plain registries, and
`start_double` launches the server as a subprocess (`python -m tests.shared.double`).
"""

from tests.shared.double.behaviours import (
    FAULTS,
    HOSTILE,
    PER_RESPONSE,
    TIMED_VARIANTS,
    VARIANT_OPTIONS,
    VARIANTS,
    WARNINGS,
    Fault,
)
from tests.shared.double.launcher import DoubleFailedToStart, running_double, start_double

__all__ = [
    "FAULTS",
    "HOSTILE",
    "PER_RESPONSE",
    "TIMED_VARIANTS",
    "VARIANTS",
    "VARIANT_OPTIONS",
    "WARNINGS",
    "DoubleFailedToStart",
    "Fault",
    "running_double",
    "start_double",
]
