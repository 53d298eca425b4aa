"""The sorted walk's keep-everything test answers as the walk does.

At a decision where every running job still fits and no waiting job fits at its place in the
order (most 2D-LAS threshold crossings), the sorted walk returns the keep-everything decision
without walking. Checked two ways on worlds with many crossings:

* **Sound.** Whenever the test says the walk would keep everything, the walk, run anyway, grants
  nothing new and stops nothing; and both answers are seen.
* **Records.** With the shortcut taken, the records equal the plain full sort's
  (``reference=True``) for 2D-LAS (with and without promotion), EDF and SRTF.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_sim_order_reference import check_identical, one_type_worlds

from optsched.sim import ClusterSpec, GpuType, World
from optsched.sim.policies import EDF, SRTF, Tiresias
from optsched.sim.policy import PolicyDecision, SimState

THRESHOLDS = (2.0, 9.0, 30.0)


class _CheckedKeep(Tiresias):
    """2D-LAS that walks every time and checks the test's answer against the walk."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("las", thresholds=THRESHOLDS, **kwargs)
        self.claim = False
        self.kept = 0  # decisions the test answered "keeps everything"
        self.walked = 0  # decisions it answered no

    def _keeps_all(self, keys: list[tuple[float, ...]], prefix: list[int], capacity: int) -> bool:
        self.claim = super()._keeps_all(keys, prefix, capacity)
        return False  # walk anyway

    def allocate(self, state: SimState) -> PolicyDecision:
        self.claim = False
        running = {s.job_id for s in state.running}
        decision = super().allocate(state)
        if self.claim:
            self.kept += 1
            # the walk kept every running job and started nobody
            assert decision.grants == () and decision.stop is None and decision.keep_running
            assert {s.job_id for s in self._rjobs} == running
        else:
            self.walked += 1
        return decision


def _long_busy_world() -> World:
    from optsched.sim.generate import generate_job_table

    frame = generate_job_table(
        300,
        seed=7,
        mean_interarrival=2.0,
        mu=2.0,
        sigma=1.0,
        gangs=(1, 2, 4),
        gang_weights=(0.5, 0.3, 0.2),
        models=("resnet50", ""),
    )
    cluster = ClusterSpec(gpu_types=(GpuType(name="v100", count=16, gpus_per_server=4),))
    return World.from_frame(frame, cluster, restore_s=0.5)


@settings(max_examples=40, deadline=None)
@given(one_type_worlds(), st.sampled_from([None, 0.5]))
def test_keep_everything_answer_is_the_walks(world: World, knob: float | None) -> None:
    checked = _CheckedKeep(promote_knob=knob)
    ref = Tiresias("las", thresholds=THRESHOLDS, promote_knob=knob, reference=True)
    check_identical(world, checked, ref)
    assert checked._sorted and checked.kept + checked.walked > 0


def test_both_answers_happen_on_a_long_busy_world() -> None:
    world = _long_busy_world()
    checked = _CheckedKeep()
    check_identical(world, checked, Tiresias("las", thresholds=THRESHOLDS, reference=True))
    assert checked.kept > 0 and checked.walked > 0


@settings(max_examples=40, deadline=None)
@given(one_type_worlds(), st.sampled_from(["las", "las-promote", "edf", "srtf"]))
def test_records_with_the_shortcut_are_the_references(world: World, name: str) -> None:
    if name.startswith("las"):
        knob = 0.5 if name == "las-promote" else None
        fast: Any = Tiresias("las", thresholds=THRESHOLDS, promote_knob=knob)
        ref: Any = Tiresias("las", thresholds=THRESHOLDS, promote_knob=knob, reference=True)
    elif name == "edf":
        fast, ref = EDF(), EDF(reference=True)
    else:
        fast, ref = SRTF(), SRTF(reference=True)
    check_identical(world, fast, ref)
    assert fast._sorted


def test_long_busy_world_records_with_the_shortcut() -> None:
    world = _long_busy_world()
    for knob in (None, 0.5):
        fast = Tiresias("las", thresholds=THRESHOLDS, promote_knob=knob)
        ref = Tiresias("las", thresholds=THRESHOLDS, promote_knob=knob, reference=True)
        assert check_identical(world, fast, ref).all_finished
