"""optsched.comm.tensorlights has the shape of every family (instance, generator, solve, policies,
validate) and lives apart from the placement family."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import optsched.comm.tensorlights as tl
from optsched.errors import InvalidInstanceError
from optsched.results import ExactResult, Report


def test_protocol_names_are_exported():
    for name in ("TensorLightsInstance", "generate_instance", "solve", "validate"):
        assert name in tl.__all__ and hasattr(tl, name)
    for method in ("load", "save", "schema", "from_dict"):
        assert callable(getattr(tl.TensorLightsInstance, method))
    assert "seed" in inspect.signature(tl.generate_instance).parameters
    assert set(tl.ALGORITHMS) == {"fair", "priority", "rotate", "one-green", "smith"}


def test_one_calling_convention_one_solution_type(tmp_path):
    inst = tl.generate_instance(2, 3, seed=4, iterations=(2, 4))
    path = tmp_path / "i.json"
    inst.save(path)
    assert tl.TensorLightsInstance.load(path) == inst
    for name, policy in tl.ALGORITHMS.items():
        params = list(inspect.signature(policy).parameters.values())
        assert params[0].name == "instance"
        assert all(p.kind is p.KEYWORD_ONLY for p in params[1:]), name
        res = policy(inst)
        assert isinstance(res, tl.SimulationResult)
        assert isinstance(tl.validate(inst, res), Report)
    exact = tl.solve(inst)
    assert isinstance(exact, ExactResult) and isinstance(exact.solution, tl.SimulationResult)
    # No policy beats the exact best static order on its own objective among static orders,
    # and Smith's order is one of them.
    assert exact.objective <= tl.smith(inst).mean_jct * (1 + 1e-9)
    assert exact.objective <= tl.priority(inst).mean_jct * (1 + 1e-9)


def test_run_by_name_refuses_unknown_names_and_options():
    inst = tl.generate_instance(1, 2, seed=0)
    assert tl.run(inst, "one-green", period=0.5).rotation_period == 0.5
    with pytest.raises(InvalidInstanceError) as err:
        tl.run(inst, "green")
    assert err.value.field == "algorithm"
    with pytest.raises(InvalidInstanceError) as err:
        tl.run(inst, "fair", period=1.0)
    assert err.value.field == "period"


def test_placement_does_not_import_tensorlights():
    code = "import sys, optsched.placement; print('optsched.comm.tensorlights' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
