"""A time budget means what it says: it starts with the command's work and, once spent, stops
the command with the best point known, never with an error about the user's option.

Every test spends the budget on purpose (a command start an hour back, a clock that jumps while
the solver runs), so none depends on the machine's speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from optsched.cli import common, main
from optsched.errors import NotOptimalError
from optsched.placement import Placement, PlacementInstance, generate_instance, validate
from optsched.placement import solve as placement_solve
from optsched.placement.exact import SEEDS, seed
from optsched.solvers import deadline as deadline_module
from optsched.solvers.deadline import deadline

ROOT = Path(__file__).resolve().parents[1]


def _passed() -> float:
    """A command start an hour ago: any budget counted from it is spent."""
    return time.monotonic() - 3600.0


@pytest.fixture(scope="module")
def sixteen_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 16-job placement instance written by the command line's own generator."""
    path = tmp_path_factory.mktemp("placement") / "p16.json"
    argv = ["placement", "generate", "--jobs", "16", "--servers", "8", "--seed", "1"]
    assert main([*argv, "-o", str(path)]) == 0
    return path


def _incumbent(payload: dict[str, Any], path: Path, objective: str) -> float:
    """Validate the placement of a JSON payload; return the validator's objective."""
    instance = PlacementInstance.load(path)
    placement = Placement.from_dict(payload["solution"])
    report = validate(instance, placement, objective)
    assert report.ok, report.violations
    assert report.objective is not None
    return float(report.objective)


# --- the command line -------------------------------------------------------------------


@pytest.mark.solver("highs")
def test_placement_solve_time_limit_1_exits_0_or_3_with_a_valid_placement(
    sixteen_jobs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["placement", "solve", str(sixteen_jobs), "--time-limit", "1", "--json"])
    payload = json.loads(capsys.readouterr().out)
    # however fast the machine, the answer is the optimum or a validated incumbent
    assert code in (0, 3), payload
    assert payload["status"] in ("optimal", "feasible")
    assert _incumbent(payload, sixteen_jobs, "servers") == pytest.approx(payload["objective"])


