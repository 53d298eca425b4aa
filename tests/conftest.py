"""Test configuration: Hypothesis profiles and the one solver-availability marker.

A test that needs a solver says so with ``@pytest.mark.solver("highs")`` (optionally
``frontend="cvxpy"``); it is skipped, with the reason, where that solver is not installed. No
test module defines its own skip condition for a solver.

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


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked ``solver(name, frontend=...)`` whose solver is not installed."""
    for mark in item.iter_markers(name="solver"):
        name = mark.args[0] if mark.args else mark.kwargs.get("name", "highs")
        frontend = mark.kwargs.get("frontend", "pyomo")
        have = MIP_SOLVERS if frontend == "pyomo" else CVXPY_SOLVERS
        if frontend == "pyomo":
            have = available_solvers(frontend="pyomo")
        if name not in have:
            pytest.skip(f"solver {name!r} is not installed for {frontend}")
