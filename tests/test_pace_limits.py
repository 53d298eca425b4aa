"""Hostile profiles and instances: refused by a documented limit naming a real field, or run.

Regression tests for each class of defect: huge or infinite times, sums that overflow, absurd
parameter counts, profiles too large for the fusion DP (5,000 layers), slices and cycle ticks
beyond the budgets, and the property that whatever the validators accept is solved and
simulated without overflow or NaN.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from strategies.pace import extreme_instances

from optsched import limits
from optsched._validation import parse
from optsched.cli import main
from optsched.comm.pace import CommInstance, compare, default_policies, solve, validate
from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.policies import P3, Horovod, Pace
from optsched.errors import InvalidInstanceError
from optsched.profiles import MAX_LAYER_MS, MAX_PROFILE_MS, Profile, load_profile


def base() -> dict[str, Any]:
    return load_profile("alexnet").to_dict()


def field_exists(data: dict[str, Any], path: str) -> bool:
    """Whether ``path`` (``a.b[3].c``) names a value of ``data``."""
    node: Any = data
    for part in path.replace("]", "").replace("[", ".").split("."):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return False
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["layers"][0].update(backward_ms=1e30), "layers[0].backward_ms"),
        (lambda d: d["layers"][2].update(forward_ms=math.inf), "layers[2].forward_ms"),
        (lambda d: d["layers"][1].update(flops=1e308), "layers[1].flops"),
        (
            lambda d: d["layers"][0]["tensors"][0].update(params=10**30),
            "layers[0].tensors[0].params",
        ),
        (lambda d: d.update(total_params=10**30), "total_params"),
        (lambda d: d.update(dtype_bytes=10**6), "dtype_bytes"),
        (lambda d: d["compute"].update(throughput_tflops=math.inf), "compute.throughput_tflops"),
    ],
)
def test_absurd_values_are_refused_naming_a_field_that_exists(mutate, field):
    data = base()
    mutate(data)
    with pytest.raises(InvalidInstanceError) as err:
        parse(Profile, data)
    assert err.value.field == field
    assert field_exists(data, field)


def test_infinity_in_files_is_refused_by_the_loader(tmp_path):
    data = base()
    text = json.dumps(data).replace('"backward_ms": ', '"backward_ms": Infinity, "x": ', 1)
    path = tmp_path / "inf.json"
    path.write_text(text)
    with pytest.raises(InvalidInstanceError) as err:
        load_profile(path)
    assert err.value.file == str(path)
    toml = tmp_path / "inf.toml"
    import tomli_w

    toml.write_text(tomli_w.dumps(data).replace("\nbackward_ms = ", "\nbackward_ms = inf #", 1))
    with pytest.raises(InvalidInstanceError) as err:
        load_profile(toml)
    assert err.value.file == str(toml)


def test_a_profile_whose_sums_exceed_an_iteration_is_refused():
    data = base()
    per = MAX_LAYER_MS  # each layer is at its own limit; the sum is over the profile's limit
    n = int(MAX_PROFILE_MS / (2 * per)) + 1
    template = data["layers"][-1]
    data["layers"] = data["layers"][:-1] + [
        {
            **copy.deepcopy(template),
            "name": f"x{i}",
            "forward_ms": per,
            "backward_ms": per,
            "tensors": [],
        }
        for i in range(n)
    ]
    data["layers"][-1]["tensors"] = template.get("tensors", [])
    with pytest.raises(InvalidInstanceError) as err:
        parse(Profile, data)
    assert err.value.field == "layers" and "sum" in err.value.message


def huge_profile(layers: int) -> Profile:
    return Profile(
        name="deep",
        display_name="Deep",
        source="test",
        total_params=layers * 10,
        compute={"provenance": "estimated", "device": "test", "batch_size": 1},
        layers=tuple(
            {
                "name": f"l{i}",
                "forward_ms": 0.01,
                "backward_ms": 0.02,
                "tensors": ({"name": f"l{i}.w", "params": 10},),
            }
            for i in range(layers)
        ),
    )


def test_a_5000_layer_profile_is_refused_before_the_fusion_dp(tmp_path):
    inst = CommInstance(profile=huge_profile(5000))
    with pytest.raises(InvalidInstanceError) as err:
        solve(inst)
    assert err.value.field == "profile" and "max_events" in err.value.message
    with pytest.raises(InvalidInstanceError) as err:
        compare(inst)
    assert err.value.field == "profile"
    # The command line names the argument and exits 2.
    path = tmp_path / "deep.json"
    huge_profile(5000).save(path)
    assert main(["pace", str(path), "--json"]) == 2
    assert main(["validate", str(path)]) == 2  # a profile is not an instance kind


def test_the_budget_can_be_raised():
    # 300 tensors take 4.5M DP steps: refused under a tiny budget, solved under the default.
    inst = CommInstance(profile=huge_profile(300))
    with limits.override(max_events=1_000_000), pytest.raises(InvalidInstanceError):
        solve(inst)
    assert solve(inst).optimal


def test_fine_slices_and_cycles_are_refused_by_budget():
    inst = CommInstance(profile="resnet50")
    with pytest.raises(InvalidInstanceError) as err:
        P3(slice_mb=1e-9)(inst)
    assert err.value.field == "p3.slice_mb" and "max_array_cells" in err.value.message
    with pytest.raises(InvalidInstanceError) as err:
        Horovod(cycle_ms=1e-300)(inst)
    assert err.value.field == "horovod.cycle_ms"


def test_an_absurd_horizon_names_the_field():
    # VGG-16 at 1 kbit/s is 89 days per iteration: slow but representable, so accepted.
    assert CommInstance(profile="vgg16", bandwidth_gbps=1e-6).horizon_ms < 1e10
    big = huge_profile(1).model_copy(update={"dtype_bytes": 16, "total_params": 10**13}).to_dict()
    big["layers"][0]["tensors"][0]["params"] = 10**13
    with pytest.raises(InvalidInstanceError) as err:
        _ = CommInstance(profile=big, bandwidth_gbps=1e-6).dag
    assert err.value.field == "bandwidth_gbps"
    with pytest.raises(InvalidInstanceError) as err:
        _ = CommInstance(profile=huge_profile(1000), workers=10**6, latency_us=1e9).dag
    assert err.value.field == "latency_us"
    with pytest.raises(InvalidInstanceError) as err:
        CommInstance(profile="vgg16", bandwidth_gbps=math.nan)
    assert err.value.field == "bandwidth_gbps"


@settings(max_examples=60)
@given(extreme_instances())
def test_whatever_is_accepted_runs_without_overflow_or_nan(data):
    # A small array budget (4,000 slices per plan) keeps each example fast; refusals by it
    # are part of what is checked.
    with limits.override(max_array_cells=10**6):
        check_accepted_runs(data)


def check_accepted_runs(data: dict[str, Any]) -> None:
    try:
        inst = CommInstance.from_dict(data)
        _ = inst.dag  # the horizon check
    except InvalidInstanceError as exc:
        assert field_exists(data, exc.field) or exc.field in CommInstance.model_fields
        return
    result = solve(inst)
    assert result.optimal and math.isfinite(result.objective)
    assert validate(inst, result.solution).ok
    # On equal terms: Horovod's threshold is PACE's fusion buffer.
    fusion = inst.max_group_mb if inst.max_group_mb is not None else 1e12
    for policy in default_policies(fusion_mb=fusion):
        name = policy.name
        try:
            sched = policy(inst)
        except InvalidInstanceError as exc:  # a slicing or cycle budget, named
            assert exc.field.startswith(("p3.", "bytescheduler.", "horovod.")), exc.field
            continue
        assert math.isfinite(sched.iteration_time), name
        assert np.all(np.isfinite(sched.trace.segments)), name
        assert sched.iteration_time >= result.objective * (1 - 1e-9), name
        report = validate(inst, sched)
        assert report.ok, (name, report.violations[:2])


def test_an_inline_profile_error_names_the_profile_field():
    # The profile is a name, a file or a table: an error inside the table names its own field
    # under "profile", never a branch of the union.
    data = {"profile": base(), "workers": 4}
    data["profile"]["layers"][0]["backward_ms"] = 1e30
    with pytest.raises(InvalidInstanceError) as err:
        CommInstance.from_dict(data)
    assert err.value.field == "profile.layers[0].backward_ms"
    assert field_exists(data, err.value.field)
    with pytest.raises(InvalidInstanceError) as err:
        CommInstance.from_dict({"profile": [1]})
    assert err.value.field == "profile"


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Horovod(threshold_mb="x"), "horovod.threshold_mb"),
        (lambda: Horovod(cycle_ms=None), "horovod.cycle_ms"),
        (lambda: P3(slice_mb=True), "p3.slice_mb"),
        (lambda: Pace(max_group_mb=-1.0), "pace.max_group_mb"),
        (lambda: Pace(max_group_tensors=0), "pace.max_group_tensors"),
        (lambda: CostModel.ring(8, "10", 5), "bandwidth_gbps"),
        (lambda: build_dag(load_profile("alexnet"), update_ms_per_mb="x"), "update_ms_per_mb"),
        (lambda: build_dag(load_profile("alexnet"), order=5), "order"),
        (lambda: compare("alexnet", order="bogus"), "order"),
        (lambda: solve(CommInstance(profile="alexnet"), method="bogus"), "method"),
    ],
)
def test_bad_python_arguments_raise_field_named_errors(make, field):
    # Never a bare TypeError/ValueError/KeyError from the Python API.
    with pytest.raises(InvalidInstanceError) as err:
        make()
    assert err.value.field == field
