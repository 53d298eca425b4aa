"""The order walk (``optsched.sim.policies.walk``): its wait queue and its sorted walk.

The wait queue answers as a plain sorted list of the waiting jobs would, whatever the order of
pushes, re-keys and removals; and the sorted walk (one GPU type, the running jobs kept sorted
across decisions) decides at every decision point what the reference walk (a full sort of
every candidate) decides on the same state: the same jobs run after the decision, and the
same wake-up is asked for (or both come after the next arrival). The records of the two are
compared in ``tests/test_sim_order_reference.py``; here every decision is.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import one_type_worlds, wait_queue_ops

from optsched.sim import World, simulate
from optsched.sim.engine.policy import PolicyDecision, SimState
from optsched.sim.policies import OrderPolicy, Tiresias, make_policy
from optsched.sim.policies.walk import WaitQueue
from optsched.tolerances import TIME_TOL


def _job(job: int, gang: int) -> Any:
    # what the queue reads of a job: its id and its gang
    return SimpleNamespace(job_id=f"j{job}", job=SimpleNamespace(num_gpus=gang))


@settings(max_examples=200)
@given(wait_queue_ops())
def test_the_wait_queue_answers_as_a_sorted_list(ops: list[tuple[str, int, int, float]]) -> None:
    queue = WaitQueue()
    model: dict[str, tuple[tuple[float, ...], int]] = {}  # job id -> (key, gang)
    gang_of: dict[int, int] = {}  # a job's gang is fixed: its first one
    for op, job, gang, key_head in ops:
        job_id = f"j{job}"
        gang = gang_of.setdefault(job, gang)
        if op == "push":
            # keys end with the job's position, as the policies' full keys do: all distinct
            key = (key_head, float(job))
            queue.push(_job(job, gang), key)
            model[job_id] = (key, gang)
        elif op == "discard":
            queue.discard(job_id)
            model.pop(job_id, None)
        else:
            fits = [(k, j) for j, (k, g) in model.items() if g <= gang]
            assert queue.best(gang) == (min(fits) if fits else None)
        assert len(queue) == len(model)
        assert all(j in queue for j in model)
        # no emptied heap is kept, and every heap holds its jobs only
        assert all(queue.heaps.values())
        assert sum(len(h) for h in queue.heaps.values()) == len(model)


def _after(state: SimState, decision: PolicyDecision) -> set[str]:
    """The jobs that run after ``decision`` (one GPU type: which type needs no comparing)."""
    granted = {g.job for g in decision.grants}
    if not decision.keep_running:
        return granted
    stopped = set(decision.stop or ())
    return {s.job_id for s in state.running if s.job_id not in stopped} | granted


def _lockstep(fast: OrderPolicy, ref: OrderPolicy) -> list[int]:
    """Make ``fast`` check each of its decisions against ``ref``'s on the same state."""
    checked = [0]
    allocate, reset = fast.allocate, fast.reset

    def both_reset(world: World) -> None:
        reset(world)
        ref.reset(world)

    def both_allocate(state: SimState) -> PolicyDecision:
        got = allocate(state)
        want = ref.allocate(state)
        assert _after(state, got) == _after(state, want), state.now
        if got.wake_at != want.wake_at:
            # the sorted 2D-LAS wake-up may stand its prediction in for a crossing after the
            # next arrival, where the engine decides anyway (tests/test_sim_las_fast.py)
            nxt = min(
                (j.arrival for j in state.world.jobs if j.arrival > state.now + TIME_TOL),
                default=math.inf,
            )
            assert got.wake_at is not None and want.wake_at is not None, state.now
            assert min(got.wake_at, want.wake_at) > nxt, state.now
        # the sorted walk's kept sum of the running gangs is their sum
        assert fast._rtotal == sum(fast._rgpus), state.now
        checked[0] += 1
        return got

    fast.reset = both_reset  # type: ignore[method-assign]
    fast.allocate = both_allocate  # type: ignore[method-assign]
    return checked


@settings(max_examples=40, deadline=None)
@given(one_type_worlds(), st.sampled_from(["srtf", "edf", "tiresias-las"]))
def test_the_sorted_walk_decides_as_the_reference_at_every_decision(
    world: World, name: str
) -> None:
    if name == "tiresias-las":
        # thresholds the short jobs of these worlds cross
        fast: OrderPolicy = Tiresias("las", thresholds=(2.0, 9.0, 30.0))
        ref: OrderPolicy = Tiresias("las", thresholds=(2.0, 9.0, 30.0), reference=True)
    else:
        fast, ref = make_policy(name), make_policy(name)  # type: ignore[assignment]
        ref.reference = True
    checked = _lockstep(fast, ref)
    record = simulate(world, fast)
    assert fast._sorted
    assert checked[0] == record.decisions > 0


@given(st.lists(st.integers(1, 64), max_size=40), st.data())
def test_the_sorted_walks_run_sum_is_the_plain_sum(gpus: list[int], data: Any) -> None:
    # the run of running jobs ahead of the queue's best, summed from the shorter side of the
    # kept total (:func:`~optsched.sim.policies.walk._run_gpus`): the slice's sum, exactly
    from optsched.sim.policies.walk import _run_gpus

    r = data.draw(st.integers(0, len(gpus)))
    j = data.draw(st.integers(r, len(gpus)))
    assert _run_gpus(sum(gpus), gpus, r, j) == sum(gpus[r:j])


def test_srtf_reads_no_running_key_while_every_running_job_is_ahead() -> None:
    """SRTF keeps its running keys while they all precede the queue, and decides as the reference.

    Two 1-GPU jobs run on 2 GPUs; two longer ones wait behind them: the kept keys (upper
    bounds: a running job's remaining time only falls) say so, and are not refreshed.
    A short job arriving later is ahead of a running one: the keys are refreshed, and it
    preempts the longer running job, as the reference walk decides.
    """
    import pandas as pd

    from optsched.sim import parse_cluster
    from optsched.sim.policies.basic import SRTF

    frame = pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d", "e"],
            "arrival": [0.0, 0.0, 1.0, 2.0, 30.0],
            "num_gpus": [1, 1, 1, 1, 1],
            "duration": [100.0, 50.0, 200.0, 300.0, 10.0],
        }
    )
    frame = frame.assign(
        model="generic",
        total_steps=frame["duration"],
        batch_size=float("nan"),
        weight=1.0,
        deadline=float("nan"),
        user="",
    )
    world = World.from_frame(frame, parse_cluster("v100=2"))
    fast, ref = SRTF(), SRTF(reference=True)
    checked = _lockstep(fast, ref)
    stale: list[float] = []
    allocate = fast.allocate

    def watch(state: SimState) -> PolicyDecision:
        got = allocate(state)
        fresh = sorted(fast._full_key(state, s) for s in fast._rjobs)
        if fast._rkeys != fresh:
            stale.append(state.now)
        return got

    fast.allocate = watch  # type: ignore[method-assign]
    record = simulate(world, fast)
    assert fast._sorted
    assert checked[0] == record.decisions
    # (a and b enter the running jobs at c's arrival, keyed then); d's arrival finds both
    # still ahead of the queue: their keys, a second old, are kept, not re-read
    assert 2.0 in stale
    # e (10 s) preempts a (100 s, 70 left at t = 30): the decision that needed fresh keys
    starts = dict(zip(record.intervals["job_id"], record.intervals["start"], strict=False))
    assert starts["e"] == 30.0
    assert 30.0 not in stale
