"""The engine's incremental bookkeeping decides exactly as its plain specification.

* **Placement.** The bucketed free servers (``FreeServers``) give the placement of the plain
  free-list rule (``fit_reference``: best fit, most-free servers, spreading) after any
  sequence of takes and gives, and leave the same free lists.
* **The free picture kept across decisions** equals, after every decision, the cluster minus
  what the running jobs hold (a shared pair once), rebuilt from scratch.
* **Lazy progress.** A run whose progress is brought up to date when read has the record of
  the same run updated at every decision point (restore costs, shared pairs, batch-size phases,
  rounds), bit for bit; and what a policy reads is current.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import busy_worlds
from test_sim_dynamic_batch import _two_jobs, _world

from optsched.sim import SimResult, World, simulate
from optsched.sim.engine.loop import Engine
from optsched.sim.engine.policy import Policy, PolicyDecision, SimState
from optsched.sim.engine.servers import FreeServers, fit, fit_reference
from optsched.sim.policies import make_policy


def _nan_list(values: list[float]) -> list[Any]:
    return [None if math.isnan(v) else v for v in values]


def check_same_record(a: SimResult, b: SimResult) -> None:
    assert a.intervals == b.intervals
    assert _nan_list(a.completion) == _nan_list(b.completion)
    assert _nan_list(a.first_start) == _nan_list(b.first_start)
    assert (a.end_time, a.events, a.decisions, a.extra) == (
        b.end_time,
        b.events,
        b.decisions,
        b.extra,
    )


# -- placement ---------------------------------------------------------------------------


@settings(max_examples=200)
@given(
    st.integers(1, 8).flatmap(
        lambda gps: st.tuples(
            st.just(gps),
            st.lists(st.integers(0, gps), min_size=1, max_size=12),
            st.lists(
                st.tuples(st.integers(1, 3 * gps), st.sampled_from(["prefer", "require"])),
                max_size=10,
            ),
        )
    )
)
def test_bucketed_fit_is_the_reference_fit(case: tuple[int, list[int], list[Any]]) -> None:
    gps, caps, asks = case
    fr = FreeServers(caps, gps)
    plain = list(caps)
    held = []
    for n, mode in asks:
        got = fit(fr, "v", gps, n, mode)
        want = fit_reference(plain, gps, "v", n, mode)
        assert got == want
        assert fr.cap == plain and fr.total == sum(plain)
        assert fr.buckets == [[s for s, f in enumerate(plain) if f == b] for b in range(gps + 1)]
        if got is not None:
            held.append(got)
    for p in held[::2]:  # give half back, then fit again
        for s, k in p.servers:
            fr.give(s, k)
            plain[s] += k
    for n, mode in asks:
        assert fit(fr, "v", gps, n, mode) == fit_reference(plain, gps, "v", n, mode)
        assert fr.cap == plain


# -- the free picture across decisions ----------------------------------------------------


def _complement(engine: Any) -> dict[str, list[int]]:
    """The free GPUs per server that the running jobs leave, rebuilt from scratch."""
    want = {name: list(caps) for name, caps in engine.server_caps.items()}
    for i, run in engine.running.items():
        if run.partner >= 0 and run.partner < i:
            continue  # a shared pair holds its GPUs once
        for s, k in run.placement.servers:
            want[run.placement.gpu_type][s] -= k
    return want


def _check_free_picture(monkeypatch: Any) -> list[int]:
    """Check the kept free picture against the running jobs before and after every placement."""
    checked = [0]
    # the decision is carried out by _apply (after the policy's allocate)
    decide = Engine._apply
    release = Engine._release_gone

    def checking(self: Any, t: float, alloc: Any) -> None:
        decide(self, t, alloc)
        assert {name: fr.cap for name, fr in self._free.items()} == _complement(self)
        assert {i: (r.placement, r.partner) for i, r in self.running.items()} == self._holds
        checked[0] += 1

    def releasing(self: Any) -> Any:
        free = release(self)
        # after the completions since the last decision, before anything is placed
        assert {name: fr.cap for name, fr in free.items()} == _complement(self)
        assert {i: (r.placement, r.partner) for i, r in self.running.items()} == self._holds
        return free

    monkeypatch.setattr(Engine, "_apply", checking)
    monkeypatch.setattr(Engine, "_release_gone", releasing)
    return checked


@settings(max_examples=30, deadline=None)
@given(
    busy_worlds(),
    st.sampled_from(["fifo", "srtf", "tiresias-las", "gandiva", "max-min", "themis", "optimus"]),
)
def test_the_kept_free_picture_is_the_running_jobs_complement(world: World, name: str) -> None:
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        checked = _check_free_picture(mp)
        simulate(world, make_policy(name))
    assert checked[0] > 0


# -- lazy progress ------------------------------------------------------------------------


def _lazy_and_eager(world: World, name: str, **kwargs: Any) -> tuple[SimResult, SimResult]:
    lazy, eager = make_policy(name), make_policy(name)
    lazy.lazy_progress = True
    eager.lazy_progress = False
    return simulate(world, lazy, **kwargs), simulate(world, eager, **kwargs)


LAZY_POLICIES = [
    "fifo",
    "sjf",
    "srtf",
    "edf",
    "tiresias-las",
    "tiresias-gittins-perf",
    "gandiva",
    "max-min",
    "themis",
    "optimus",
    "chronus",
]


@settings(max_examples=40, deadline=None)
@given(busy_worlds(), st.sampled_from(LAZY_POLICIES), st.sampled_from([None, 3.0]))
def test_lazy_progress_gives_the_eager_record(
    world: World, name: str, rounds: float | None
) -> None:
    kwargs: dict[str, Any] = {}
    if rounds is not None and rounds > world.restore_s:
        kwargs["round_seconds"] = rounds
    a, b = _lazy_and_eager(world, name, **kwargs)
    check_same_record(a, b)


def test_lazy_progress_crosses_batch_phases_as_eager(tmp_path: Path) -> None:
    for restore in (0.0, 30.0):
        world = _world(_two_jobs(tmp_path), restore_s=restore)
        for name in ("fifo", "srtf", "max-min"):
            a, b = _lazy_and_eager(world, name)
            check_same_record(a, b)


class _Reader(Policy):
    """Preemptive round robin that logs the progress it reads of every active job."""

    lazy_progress = True

    def __init__(self, lazy: bool) -> None:
        self.lazy_progress = lazy
        self.seen: list[tuple[float, str, float, float, float]] = []

    def allocate(self, state: SimState) -> PolicyDecision:
        from optsched.sim.engine.policy import Grant

        for s in state.active:
            self.seen.append((state.now, s.job_id, s.done, s.attained_service, s.executed_seconds))
        order = sorted(state.active, key=lambda s: (s.placement is not None, s.job.index))
        free = state.capacity(state.world.cluster.names[0])
        grants = []
        for s in order:
            if s.job.num_gpus <= free:
                free -= s.job.num_gpus
                grants.append(Grant(job=s.job_id, gpu_type=state.world.cluster.names[0]))
        return PolicyDecision(grants=tuple(grants))


@settings(max_examples=25, deadline=None)
@given(busy_worlds())
def test_what_a_policy_reads_is_current(world: World) -> None:
    lazy, eager = _Reader(True), _Reader(False)
    a = simulate(world, lazy, round_seconds=None)
    b = simulate(world, eager, round_seconds=None)
    check_same_record(a, b)
    assert lazy.seen == eager.seen
    assert lazy.seen  # the policy read something


def test_shared_pairs_keep_the_free_picture_and_the_eager_record(monkeypatch: Any) -> None:
    from strategies.sim import job_frame, synthetic_throughputs

    from optsched.sim import ClusterSpec, GpuType

    # packed pairs of unequal length: one of a pair completes and the other runs on alone
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=2, gpus_per_server=1),))
    rows = [
        {"model": "A", "duration": d, "arrival": a}
        for d, a in [
            (10.0, 0.0),
            (25.0, 0.0),
            (7.0, 1.0),
            (140.0, 2.0),
            (120.0, 3.0),
            (5.0, 9.0),
            (9.0, 70.0),
        ]
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs(), restore_s=0.5)
    a, b = _lazy_and_eager(world, "gandiva")
    check_same_record(a, b)
    assert any(a.intervals["shared_with"])
    checked = _check_free_picture(monkeypatch)
    simulate(world, make_policy("gandiva"))
    assert checked[0] > 0


# -- the decision's views and the keep-all path ---------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    busy_worlds(),
    st.sampled_from(["fifo", "srtf", "tiresias-las", "tiresias-gittins-perf", "gandiva", "themis"]),
)
def test_kept_views_are_the_active_and_running_jobs(world: World, name: str) -> None:
    """The tuples a decision shows, kept across decisions, are those rebuilt from scratch."""
    import pytest

    decide = Engine._decide
    checked = [0]

    def checking(self: Any, t: float) -> SimState:
        state = decide(self, t)
        assert state.active == tuple(self.active.values())
        assert state.running == tuple(self.states[i] for i in self.running)
        # the states the running view is taken from follow the running jobs, in their order
        assert list(self._running_states) == list(self.running)
        checked[0] += 1
        return state

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "_decide", checking)
        simulate(world, make_policy(name))
    assert checked[0] > 0


@settings(max_examples=40, deadline=None)
@given(busy_worlds(), st.sampled_from(["fifo", "srtf", "tiresias-las", "tiresias-gittins-perf"]))
def test_the_keep_all_path_gives_the_full_passes_record(world: World, name: str) -> None:
    """A decision that keeps every job and starts none, carried out in O(1), as in full.

    The record, and every job's rounds received (counted when read) at the end.
    """
    import pytest

    from optsched.sim.engine import apply

    rounds: list[list[dict[str, int]]] = []
    result = Engine._result

    def keeping(self: Any, t: float, events: int, truncated: bool) -> SimResult:
        rounds.append([dict(s.rounds_received) for s in self.states])
        return result(self, t, events, truncated)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "_result", keeping)
        fast = simulate(world, make_policy(name))
        mp.setattr(apply.Apply, "_keep_all", _keep_all_in_full)
        full = simulate(world, make_policy(name))
    check_same_record(fast, full)
    assert rounds[0] == rounds[1]


def _keep_all_in_full(self: Any, t: float, alloc: PolicyDecision) -> None:
    # the passes of the incremental path (placement, then the changes), as before the shortcut
    placed = self._place(alloc, True)
    assert self._fast
    self._apply_changes(t, placed)
    self._set_wake(t, alloc)


@settings(max_examples=30, deadline=None)
@given(busy_worlds(), st.sampled_from(["fifo", "srtf", "tiresias-las", "gandiva", "themis"]))
def test_a_run_starts_at_the_rate_of_its_placement(world: World, name: str) -> None:
    """The rate found when a fit is checked, reused at its start, is the placement's rate."""
    import pytest

    start = Engine._start

    def checking(self: Any, i: int, t: float, placement: Any, partner: int, *rest: Any) -> None:
        start(self, i, t, placement, partner, *rest)
        assert self.running[i].rate == self._rate(i, placement, partner)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "_start", checking)
        simulate(world, make_policy(name))
