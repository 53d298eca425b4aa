"""Pollux's goodput model (optsched.goodput): each formula against a value computed another way."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.goodput import (
    BatchLimits,
    GoodputModel,
    GradientStats,
    StepMeasurements,
    ThroughputParams,
    best_batch,
    efficiency,
    fit_throughput,
    gain,
    iteration_time,
    noise_scale,
    split_batch,
    throughput,
)
from optsched.goodput.fit import LOWER, fit_bounds, objective
from optsched.tolerances import FIT_RECOVERY_TOL, UTILITY_TOL, within

P = ThroughputParams(0.02, 0.001, 0.12, 0.002, 0.03, 0.001, 2.0)

#: Central differences of a smooth loss at step h have error O(h^2 * f'''), about 1e-6 relative
#: here for h = 1e-6 relative; the loss itself is O(1).
FD_TOL = 1e-5


def test_iteration_time_by_hand() -> None:
    # one GPU: no all-reduce, the pass alone
    assert within(float(iteration_time(P, 1, 1, 64)), 0.02 + 0.064, UTILITY_TOL)
    # 4 GPUs on one node, s = 2: 2 passes + the overlapped last pass and all-reduce (gamma 2)
    grad, sync = 0.02 + 0.064, 0.03 + 0.001 * 2
    want = 2 * grad + math.hypot(grad, sync)
    assert within(float(iteration_time(P, 1, 4, 64, 2)), want, UTILITY_TOL)
    # 8 GPUs on 2 nodes: the link across nodes bounds the ring
    sync = 0.12 + 0.002 * 6
    assert within(float(iteration_time(P, 2, 8, 64)), math.hypot(grad, sync), UTILITY_TOL)
    assert within(float(throughput(P, 2, 8, 64)), 8 * 64 / math.hypot(grad, sync), UTILITY_TOL)


def test_gamma_interpolates_sum_and_max() -> None:
    add = ThroughputParams(0.02, 0.001, 0.12, 0.0, 0.03, 0.0, 1.0)
    assert within(float(iteration_time(add, 2, 2, 10)), 0.03 + 0.12, UTILITY_TOL)
    near_max = ThroughputParams(0.02, 0.001, 0.12, 0.0, 0.03, 0.0, 10.0)
    t = float(iteration_time(near_max, 2, 2, 10))
    assert 0.12 < t < 0.12 * 1.0001


def test_throughput_broadcasts_and_refuses_bad_shapes() -> None:
    out = throughput(P, np.array([1, 1, 2]), np.array([1, 4, 8]), 32)
    each = [float(throughput(P, n, k, 32)) for n, k in ((1, 1), (1, 4), (2, 8))]
    assert np.allclose(out, each, rtol=UTILITY_TOL, atol=0)
    with pytest.raises(InvalidInstanceError, match="num_replicas"):
        throughput(P, 2, 1, 32)
    with pytest.raises(InvalidInstanceError, match="gamma"):
        ThroughputParams(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5)
    with pytest.raises(InvalidInstanceError, match="beta_n"):
        ThroughputParams.from_dict({**P.to_dict(), "beta_n": -1.0})
    assert ThroughputParams.from_dict(P.to_dict()) == P


def _planted_data(params: ThroughputParams, noise: float = 0.0) -> StepMeasurements:
    """Step times generated from ``params``, times a seeded log-normal measurement noise."""
    rows = [(n, k, m) for n, k in ((1, 1), (1, 2), (1, 4), (2, 4), (2, 8), (4, 16))
            for m in (16, 32, 64, 128)]  # fmt: skip
    n, k, m = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    step = iteration_time(params, n, k, m)
    compute = params.alpha_c + params.beta_c * m
    factor = np.exp(np.random.default_rng(0).normal(0.0, noise, (2, len(m))))
    return StepMeasurements.of(n, k, m, compute * factor[0], step * factor[1])


def test_objective_gradient_matches_central_differences() -> None:
    data = _planted_data(P)
    theta = np.array([0.03, 0.002, 0.1, 0.003, 0.02, 0.002, 1.7])
    _, grad = objective(theta, data)
    for i in range(7):
        h = 1e-6 * theta[i]
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        fd = (objective(up, data)[0] - objective(down, data)[0]) / (2 * h)
        assert abs(grad[i] - fd) <= FD_TOL * max(1.0, abs(fd)), (i, grad[i], fd)


def test_fit_reaches_the_planted_loss_and_predictions() -> None:
    # 2% measurement noise, as real profiles have: on noise-free data the compute RMS reaches 0,
    # where its square root has no derivative, and L-BFGS-B (the artifact's too) stalls there
    data = _planted_data(P, noise=0.02)
    fitted = fit_throughput(data)
    planted_loss = objective(P.vector(), data)[0]
    # the fit minimizes L: it ends no worse than the planted point
    assert objective(fitted.vector(), data)[0] <= planted_loss + FIT_RECOVERY_TOL
    truth = iteration_time(P, data.num_nodes, data.num_replicas, data.atomic_bsz)
    pred = iteration_time(fitted, data.num_nodes, data.num_replicas, data.atomic_bsz)
    # predictions within 3 noise standard deviations of the noise-free truth
    assert float(np.max(np.abs(np.log(pred / truth)))) < 0.06


def test_fit_pins_what_the_data_cannot_identify() -> None:
    one_gpu = StepMeasurements.of([1, 1], [1, 1], [32, 32], [0.1, 0.12], [0.1, 0.12])
    _, lower, upper = fit_bounds(one_gpu)
    assert lower[0] == upper[0] == pytest.approx(0.055)
    for i in (2, 3, 4, 5):
        assert lower[i] == upper[i] == LOWER
    fitted = fit_throughput(one_gpu)
    assert fitted.alpha_c == pytest.approx(0.055)
    # no multi-node data: the network prior alpha_n >= 1.1 alpha_r holds
    assert fitted.alpha_n >= 1.1 * fitted.alpha_r


def test_efficiency_identities() -> None:
    stats = GradientStats(sqr=2.0, var=6.0)
    m0 = 128.0
    phi = noise_scale(stats, m0)
    assert phi == pytest.approx(384.0)
    for m in (128.0, 256.0, 1000.0, 4096.0):
        e = float(efficiency(stats, m0, m))
        assert within(e, (phi + m0) / (phi + m), UTILITY_TOL)
        assert within(float(gain(stats, m0, m)), e * m / m0, UTILITY_TOL)
    assert float(efficiency(stats, m0, m0)) == pytest.approx(1.0)
    assert float(efficiency(GradientStats(0.0, 0.0), m0, 4096)) == pytest.approx(m0 / 4096)
    assert float(gain(GradientStats(0.0, 0.0), m0, 4096)) == 1.0
    with pytest.raises(InvalidInstanceError, match="var"):
        GradientStats(1.0, -1.0)


@given(
    sqr=st.floats(1e-6, 1e6),
    var=st.floats(0.0, 1e6),
    a=st.floats(1.0, 100.0),
    b=st.floats(1.0, 100.0),
)
def test_efficiency_decreases_and_gain_increases(
    sqr: float, var: float, a: float, b: float
) -> None:
    stats = GradientStats(sqr, var)
    lo, hi = sorted((a, b))
    assert float(efficiency(stats, 1.0, hi)) <= float(efficiency(stats, 1.0, lo)) * (1 + 1e-12)
    assert float(gain(stats, 1.0, hi)) >= float(gain(stats, 1.0, lo)) * (1 - 1e-12)
    assert 1.0 - 1e-12 <= float(gain(stats, 1.0, hi)) <= hi * (1 + 1e-12)


LIMITS = BatchLimits(init_batch_size=128, max_batch_size=4096, min_local_bsz=32, max_local_bsz=256)


def _grid_brute_force(model: GoodputModel, n: int, k: int) -> tuple[float, int, int]:
    """The documented search, written as a plain loop over the candidates."""
    low = max(LIMITS.init_batch_size, LIMITS.min_local_bsz * k)
    best = (-1.0, 0, 0)
    for i in range(50):
        batch = low * (LIMITS.max_batch_size / low) ** (i / 49)
        local = batch / k
        s = max(math.ceil(local / LIMITS.max_local_bsz - 1e-8) - 1, 0)
        if k == 1 and local > LIMITS.init_batch_size + 1e-8:
            s = max(s, 1)
        m = math.ceil(local / (s + 1) - 1e-8)
        ok = LIMITS.min_local_bsz <= m <= LIMITS.max_local_bsz
        value = float(model.goodput(n, k, m, s)) if ok else 0.0
        if value > best[0]:
            best = (value, m, s)
    return best


@pytest.mark.parametrize(("n", "k"), [(1, 1), (1, 2), (1, 4), (2, 8), (4, 16), (8, 32)])
@pytest.mark.parametrize("var", [0.5, 20.0, 500.0])
def test_best_batch_is_the_best_candidate(n: int, k: int, var: float) -> None:
    model = GoodputModel(P, GradientStats(1.0, var), LIMITS.init_batch_size)
    choice = best_batch(model, LIMITS, n, k)
    value, m, s = _grid_brute_force(model, n, k)
    assert (choice.atomic_bsz, choice.accum_steps) == (m, s)
    assert within(choice.goodput, value, UTILITY_TOL)
    assert choice.batch_size == k * m * (s + 1)
    assert LIMITS.min_local_bsz <= choice.atomic_bsz <= LIMITS.max_local_bsz
    # never better than the exhaustive optimum over every whole (m, s) within the limits
    exhaustive = max(
        float(model.goodput(n, k, mm, ss))
        for mm in range(32, 257)
        for ss in range(0, 17)
        if LIMITS.init_batch_size <= k * mm * (ss + 1) <= LIMITS.max_batch_size
    )
    assert choice.goodput <= exhaustive * (1 + UTILITY_TOL)


@given(
    st.lists(st.floats(0.5, 2.0), min_size=6, max_size=6),
    st.floats(1.0, 10.0),
    st.floats(0.0, 10.0),
    st.floats(0.0, 1000.0),
    st.lists(st.tuples(st.integers(1, 16), st.integers(0, 48)), min_size=1, max_size=30),
    st.booleans(),
    st.sampled_from([LIMITS, BatchLimits(64, 512, 16, 64), BatchLimits(32, 40, 8, 16)]),
)
def test_best_goodputs_are_best_batchs_goodputs(
    scales: list[float],
    gamma: float,
    sqr: float,
    var: float,
    pairs: list[tuple[int, int]],
    accumulation: bool,
    limits: BatchLimits,
) -> None:
    from optsched.goodput.batch import best_goodputs
    from optsched.goodput.speedup import SpeedupTable

    params = ThroughputParams(*(P.vector()[:6] * np.array(scales)), gamma)
    model = GoodputModel(params, GradientStats(sqr, var), limits.init_batch_size)
    pairs = [(n, n + extra) for n, extra in pairs]  # 1 <= nodes <= replicas
    got = best_goodputs(model, limits, [n for n, _ in pairs], [k for _, k in pairs],
                        accumulation=accumulation)  # fmt: skip
    want = [best_batch(model, limits, n, k, accumulation=accumulation).goodput for n, k in pairs]
    assert got.tolist() == want  # the same floats, not merely close
    if accumulation and want:
        table, alone = SpeedupTable(model, limits), SpeedupTable(model, limits)
        assert table.many(pairs) == [alone(n, k) for n, k in pairs]
        assert table.many([(0, 0)]) == [0.0]


def test_best_goodputs_refuse_bad_pairs() -> None:
    from optsched.goodput.batch import best_goodputs

    model = GoodputModel(P, GradientStats(1.0, 5.0), LIMITS.init_batch_size)
    with pytest.raises(InvalidInstanceError, match="num_nodes"):
        best_goodputs(model, LIMITS, [1, 3], [2, 2])
    with pytest.raises(InvalidInstanceError, match="num_replicas"):
        best_goodputs(model, LIMITS, [1, 2], [2])
    assert best_goodputs(model, LIMITS, [], []).size == 0


def test_noisier_gradients_choose_larger_batches() -> None:
    quiet = GoodputModel(P, GradientStats(1.0, 0.01), 128)
    noisy = GoodputModel(P, GradientStats(1.0, 1000.0), 128)
    assert best_batch(noisy, LIMITS, 1, 4).batch_size > best_batch(quiet, LIMITS, 1, 4).batch_size


def test_split_batch() -> None:
    assert split_batch(1024, 4, LIMITS) == (256, 0)
    assert split_batch(1025, 4, LIMITS) == (129, 1)
    assert split_batch(200, 1, LIMITS) == (100, 1)  # one GPU above M0 accumulates at least once
    assert split_batch(2048, 2, LIMITS, accumulation=False) == (1024, 0)
    with pytest.raises(InvalidInstanceError, match="max_batch_size"):
        BatchLimits(256, 128, 1, 2)


def test_advance_by_hand() -> None:
    """The piecewise-constant integration of :func:`advance`, against the rate times the time."""
    from pathlib import Path

    from optsched.goodput.job import JobState, advance, fixed_batch_split
    from optsched.goodput.progress import progress_at_epoch, progress_rate
    from optsched.goodput.traces import read_model_traces

    t = read_model_traces(Path(__file__).parent / "data" / "pollux" / "traces" / "bert")
    config = fixed_batch_split(t.limits(), 48, 4)
    rate = progress_rate(t, (4,), *config, 0)
    # 30 s of restart, then 100 s at the epoch-0 rate (well inside epoch 0)
    state, _ = advance(t, JobState(restart_left=30.0), (4,), config, 130.0)
    assert state.restart_left == 0.0 and state.epoch == 0
    assert within(state.progress, 100.0 * rate, UTILITY_TOL)
    # the epoch boundary is reached after a whole number of seconds, then the next rate applies
    end0 = progress_at_epoch(t, 1)
    need = round((end0 - state.progress) / rate)
    state2, _ = advance(t, state, (4,), config, need + 10.0)
    assert state2.epoch == 1
    rate1 = progress_rate(t, (4,), *config, 1)
    assert within(state2.progress, end0 + 10.0 * rate1, UTILITY_TOL)
    assert state2.time == state.time + need + 10.0
    with pytest.raises(InvalidInstanceError, match="seconds"):
        advance(t, state, (4,), config, -1.0)


def test_pollux_agent_profiles_fits_and_chooses() -> None:
    from optsched.goodput.agent import PolluxAgent

    agent = PolluxAgent(LIMITS)
    # no model yet: the smallest admissible batch, max(M0, K m_min) = 128 on 4 GPUs
    assert agent.choose("4") == (32, 0)
    assert agent.goodput_model() is None
    stats = GradientStats(1.0, 50.0)
    step = float(iteration_time(P, 1, 4, 32))
    agent.observe(1, 4, 32, step, step - float(P.alpha_c + P.beta_c * 32), stats)
    first = agent.params
    assert first is not None and list(agent.profile) == [(1, 4, 32)]
    # a configuration already profiled keeps its first measurement and its fit
    agent.observe(1, 4, 32, 2 * step, step / 2, GradientStats(1.0, 60.0))
    assert agent.params is first and agent.profile[(1, 4, 32)][0] == step
    assert agent.stats == GradientStats(1.0, 60.0)
    model = agent.goodput_model()
    assert model is not None
    want = best_batch(model, LIMITS, 2, 8)
    assert agent.choose("44") == (want.atomic_bsz, want.accum_steps)


def test_speedup_table() -> None:
    from optsched.goodput.speedup import SpeedupTable

    model = GoodputModel(P, GradientStats(1.0, 50.0), LIMITS.init_batch_size)
    table = SpeedupTable(model, LIMITS)
    assert table(0, 0) == 0.0
    assert within(table(1, 1), 1.0, UTILITY_TOL)
    for n, k in ((1, 4), (2, 8), (4, 16)):
        want = best_batch(model, LIMITS, n, k).goodput / best_batch(model, LIMITS, 1, 1).goodput
        assert within(table(n, k), want, UTILITY_TOL)
        assert table(n, k) == table(n, k)  # memoized
    # more GPUs on one node never slow this job down, but spanning nodes costs
    assert table(1, 4) > table(1, 2) > 1.0
    assert table(2, 4) < table(1, 4)


@pytest.mark.parametrize(
    ("nodes", "replicas", "field"),
    [([math.nan], [1], "num_nodes"), ([1], [1.5], "num_replicas"), ([2], [1], "num_replicas")],
)
def test_measurements_refuse_bad_counts(
    nodes: list[float], replicas: list[float], field: str
) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        StepMeasurements.of(nodes, replicas, [32], [0.1], [0.2])
    assert err.value.field == field
