"""Test configuration: Hypothesis profiles and solver-availability markers.

The ``ci`` profile (selected when ``CI=true``) is derandomised so CI runs are reproducible; the
``dev`` profile explores more. Both use ``deadline=None``: solver and JIT times vary too much for
per-example deadlines to mean anything.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from optsched.solvers import available_solvers

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=40,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_in_ci = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if _in_ci else "dev"))

MIP_SOLVERS = available_solvers(frontend="pyomo", mip=True)
CVXPY_SOLVERS = available_solvers(frontend="cvxpy")

requires_highs = pytest.mark.skipif(
    "highs" not in MIP_SOLVERS, reason="HiGHS (highspy) is not installed"
)
