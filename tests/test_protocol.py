"""Every family follows one protocol (the "Anatomy of a family" page): this walks the registry.

Each registered :class:`~optsched.family.Family` declares an instance type with
``load``/``save``/``schema`` whose files carry the family's ``kind``, a seeded small instance,
an exact ``solve`` returning an :class:`~optsched.results.ExactResult` of the family's solution
type, algorithms with one calling convention returning the same type, and ``validate`` returning
a :class:`~optsched.results.Report`. The tests below are generated from the registry, and the
first one makes sure the registry holds every family package on disk.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import optsched
from optsched._io import load_data
from optsched.family import FAMILIES, Family, family_for_kind, kind_of
from optsched.results import ExactResult, Report
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, RATIO_TOL, leq, within

#: Top-level subpackages that are not problem families (shared layers, readers, predictors).
NOT_FAMILIES = {
    "solvers",
    "cli",
    "report",
    "runs",
    "models",
    "traces",
    "interference",
    "family",
    # a learned system of the placement problem: its decisions are the placement family's
    # snapshots (PlacementInstance), each judged against that family's exact ILP
    "harmony",
    # the goodput model of adaptive jobs (Pollux's throughput, efficiency and batch choice): a
    # world's job model, not yet a family with its own exact model and algorithms
    "goodput",
}
#: Problem packages: their subpackages are the families.
PROBLEMS = {"online", "comm", "allocation"}

#: Families whose exact model optimises over every solution their algorithms can return, so that
#: no algorithm may beat the optimum. (The simulator's optimum is over round-based schedules,
#: which event-driven policies can beat; TensorLights' over static priority orders, which
#: rotation can beat; PACE's over its fusion groups, which partitioning policies change; Gavel's
#: Themis and the placement heuristics optimise no single objective of the exact models.)
BOUNDED = {"oasis", "aonline", "optimus", "chronus", "andreas"}

ALL_ALGORITHMS = [(name, algorithm) for name in FAMILIES for algorithm in FAMILIES[name].algorithms]


def _packages_on_disk() -> set[str]:
    found = {
        f"optsched.{m.name}"
        for m in pkgutil.iter_modules(optsched.__path__)
        if m.ispkg and m.name not in NOT_FAMILIES | PROBLEMS
    }
    for problem in PROBLEMS:
        module = importlib.import_module(f"optsched.{problem}")
        found |= {
            f"optsched.{problem}.{m.name}" for m in pkgutil.iter_modules(module.__path__) if m.ispkg
        }
    return found


@functools.cache
def _optimum(name: str) -> ExactResult[Any]:
    """The exact result of the family's small instance (solved once per test process)."""
    family = FAMILIES[name]
    return family.solve(family.small_instance())


def test_every_family_package_on_disk_is_registered() -> None:
    assert _packages_on_disk() == {FAMILIES[name].package for name in FAMILIES}
    assert len(FAMILIES) == len(set(FAMILIES))


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_package_exports_its_declaration(name: str) -> None:
    family = FAMILIES[name]
    assert isinstance(family, Family) and family.name == name
    module = importlib.import_module(family.package)
    assert module.FAMILY is family
    assert "FAMILY" in module.__all__ and "ALGORITHMS" in module.__all__
    assert dict(module.ALGORITHMS) == dict(family.algorithms)
    assert family_for_kind(family.kind) == name
    assert family.algorithms, f"{name} declares no algorithm"
    for attr in ("solve", "validate", "generate_instance"):
        assert getattr(module, attr) is not None and attr in module.__all__
    assert module.validate is family.validate
    assert module.generate_instance is family.generate_instance


@pytest.mark.parametrize("name", list(FAMILIES))
def test_instance_files_carry_the_kind_and_round_trip(name: str, tmp_path: Path) -> None:
    family = FAMILIES[name]
    instance = family.small_instance()
    assert isinstance(instance, family.Instance)
    assert family.small_instance() == instance  # seeded: the same instance again
    assert isinstance(family.Instance.schema(), dict)  # type: ignore[attr-defined]
    for suffix in (".json", ".toml"):
        path = tmp_path / f"instance{suffix}"
        instance.save(path)
        # `optsched validate` finds the family from the file alone.
        assert kind_of(load_data(path)) == family.kind
        assert family.Instance.load(path) == instance  # type: ignore[attr-defined]
    if family.describe is not None:
        assert isinstance(family.describe(instance), dict)


@pytest.mark.solver("highs")
@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_exact_solve_follows_the_protocol(name: str) -> None:
    family = FAMILIES[name]
    instance = family.small_instance()
    result = _optimum(name)
    assert isinstance(result, ExactResult)
    assert result.optimal and isinstance(result.solution, family.Solution)
    report = family.validate(instance, result.solution)
    assert isinstance(report, Report)
    assert report.ok, report.violations
    if report.objective is not None:
        assert within(report.objective, result.objective, OBJECTIVE_AGREEMENT_TOL)
    assert isinstance(result.solution.to_frame(), pd.DataFrame)
    assert isinstance(result.to_dict(), dict)
    assert len(repr(result)) < 400


@pytest.mark.solver("highs")
@pytest.mark.parametrize(("name", "algorithm"), ALL_ALGORITHMS)
def test_every_algorithm_returns_a_valid_solution(name: str, algorithm: str) -> None:
    family = FAMILIES[name]
    instance = family.small_instance()
    solution = family.algorithms[algorithm](instance, seed=0)
    assert isinstance(solution, family.Solution), type(solution)
    report = family.validate(instance, solution)
    assert report.ok, report.violations
    assert isinstance(solution.to_frame(), pd.DataFrame)
    # Seeded: the same figures again.
    again = family.validate(instance, family.run(algorithm, instance, seed=0))
    assert again.objective == report.objective and again.objectives == report.objectives
    if name in BOUNDED:
        optimum = _optimum(name)
        assert report.objective is not None
        if optimum.sense == "max":
            assert leq(report.objective, optimum.objective, RATIO_TOL)
        else:
            assert leq(optimum.objective, report.objective, RATIO_TOL)
