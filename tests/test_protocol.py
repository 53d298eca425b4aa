"""Every family follows one protocol (the "Anatomy of a family" page): this walks them all.

Each family package exports an instance type with ``load``/``save``/``schema``, a seeded
``generate_instance``, an exact ``solve`` returning an :class:`~optsched.results.ExactResult`,
and ``validate`` returning a :class:`~optsched.results.Report`; the solution has rows
(``to_frame()``), and the validator's recomputed objective equals the solver's.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import optsched
from optsched.results import ExactResult, Report
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

#: Family -> a small generated instance (seeded), sized to solve in well under a second.
SMALL: dict[str, Callable[[Any], Any]] = {
    "online.oasis": lambda m: m.generate_instance(
        4, worker_servers=2, ps_servers=2, horizon=6, seed=1
    ),
    "comm.pace": lambda m: m.generate_instance(seed=1, layers=4),
    "placement": lambda m: m.generate_instance(3, n_servers=3, seed=1),
    "comm.tensorlights": lambda m: m.generate_instance(2, 3, seed=1),
    "allocation.gavel": lambda m: m.generate_instance(6, seed=1),
    "allocation.optimus": lambda m: m.generate_instance(4, seed=1),
    "online.aonline": lambda m: m.generate_instance(4, seed=1),
    "allocation.andreas": lambda m: m.generate_instance(5, seed=1),
    "allocation.chronus": lambda m: m.generate_instance(
        4, 2, leases=4, guaranteed_fraction=0.5, seed=1
    ),
}

#: Subpackages that are not problem families (shared layers, readers, predictors).
NOT_FAMILIES = {"solvers", "cli", "report", "runs", "models", "traces", "interference", "sim"}
#: Problem packages: their subpackages are the families.
PROBLEMS = {"online", "comm", "allocation"}


@pytest.mark.solver("highs")
def test_the_simulator_family_solves_and_validates_like_the_others(tmp_path: Path) -> None:
    """The simulator's instance type, the World (built from a trace, saved whole as one
    document), its exact model and validator follow the protocol."""
    from optsched import sim

    world = sim.generate_instance(4, "v100=2", seed=1)
    kind = type(world)
    assert kind is sim.World
    assert isinstance(kind.schema(), dict)
    path = tmp_path / "world.json"
    world.save(path)
    assert kind.load(path) == world
    assert sim.generate_instance(4, "v100=2", seed=1) == world  # seeded: the same world again
    result = sim.solve(world, round_seconds=600.0)
    assert isinstance(result, ExactResult) and result.optimal
    report = sim.validate(world, result.solution)
    assert isinstance(report, Report) and report.ok, report.violations
    assert isinstance(result.solution.to_frame(), pd.DataFrame)
    for name in ("solve", "validate", "generate_instance"):
        assert name in sim.__all__


def test_every_family_package_is_walked() -> None:
    packages = {m.name for m in pkgutil.iter_modules(optsched.__path__) if m.ispkg}
    found = packages - NOT_FAMILIES - PROBLEMS
    for problem in PROBLEMS:
        module = importlib.import_module(f"optsched.{problem}")
        found |= {f"{problem}.{m.name}" for m in pkgutil.iter_modules(module.__path__) if m.ispkg}
    assert found == set(SMALL)


@pytest.mark.solver("highs")
@pytest.mark.parametrize("family", sorted(SMALL))
def test_family_follows_the_protocol(family: str, tmp_path: Path) -> None:
    module = importlib.import_module(f"optsched.{family}")
    for name in ("solve", "validate", "generate_instance"):
        assert callable(getattr(module, name, None)), f"optsched.{family} lacks {name}"
        assert name in module.__all__
    instance = SMALL[family](module)
    kind = type(instance)
    assert isinstance(kind.schema(), dict)
    path = tmp_path / "instance.json"
    instance.save(path)
    assert kind.load(path) == instance
    assert SMALL[family](module) == instance  # seeded: the same instance again
    result = module.solve(instance)
    assert isinstance(result, ExactResult)
    assert result.optimal and result.solution is not None
    report = module.validate(instance, result.solution)
    assert isinstance(report, Report)
    assert report.ok, report.violations
    if report.objective is not None:
        assert within(report.objective, result.objective, OBJECTIVE_AGREEMENT_TOL)
    assert isinstance(result.solution.to_frame(), pd.DataFrame)
    assert isinstance(result.to_dict(), dict)
    assert len(repr(result)) < 400