@pytest.mark.solver("highs")
@pytest.mark.parametrize("objective", ["servers", "traffic", "max-load"])
def test_a_budget_spent_before_the_solver_starts_returns_the_seed(
    sixteen_jobs: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    objective: str,
) -> None:
    capsys.readouterr()
    # the command's work started an hour ago: its one second is gone before the build
    monkeypatch.setattr(common, "command_started", _passed)
    argv = ["placement", "solve", str(sixteen_jobs), "--objective", objective]
    code = main([*argv, "--time-limit", "1", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 3, payload
    assert payload["error"] == "NotOptimalError"
    assert payload["status"] == "feasible" and payload["termination"] == "time_limit"
    assert payload["native_status"] == "not started"
    assert payload["incumbent_source"] in SEEDS[objective]
    assert "from the heuristic" in payload["message"]
    value = _incumbent(payload, sixteen_jobs, objective)
    assert value == pytest.approx(payload["objective"])
    # the incumbent is the seed's, and the seed is no better than the optimum (another way)
    optimum = placement_solve(PlacementInstance.load(sixteen_jobs), objective, time_limit=600)
    assert optimum.objective is not None and value >= optimum.objective - 1e-6
    # --accept-feasible takes the same incumbent as the result: exit 0
    code = main([*argv, "--time-limit", "1", "--accept-feasible", "--json"])
    accepted = json.loads(capsys.readouterr().out)
    assert code == 0 and accepted["status"] == "feasible"
    assert accepted["objective"] == payload["objective"]


class _Clock:
    """A monotonic clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.mark.solver("highs")
def test_time_running_out_mid_solve_is_never_invalid_input(
    sixteen_jobs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget runs out while HiGHS solves: the polish after it must stop, not refuse.

    It once handed the solver the negative remainder, which its option check refused as
    ``invalid input --time-limit: must be a finite number > 0, got -0.5`` (exit 2).
    """
    import optsched.solvers.pyomo as pyomo_backend

    clock = _Clock()
    monkeypatch.setattr(deadline_module, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(common, "command_started", lambda: clock.now)
    real = pyomo_backend.solve_pyomo

    def slow(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        clock.now += 1.5  # this solve took 1.5 s of the 1 s budget
        return out

    monkeypatch.setattr(pyomo_backend, "solve_pyomo", slow)
    capsys.readouterr()
    argv = ["placement", "solve", str(sixteen_jobs), "--objective", "traffic"]
    code = main([*argv, "--time-limit", "1", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 3, payload
    assert payload.get("field") != "--time-limit"
    assert payload["termination"] == "time_limit" and payload["status"] == "feasible"
    assert _incumbent(payload, sixteen_jobs, "traffic") == pytest.approx(payload["objective"])


def test_the_budget_starts_after_the_imports_and_the_arguments() -> None:
    """The clock is marked once the solver stack and the family are imported and the
    arguments parsed (a fresh interpreter, so nothing was imported before)."""
    code = """
import json, sys
from optsched.cli import common, main
seen = []
real = common.mark_started
def mark(when):
    if when is not None:
        seen.append([m in sys.modules for m in (*common.SOLVER_STACK, "optsched.placement")])
    real(when)
common.mark_started = mark
main(["placement", "solve", "missing.json", "--time-limit", "5", "--json"])
print(json.dumps(seen))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    # marked exactly once, with every module imported already
    assert seen == [[True] * (len(common.SOLVER_STACK) + 1)], out.stderr
    # a bad option is refused before anything is marked or imported for the solve
    bad = code.replace('"--time-limit", "5"', '"--time-limit", "-1"')
    out = subprocess.run(
        [sys.executable, "-c", bad],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


# --- the library ------------------------------------------------------------------------


@pytest.mark.solver("highs")
def test_every_objective_keeps_a_validated_seed_when_the_deadline_is_spent() -> None:
    instance = generate_instance(5, n_servers=4, seed=3)
    for objective in SEEDS:
        got = seed(instance, objective)
        if got is None:
            continue  # no greedy pass fits this instance for this objective
        with deadline(5.0, started=_passed()), pytest.raises(NotOptimalError) as info:
            placement_solve(instance, objective, time_limit=5.0)
        result = info.value.result
        assert result.solution is not None, objective
        assert result.extra["incumbent_source"] == got[0]
        report = validate(instance, result.solution, objective)
        assert report.ok and report.objective == pytest.approx(result.objective)


def test_a_seed_better_than_the_solvers_bound_is_an_error() -> None:
    """The seed is checked like any incumbent: a value past a proven bound is refused."""
    from optsched.errors import InconsistentResultError
    from optsched.family.exact import _Seed, _stopped
    from optsched.placement.exact import formulation
    from optsched.solvers.result import stopped_while_building

    instance = generate_instance(4, n_servers=4, seed=2)
    form = formulation(instance, "servers")
    got = seed(instance, "servers")
    assert got is not None
    value = validate(instance, got[1], "servers").objective
    assert value is not None
    import dataclasses

    stopped = stopped_while_building("highs", 0.0, "test")
    with pytest.raises(NotOptimalError) as info:
        _stopped(form, None, stopped, _Seed(form), accept_feasible=False)
    assert info.value.result.objective == value
    # a bound above the seed's value (minimising) cannot be a proven bound
    wrong = dataclasses.replace(stopped, bound=value + 1.0)
    with pytest.raises(InconsistentResultError, match="better than the solver's proven bound"):
        _stopped(form, None, wrong, _Seed(form), accept_feasible=False)
    # a proof about the model (infeasible) is never overridden by a seed
    from optsched.solvers.result import TerminationCondition

    proof = dataclasses.replace(stopped, termination=TerminationCondition.INFEASIBLE)
    with pytest.raises(NotOptimalError) as info:
        _stopped(form, None, proof, _Seed(form), accept_feasible=True)
    assert info.value.result.solution is None


# --- every family with a seed -----------------------------------------------------------

#: family -> the module whose ``seed(instance)`` seeds its exact solve.
SEEDED = {
    "placement": None,
    "oasis": "optsched.online.oasis.offline",
    "chronus": "optsched.allocation.chronus.milp",
    "andreas": "optsched.allocation.andreas.milp",
    "optimus": "optsched.allocation.optimus.total_time",
    "aonline": "optsched.online.aonline.offline",
    "pace": "optsched.comm.pace.solve",
    "tensorlights": "smith-order",
    "gavel": "themis",
}


@pytest.mark.solver("highs")
@pytest.mark.parametrize("name", sorted(SEEDED))
def test_a_spent_budget_keeps_each_familys_seed_no_better_than_the_optimum(name: str) -> None:
    """The seed is validated, named, and never better than the optimum solved another way."""
    import importlib

    from optsched.family import get_family

    family = get_family(name)
    instance = family.small_instance()
    module = SEEDED[name]
    if module is None:
        got = seed(instance, "servers")
    elif module.startswith("optsched."):
        got = importlib.import_module(module).seed(instance)
    else:
        got = (module, None)  # a seed named in the formulation itself
    assert got is not None, f"{name}: the seed found no point on the small instance"
    with deadline(5.0, started=_passed()), pytest.raises(NotOptimalError) as info:
        family.solve(instance, time_limit=5.0)
    stopped = info.value.result
    assert stopped.termination.value == "time_limit" and stopped.status.value == "feasible"
    assert stopped.extra["incumbent_source"] == got[0]
    report = family.validate(instance, stopped.solution)
    assert report.ok
    optimum = family.solve(instance)
    assert optimum.optimal and optimum.objective is not None
    assert stopped.objective is not None
    slack = 1e-6 * max(1.0, abs(optimum.objective))
    if optimum.sense == "min":
        assert stopped.objective >= optimum.objective - slack
    else:
        assert stopped.objective <= optimum.objective + slack
