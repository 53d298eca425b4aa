"""Pollux's compiled search against its NumPy reference: the same draws, the same decisions.

Every kernel is checked against the NumPy code it restates, from the same generator state:
the draws of :mod:`optsched.goodput.policies.pollux_rng` against :class:`numpy.random.Generator`
(values and the state left behind), the mutation and repair loops against ``_mutate`` and
``_repair``, and the whole search and the policy's decisions round after round against the
NumPy path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.goodput.decision import Allocation
from optsched.goodput.policies.pollux import PolluxPolicy, _mutate, _repair, search
from optsched.goodput.policies.pollux_kernels import kernels
from optsched.goodput.policies.pollux_nsga import _survive, crowding_distance, non_dominated_fronts
from optsched.goodput.round_model import RoundInstance, generate_instance
from optsched.goodput.round_workload import RoundSampler, replay_rounds
from optsched.goodput.traces import read_model_traces
from optsched.goodput.workload import PolluxWorkload, read_workload
from tests.strategies.goodput_round import any_states, tiny_rounds

DATA = Path(__file__).parent / "data" / "pollux"
SMALL = {"pop_size": 20, "generations": 15}

#: One generator operation: (kind, argument).
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("random"), st.integers(0, 40)),
        st.tuples(st.just("bounded"), st.lists(st.integers(0, 2**31), max_size=12)),
        st.tuples(st.just("fill"), st.tuples(st.integers(1, 2**31), st.integers(0, 12))),
        st.tuples(st.just("permutation"), st.integers(0, 300)),
        st.tuples(st.just("skip"), st.integers(0, 5000)),
    ),
    max_size=12,
)


def _same_state(a: np.random.Generator, b: np.random.Generator) -> bool:
    return bool(a.bit_generator.state == b.bit_generator.state)


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1), st.booleans(), _OPS)
def test_draws_are_numpys(seed: int, buffered: bool, ops: list[tuple[str, object]]) -> None:
    k = kernels()
    ref = np.random.default_rng(seed)
    if buffered:  # start with a 32-bit half kept back
        ref.integers(0, 7)
    mine = np.random.default_rng(0)
    state = k.load_state(ref)
    assert state is not None
    for kind, arg in ops:
        if kind == "random":
            n = int(arg)  # type: ignore[call-overload]
            got = np.array([k.next_double(state) for _ in range(n)])
            assert np.array_equal(got, ref.random(n))
        elif kind == "bounded":  # integers(low, high) with array bounds, one draw per entry
            ranges = np.array(arg, dtype=np.int64)
            got = [k.bounded(state, int(r)) for r in ranges]
            assert got == ref.integers(np.zeros_like(ranges), ranges + 1).tolist()
        elif kind == "fill":  # integers(high, size=...) with a scalar bound
            high, size = arg  # type: ignore[misc]
            got = [k.bounded(state, high - 1) for _ in range(size)]
            assert got == ref.integers(high, size=(size, 1)).ravel().tolist()
        elif kind == "permutation":
            n = int(arg)  # type: ignore[call-overload]
            assert np.array_equal(k.permutation(state, n), ref.permutation(n))
        else:
            n = int(arg)  # type: ignore[call-overload]
            k.skip(state, n)
            ref.random(n)
        k.store_state(mine, state)
        assert _same_state(mine, ref)


def test_other_generators_take_the_numpy_path() -> None:
    instance = generate_instance(3, num_nodes=2, seed=4)
    a = search(instance, rng=np.random.Generator(np.random.MT19937(5)), **SMALL)
    b = search(instance, rng=np.random.Generator(np.random.MT19937(5)), compiled=False, **SMALL)
    assert np.array_equal(a.front, b.front) and np.array_equal(a.values, b.values)
    assert kernels().load_state(np.random.Generator(np.random.MT19937(5))) is None


@settings(max_examples=80)
@given(st.integers(1, 60), st.integers(1, 3), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_fronts_and_survival_are_numpys(n: int, m: int, levels: int, seed: int) -> None:
    # few distinct values: ties and repeated points in every objective
    f = np.random.default_rng(seed).integers(0, levels, size=(n, m)).astype(np.float64)
    _check_same_fronts_and_survival(f, seed)


@settings(max_examples=60)
@given(st.integers(3, 120), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_tied_fronts_survive_as_numpys(n: int, distinct: int, seed: int) -> None:
    # Pollux's tie: a front of many states with the same objectives (a few distinct points,
    # each repeated), cut to fewer than it holds
    rng = np.random.default_rng(seed)
    points = np.column_stack([np.arange(distinct), -np.arange(distinct)]).astype(np.float64)
    f = points[rng.integers(0, distinct, size=n)]
    _check_same_fronts_and_survival(f, seed)
    crowd = kernels().crowding(f, np.arange(n))
    assert np.array_equal(crowd, crowding_distance(f))


def _check_same_fronts_and_survival(f: np.ndarray, seed: int) -> None:
    n = len(f)
    k = kernels()
    members, starts = k.front_order(f)
    want = non_dominated_fronts(f)
    assert len(starts) - 1 == len(want)
    for r, front in enumerate(want):
        assert np.array_equal(members[starts[r] : starts[r + 1]], front)
    rank, _ = k.fronts(f)
    for r, front in enumerate(want):
        assert np.array_equal(np.flatnonzero(rank == r), np.sort(front))
    for size in {1, max(1, n // 2), n}:
        ref, mine = np.random.default_rng(seed), np.random.default_rng(seed)
        state = k.load_state(mine)
        kept, crowd = k.survive(f, size, state)
        want_kept, want_crowd = _survive(f, size, ref)
        assert np.array_equal(kept, want_kept)
        assert np.array_equal(crowd, want_crowd)
        k.store_state(mine, state)
        assert _same_state(mine, ref)


def _limits(instance: RoundInstance) -> np.ndarray:
    return np.array([instance.gpus_per_node, instance.max_job_nodes, 1, 1], dtype=np.int64)


def _bounds(instance: RoundInstance) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([j.max_replicas for j in instance.jobs], dtype=np.int64),
        np.array([j.min_replicas for j in instance.jobs], dtype=np.int64),
    )


@settings(max_examples=60)
@given(tiny_rounds(max_jobs=5, max_nodes=3), st.data())
def test_repair_loop_is_repair(instance: RoundInstance, data: st.DataObject) -> None:
    states = data.draw(any_states(instance, count=12))
    seed = data.draw(st.integers(0, 2**31 - 1))
    ref = np.random.default_rng(seed)
    want = _repair(instance, states, ref)
    k = kernels()
    mine = np.random.default_rng(seed)
    state = k.load_state(mine)
    got = states.copy()
    k.repair(got, state, *_bounds(instance), _limits(instance))
    k.store_state(mine, state)
    assert np.array_equal(got, want)
    assert _same_state(mine, ref)


@settings(max_examples=60)
@given(tiny_rounds(max_jobs=5, max_nodes=3), st.data())
def test_mutation_loop_is_mutation(instance: RoundInstance, data: st.DataObject) -> None:
    # mutation runs on repaired (feasible) children; draw those
    states = _repair(instance, data.draw(any_states(instance, count=12)),
                     np.random.default_rng(0))  # fmt: skip
    seed = data.draw(st.integers(0, 2**31 - 1))
    ref = np.random.default_rng(seed)
    want = _mutate(instance, states, ref)
    k = kernels()
    mine = np.random.default_rng(seed)
    state = k.load_state(mine)
    got = states.copy()
    k.mutate(got, state, np.ascontiguousarray(instance.previous), instance.gpus_per_node)
    k.store_state(mine, state)
    assert np.array_equal(got, want)
    assert _same_state(mine, ref)


def _check_same_search(instance: RoundInstance, seed: int, **kw: int) -> None:
    runs = []
    for compiled in (True, False):
        rng = np.random.default_rng(seed)
        runs.append((search(instance, rng=rng, compiled=compiled, **kw), rng))
    (a, ra), (b, rb) = runs
    assert np.array_equal(a.state, b.state) and a.fitness == b.fitness
    assert np.array_equal(a.front, b.front) and np.array_equal(a.values, b.values)
    assert a.evaluations == b.evaluations
    assert _same_state(ra, rb)


@settings(max_examples=40)
@given(tiny_rounds(max_jobs=5, max_nodes=3), st.integers(0, 2**31 - 1))
def test_compiled_search_is_the_numpy_search(instance: RoundInstance, seed: int) -> None:
    _check_same_search(instance, seed, **SMALL)


@settings(max_examples=8)
@given(st.integers(1, 12), st.integers(17, 20), st.integers(0, 2**31 - 1))
def test_compiled_search_on_wide_rounds(jobs: int, nodes: int, seed: int) -> None:
    # more nodes than a job may span (max_job_nodes = 16): the repair's shuffle decides
    instance = generate_instance(jobs, num_nodes=nodes, gpus_per_node=2, seed=seed)
    _check_same_search(instance, seed, pop_size=16, generations=6, max_matings=5)


@settings(max_examples=10)
@given(st.integers(1, 2), st.integers(0, 2**31 - 1))
def test_compiled_search_on_tied_rounds_carried(jobs: int, seed: int) -> None:
    # one or two jobs on six nodes: many states tie at the best M, fronts of copies are cut,
    # and each search starts from the last one's front (the tie rules' whole path)
    instance = generate_instance(jobs, num_nodes=6, seed=seed)
    fronts: list[np.ndarray | None] = [None, None]
    rngs = [np.random.default_rng(seed), np.random.default_rng(seed)]
    for _ in range(3):
        got = [search(instance, fronts[i], rng=rngs[i], compiled=c, pop_size=30, generations=12)
               for i, c in enumerate((True, False))]  # fmt: skip
        a, b = got
        assert np.array_equal(a.state, b.state) and np.array_equal(a.front, b.front)
        assert np.array_equal(a.values, b.values) and a.evaluations == b.evaluations
        assert _same_state(rngs[0], rngs[1])
        fronts = [a.front, b.front]


def _workload() -> tuple[PolluxWorkload, dict[str, object]]:
    types = {name: read_model_traces(DATA / "traces" / name) for name in ("bert", "cifar10")}
    full = read_workload(DATA / "workload-6.csv")
    return PolluxWorkload(tuple(j for j in full.jobs if j.application in types)), types


class _Recorder(PolluxPolicy):
    """Records every decision (allocation, front and objectives)."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.decisions: list[tuple[dict[str, Allocation], bytes, bytes]] = []

    def allocate(self, jobs, cluster, previous):  # type: ignore[no-untyped-def]
        out = super().allocate(jobs, cluster, previous)
        assert self.last_search is not None
        self.decisions.append(
            (out, self.last_search.front.tobytes(), self.last_search.values.tobytes())
        )
        return out


