"""Test configuration: Hypothesis profiles and the one solver-availability marker.

A test that needs a solver says so with ``@pytest.mark.solver("highs")`` (optionally
``frontend="cvxpy"``); it is skipped, with the reason, where that solver is not installed. No
test module defines its own skip condition for a solver.

The ``ci`` profile (selected when ``CI=true``) is derandomised so CI runs are reproducible; the
``dev`` profile explores more. Both use ``deadline=None``: solver and JIT times vary too much for
per-example deadlines to mean anything.

The ``props`` profile (``HYPOTHESIS_PROFILE=props``, what ``make props`` runs) is a search for
counterexamples: fresh random examples on every run, and every property test runs
``PROPS_FACTOR`` (default 10) times its own number of examples, at most ``PROPS_MAX_EXAMPLES``
(default 600; a test asking for more keeps its own): an expensive test that lowered its count
is scaled up from its count, not lifted to a cheap test's.
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
PROPS_FACTOR = int(os.environ.get("PROPS_FACTOR", "10"))
PROPS_MAX_EXAMPLES = int(os.environ.get("PROPS_MAX_EXAMPLES", "600"))
settings.register_profile(
    "props",
    derandomize=False,
    deadline=None,
    max_examples=PROPS_MAX_EXAMPLES,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_in_ci = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if _in_ci else "dev")
settings.load_profile(PROFILE)

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under the ``props`` profile, scale every property test's examples (module notes).

    A test's own ``@settings(max_examples=n)`` would otherwise keep ``n`` under any profile;
    the settings Hypothesis reads when the test runs are replaced by a copy with
    ``min(PROPS_FACTOR * n, PROPS_MAX_EXAMPLES)`` examples (or ``n`` when larger), the rest as
    the test declared them, never derandomised.
    """
    if PROFILE != "props":
        return
    seen: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        test = getattr(test, "__func__", test)
        if not getattr(test, "is_hypothesis_test", False) or id(test) in seen:
            continue
        seen.add(id(test))
        own = test._hypothesis_internal_use_settings
        n = own.max_examples
        test._hypothesis_internal_use_settings = settings(
            own,
            max_examples=max(n, min(PROPS_FACTOR * n, PROPS_MAX_EXAMPLES)),
            derandomize=False,
            deadline=None,
            print_blob=True,
        )
