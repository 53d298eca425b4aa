"""The compiled catch-up is the plain one, bit for bit.

The engine's lazy catch-up (:mod:`optsched.sim.engine.catchup`) runs in Python (the reference,
with array accumulations over long stretches) until a run has replayed ``KERNEL_STEPS`` steps,
then as a Numba kernel. Both must give the same values on any stretch of decision points
(restore time left or not, the work reached on the way, zero gaps), and whole runs the same
record whichever is used from the start.
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import busy_worlds
from test_sim_engine_incremental import check_same_record
from test_sim_las_fast import catch_up_cases

from optsched.sim import World, simulate
from optsched.sim.engine import catchup
from optsched.sim.engine.loop import Engine
from optsched.sim.policies import make_policy

#: the policies with lazy progress (the catch-up runs) and one without
POLICIES = ["tiresias-las", "srtf", "fifo", "edf", "themis"]


def _arrays(case: dict[str, Any]) -> tuple[list[float], array[float]]:
    times = case["times"]
    gaps = array("d", [0.0] + [b - a for a, b in itertools.pairwise(times)])
    return times, gaps


@settings(max_examples=300, deadline=None)
@given(catch_up_cases(), st.sampled_from([1, 7, 96]))
def test_the_kernel_is_the_reference(case: dict[str, Any], vector_steps: int) -> None:
    times, gaps = _arrays(case)
    k = bisect.bisect_right(times, case["synced"])
    args = (
        k,
        case["synced"],
        case["overhead"],
        *case["start"],
        case["work"],
        case["rate"],
        case["gpus"],
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(catchup, "VECTOR_STEPS", vector_steps)
        want = catchup.catch_up(times, gaps, *args)
    t8 = np.array(times, dtype=np.float64)
    g8 = np.frombuffer(gaps)
    n = len(times)
    assert catchup.catch_up_loop(t8, g8, n, *args) == want
    assert catchup.catch_up_kernel()(t8, g8, n, *args) == want
    # arrays with room left beyond the first n entries (as the engine keeps them)
    t8x, g8x = np.concatenate((t8, np.full(5, np.nan))), np.concatenate((g8, np.full(5, np.nan)))
    assert catchup.catch_up_kernel()(t8x, g8x, n, *args) == want


@settings(max_examples=30, deadline=None)
@given(busy_worlds(), st.sampled_from(POLICIES), st.sampled_from([None, 3.0]))
def test_runs_on_the_kernel_give_the_plain_record(
    world: World, name: str, rounds: float | None
) -> None:
    kwargs: dict[str, Any] = {}
    if rounds is not None and rounds > world.restore_s:
        kwargs["round_seconds"] = rounds
    plain = simulate(world, make_policy(name), **kwargs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(catchup, "KERNEL_STEPS", 0)  # compiled from the first catch-up on
        mp.setattr(Engine, "F8_START", 1)  # its arrays grown at every other decision point
        compiled = simulate(world, make_policy(name), **kwargs)
    check_same_record(plain, compiled)


def test_the_engine_switches_to_the_kernel() -> None:
    """A run past ``KERNEL_STEPS`` replayed steps switches; later runs start compiled."""
    from optsched.sim import generate_instance

    seen: list[bool] = []
    real = Engine._result

    def spy(self: Any, *args: Any) -> Any:
        seen.append(self._kernel is not None)
        return real(self, *args)

    world = generate_instance(40, "v100=8", seed=3)
    runs = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "_result", spy)
        mp.setattr(catchup, "_KERNEL", [])  # as in a process that has not loaded it
        runs.append(simulate(world, make_policy("tiresias-las")))
        with pytest.MonkeyPatch.context() as low:
            low.setattr(catchup, "KERNEL_STEPS", 1)
            runs.append(simulate(world, make_policy("tiresias-las")))
        runs.append(simulate(world, make_policy("tiresias-las")))  # far below KERNEL_STEPS
    assert seen == [False, True, True]
    for other in runs[1:]:
        check_same_record(runs[0], other)
