"""Gavel's heterogeneity-aware max-min fairness in the Sia world (``SiaGavel(policy=...)``).

``tests/data/sia/gavel-mmf-rate10-5.json`` holds what Sia's own simulator computed with
``simulator_config.gavel_default_policy = "max_min_fairness_perf"`` on its 80-job workload
(``benchmarks/_sia_gavel_policy.py``): the JCTs, GPU-hours and restarts, and six rounds of
Gavel's LP (inputs and the shares its code returned). The whole-run comparison needs Sia's
``sia-simulator/`` folder (``$OPTSCHED_SIA_SRC``); the round-by-round comparison over the whole
run reads the cached run's recording (``$OPTSCHED_SIA_RUNS``); both skip without them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.goodput import pollux_workloads
from strategies.sia import SIA_RUNS, SIA_SRC
from test_goodput_hetero import TINY, needs_sia, tiny_apps

from optsched.errors import InvalidInstanceError
from optsched.goodput.hetero.gavel import (
    GAVEL_POLICIES,
    SiaGavel,
    max_min_fairness_shares,
    pandas_parsed,
)
from optsched.goodput.hetero.validate import validate
from optsched.goodput.hetero.world import simulate_hetero
from optsched.goodput.workload import read_workload
from optsched.tolerances import CAPACITY_TOL, SOLVER_AGREEMENT_TOL

DATA = Path(__file__).resolve().parent / "data" / "sia" / "gavel-mmf-rate10-5.json"
SIA_DIR = SIA_SRC
CALLS = SIA_RUNS / "gavel-max_min_fairness_perf" / "calls.jsonl"
needs_calls = pytest.mark.skipif(
    not CALLS.is_file(), reason=f"Sia's recorded Gavel max-min rounds not at {CALLS}"
)
MMF = "max_min_fairness_perf"


def _level(t: np.ndarray, sf: np.ndarray, cap: np.ndarray, x: np.ndarray) -> float:
    """The max-min objective at ``x``, computed from its definition (no solver code)."""
    p = t @ (cap / cap.sum())
    return float(np.min(sf / p * (t * x).sum(axis=1)))


def _feasible(sf: np.ndarray, cap: np.ndarray, x: np.ndarray) -> bool:
    return bool(
        (x >= -CAPACITY_TOL).all()
        and (x.sum(axis=1) <= 1 + CAPACITY_TOL).all()
        and ((sf[:, None] * x).sum(axis=0) <= cap + CAPACITY_TOL).all()
    )


@pytest.mark.parametrize("solver", ["ecos", "clarabel", "highs"])
def test_two_equal_gangs_on_one_type_split_it_evenly(solver: str) -> None:
    """By hand: two 4-GPU jobs, 4 GPUs: the unique optimum gives each half the time."""
    t = np.array([[1.0], [1.0]])
    x = max_min_fairness_shares(t, np.array([4.0, 4.0]), np.array([4.0]), solver)
    assert x[:, 0] == pytest.approx([0.5, 0.5], abs=SOLVER_AGREEMENT_TOL)


def test_the_level_by_hand_on_two_types() -> None:
    """Job a twice as fast on type 0; b the same on both; one GPU each: the level is 1.

    ``p = (1.5, 1)``; b can at most have all its time (level 1), and a reaches 4/3 with type 0
    alone, so the optimum is 1 whichever point a solver returns.
    """
    t = np.array([[2.0, 1.0], [1.0, 1.0]])
    sf, cap = np.array([1.0, 1.0]), np.array([1.0, 1.0])
    for solver in ("ecos", "clarabel", "highs"):
        x = max_min_fairness_shares(t, sf, cap, solver)
        assert _feasible(sf, cap, x)
        assert _level(t, sf, cap, x) == pytest.approx(1.0, abs=SOLVER_AGREEMENT_TOL)


@given(
    st.integers(1, 5).flatmap(
        lambda m: st.tuples(
            st.lists(
                st.lists(st.floats(0.1, 10.0), min_size=3, max_size=3), min_size=m, max_size=m
            ),
            st.lists(st.integers(1, 4), min_size=m, max_size=m),
            st.lists(st.integers(4, 8), min_size=3, max_size=3),
        )
    )
)
def test_three_solvers_reach_the_same_level(
    case: tuple[list[list[float]], list[int], list[int]],
) -> None:
    """ECOS (Sia's point), Clarabel (the centre) and HiGHS (a vertex): one optimal level.

    Every gang fits every type (Clarabel's form holds a gang at 0 on a type it does not fit).
    """
    t, sf, cap = (np.array(v, dtype=np.float64) for v in case)
    levels = []
    for solver in ("ecos", "clarabel", "highs"):
        x = max_min_fairness_shares(t, sf, cap, solver)
        assert _feasible(sf, cap, x), solver
        levels.append(_level(t, sf, cap, x))
    assert levels[0] == pytest.approx(levels[2], rel=1e-5, abs=1e-7)
    assert levels[1] == pytest.approx(levels[2], rel=1e-5, abs=1e-7)


def test_shares_equal_sias_rounds_bit_for_bit() -> None:
    """Six of Sia's rounds: ECOS's point from the same input, to the last bit (module notes)."""
    for rnd in json.loads(DATA.read_text())["rounds"]:
        t = np.array(rnd["throughputs"])
        sf = np.array(rnd["scale_factors"], dtype=np.float64)
        cap = np.array(rnd["capacity"], dtype=np.float64)
        x = max_min_fairness_shares(t, sf, cap, "ecos").clip(min=0.0).clip(max=1.0)
        assert np.array_equal(x, np.array(rnd["shares"])), rnd["call"]


@needs_calls
def test_shares_equal_every_round_of_sias_run() -> None:
    """Every one of the cached run's LP calls (``_sia_gavel_policy.py --record``)."""
    n = 0
    for line in CALLS.read_text().splitlines():
        rec = json.loads(line)
        if not rec["allocation"]:
            continue
        names, types = sorted(rec["throughputs"]), sorted(rec["rest"][1])
        t = np.array([[rec["throughputs"][j][k] for k in types] for j in names])
        sf = np.array([rec["scale_factors"][j] for j in names], dtype=np.float64)
        cap = np.array([rec["rest"][1][k] for k in types], dtype=np.float64)
        want = np.array([[rec["allocation"][j][k] for k in types] for j in names])
        x = max_min_fairness_shares(t, sf, cap, "ecos").clip(min=0.0).clip(max=1.0)
        assert np.array_equal(x, want), n
        n += 1
    assert n == 134


@needs_sia
def test_max_min_matches_sias_simulator_job_for_job() -> None:
    """Every JCT, restart count and the GPU-hours of Sia's own run under Gavel's LAS."""
    want = json.loads(DATA.read_text())
    wl = read_workload(SIA_DIR / "workloads" / "scale" / "rate_10" / "workload-5.csv")
    run = simulate_hetero(wl, SiaGavel(360, policy=MMF), SIA_DIR / "traces", interval=360)
    assert {j.name: j.jct for j in run.jobs} == want["jct"]
    assert {j.name: j.num_restarts for j in run.jobs} == want["num_restarts"]
    assert run.gpu_hours() == pytest.approx(want["gpu_hours"], abs=1e-9)
    assert run.gpu_hours(by_type=True) == pytest.approx(want["gpu_hours_per_type"], abs=1e-9)
    assert validate(run).ok


@settings(max_examples=20)  # a run is ~0.3 s (an LP a round, two solvers)
@given(pollux_workloads(max_jobs=4, max_gpus=8))
def test_max_min_runs_are_validator_clean(wl: object) -> None:
    for solver in ("ecos", "highs"):
        pol = SiaGavel(360, solver=solver, policy=MMF)
        run = simulate_hetero(wl, pol, tiny_apps(), gpu_types=TINY, interval=360)  # type: ignore[arg-type]
        assert run.complete
        report = validate(run)
        assert report.ok, report.violations[:5]


def test_a_bad_policy_or_solver_names_its_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        SiaGavel(360, policy="max_min_fairness")
    assert err.value.field == "policy"
    assert all(p in str(err.value) for p in GAVEL_POLICIES)
    with pytest.raises(InvalidInstanceError) as err:
        SiaGavel(360, solver="cbc", policy=MMF)
    assert err.value.field == "solver"
    with pytest.raises(InvalidInstanceError) as err:
        max_min_fairness_shares(np.ones((1, 1)), np.ones(1), np.ones(1), "gurobi")
    assert err.value.field == "solver"


def test_default_solvers_follow_the_policy() -> None:
    assert SiaGavel(360).solver == "clarabel"
    assert SiaGavel(360).name == "gavel"
    mmf = SiaGavel(360, policy=MMF)
    assert (mmf.solver, mmf.name) == ("ecos", "gavel-max_min_fairness_perf")


def test_pandas_parsed_reads_as_sias_pandas_did() -> None:
    """The value Sia's pandas 1.5.3 read from cifar10's dgx-ext placements file, and exactness.

    When the 17 digits kept (leading zeros included) hold the whole decimal, the parser's
    integer and power of ten are exact and its one division is correctly rounded.
    """
    assert pandas_parsed(0.057434022426605225) == 0.0574340224266052
    assert pandas_parsed(0.0574340224266052) == 0.0574340224266052
    for v in (0.5, 0.1, 1.25, 0.0021649279892444, 123.456, -0.0175):
        assert pandas_parsed(v) == v


def test_pandas_parsed_equals_pandas_1_5_on_recorded_values() -> None:
    """202 decimals as pandas 1.5.3's parser read them (150 not correctly rounded, by up to
    thousands of units in the last place where leading zeros use up the 17 digits)."""
    rec = json.loads((DATA.parent / "pandas15-parsed.json").read_text())
    for text, want in rec["values"]:
        assert pandas_parsed(float(text)) == want, text