@settings(max_examples=6)
@given(st.integers(2, 8), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_policy_decides_the_same_round_after_round(jobs: int, nodes: int, seed: int) -> None:
    workload, types = _workload()
    sampler = RoundSampler(types, num_nodes=nodes, gpus_per_node=4)  # type: ignore[arg-type]
    views, cluster = sampler.round(workload, jobs, seed=seed)
    runs = []
    for compiled in (True, False):
        policy = _Recorder(seed=seed, compiled=compiled, **SMALL)
        replay_rounds(policy, views, cluster, 3)
        runs.append(policy)
    assert runs[0].decisions == runs[1].decisions
    assert _same_state(runs[0].rng, runs[1].rng)


@settings(max_examples=5)
@given(st.integers(2, 8), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_batched_speedup_table_is_the_one_at_a_time_table(jobs: int, nodes: int, seed: int) -> None:
    from optsched.goodput.round_model import build_round, configurations, fitness

    workload, types = _workload()
    sampler = RoundSampler(types, num_nodes=nodes, gpus_per_node=4)  # type: ignore[arg-type]
    views, cluster = sampler.round(workload, jobs, seed=seed)
    views, cluster, prev = replay_rounds(PolluxPolicy(seed=seed, **SMALL), views, cluster, 1)
    batched = build_round(views, cluster, prev)
    single = build_round(views, cluster, prev)
    for job in single.jobs:
        job.source = _OneAtATime(job.source)  # type: ignore[arg-type]
    states = np.stack([batched.previous, np.zeros_like(batched.previous)])
    assert fitness(batched, states).tolist() == fitness(single, states).tolist()
    for j, job in enumerate(batched.jobs):
        if not job.fill(configurations(batched, j)):
            continue  # a job without a model: speedup N, nothing to batch
        for (k, n), value in job.speedup.items():
            assert single.jobs[j].value(k, n) == value


class _OneAtATime:
    """A speedup source without ``many``: every entry computed alone."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __call__(self, num_nodes: int, num_replicas: int) -> float:
        return float(self.inner(num_nodes, num_replicas))  # type: ignore[operator]
