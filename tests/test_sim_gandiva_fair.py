"""Gandiva-Fair: stride rounds and trades computed by hand, validity and ticket convergence."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import job_frame, synthetic_throughputs, user_worlds

from optsched.errors import InvalidInstanceError
from optsched.sim import ClusterSpec, GpuType, SimState, World, simulate, validate
from optsched.sim.engine.policy import JobState
from optsched.sim.measure.record import SimResult
from optsched.sim.policies import POLICIES, GandivaFair, make_policy
from optsched.sim.policies.gandiva_fair import fair_shares, trade_shares
from optsched.sim.world.throughputs import throughputs_from_dict
from optsched.tolerances import RATIO_TOL, TIME_TOL, within

ROUND = 10.0
LONG = 1e6  # seconds of work: every job is still running at the end of the window


def _run(world: World, policy: GandivaFair, window: float) -> SimResult:
    """Simulate past ``window`` (half a round more) and check the record."""
    result = simulate(world, policy, max_time=window + ROUND / 2)
    report = validate(world, result)
    assert report.ok, report
    return result


def _gpu_seconds(world: World, result: SimResult, window: float) -> dict[str, float]:
    """GPU-seconds each user received in ``[0, window]``, from the interval table."""
    out: dict[str, float] = defaultdict(float)
    iv = result.intervals
    for job, gpus, start, end in zip(iv["job_id"], iv["gpus"], iv["start"], iv["end"], strict=True):
        out[world.job(job).user] += gpus * max(0.0, min(end, window) - start)
    return dict(out)


def _steps(world: World, result: SimResult, window: float) -> dict[str, float]:
    """Steps each user's jobs made in ``[0, window]`` (no restore cost in these worlds)."""
    out: dict[str, float] = defaultdict(float)
    iv = result.intervals
    for job, gpu_type, start, end in zip(
        iv["job_id"], iv["gpu_type"], iv["start"], iv["end"], strict=True
    ):
        j = world.job(job)
        out[j.user] += world.rate(j, gpu_type) * max(0.0, min(end, window) - start)
    return dict(out)


def _one_type(count: int, per: int, rows: list[dict]) -> World:
    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=count, gpus_per_server=per),))
    return World.from_frame(job_frame(rows), cluster)


def test_a_round_computed_by_hand() -> None:
    """Three GPUs, equal tickets; user a has four 1-GPU jobs, user b two: shares 1.5 each.

    Stride with passes in units of the round Δ, each grant adding 1/1.5: round 1 picks
    a (0 -> 2/3), b (0 -> 2/3), a (2/3 -> 4/3; ties go to a); round 2 picks b (2/3 -> 4/3),
    a (4/3 -> 2), b (4/3 -> 2). Passes are then equal again: every two rounds each user gets
    exactly 3 GPU-rounds, half of the 6, and a's four jobs take turns (least served first).
    """
    rows = [{"user": "a", "duration": LONG} for _ in range(4)]
    rows += [{"user": "b", "duration": LONG} for _ in range(2)]
    world = _one_type(3, 3, rows)
    for k in (1, 2, 5):
        window = 2 * k * ROUND
        got = _gpu_seconds(world, _run(world, GandivaFair(round_seconds=ROUND), window), window)
        assert within(got["a"], 3 * k * ROUND, TIME_TOL)
        assert within(got["b"], 3 * k * ROUND, TIME_TOL)
    # round 1 by hand: a's first two jobs and b's first job
    first = _run(world, GandivaFair(round_seconds=ROUND), 0.0)
    assert sorted(first.intervals["job_id"]) == ["j0", "j1", "j4"]
    # over 8 rounds a's 12 GPU-rounds are spread evenly over its four jobs
    result = _run(world, GandivaFair(round_seconds=ROUND), 8 * ROUND)
    per_job: dict[str, float] = defaultdict(float)
    iv = result.intervals
    for job, start, end in zip(iv["job_id"], iv["start"], iv["end"], strict=True):
        per_job[job] += max(0.0, min(end, 8 * ROUND) - start)
    assert all(within(per_job[f"j{k}"], 3 * ROUND, TIME_TOL) for k in range(4))


def test_tickets_weight_the_shares() -> None:
    """Tickets 2:1 on two GPUs, both users backlogged: a gets 4/3 GPUs, b 2/3, every 3 rounds."""
    rows = [{"user": "a", "duration": LONG} for _ in range(2)]
    rows += [{"user": "b", "duration": LONG} for _ in range(2)]
    world = _one_type(2, 2, rows)
    policy = GandivaFair(round_seconds=ROUND, tickets={"a": 2.0})
    window = 3 * 4 * ROUND
    got = _gpu_seconds(world, _run(world, policy, window), window)
    assert within(got["a"], 4 * 4 * ROUND, TIME_TOL)
    assert within(got["b"], 2 * 4 * ROUND, TIME_TOL)


def test_a_gang_counts_its_gpus() -> None:
    """Four GPUs on one server: a has one 4-GPU job, b four 1-GPU jobs; shares 2 GPUs each.

    Round 1: a's gang (pass 0 -> 4/2 = 2, in rounds), b cannot fit. Round 2: b's four jobs
    (0 -> 1/2 -> ... -> 2), a's gang cannot fit. The passes are equal again, so the users
    alternate and each receives exactly half of the GPU-time over every even window although a
    runs only every other round.
    """
    rows = [{"user": "a", "num_gpus": 4, "duration": LONG}]
    rows += [{"user": "b", "duration": LONG} for _ in range(4)]
    world = _one_type(4, 4, rows)
    for k in (1, 3):
        window = 2 * k * ROUND
        got = _gpu_seconds(world, _run(world, GandivaFair(round_seconds=ROUND), window), window)
        assert within(got["a"], 4 * k * ROUND, TIME_TOL)
        assert within(got["b"], 4 * k * ROUND, TIME_TOL)


def test_small_jobs_fill_what_a_gang_leaves() -> None:
    """Gang awareness: a's 4-GPU gang cannot use the 2 GPUs b leaves, so they are not reserved
    for it; b runs its two jobs whenever a's gang does not run, and the GPU-time stays equal:
    4 GPU-rounds each over 3 rounds (a once, b twice), with 2 GPU-rounds idle."""
    rows = [{"user": "a", "num_gpus": 4, "duration": LONG}]
    rows += [{"user": "b", "duration": LONG} for _ in range(2)]
    world = _one_type(4, 4, rows)
    window = 3 * 3 * ROUND
    got = _gpu_seconds(world, _run(world, GandivaFair(round_seconds=ROUND), window), window)
    assert within(got["a"], 4 * 3 * ROUND, TIME_TOL)
    assert within(got["b"], 4 * 3 * ROUND, TIME_TOL)


# ------------------------------------------------------------------------------------------------
# trading


def _trade_world() -> World:
    """Two users on fast=2, slow=2: model X runs 4 (fast) vs 1 (slow), model Y 2 vs 1."""
    rates = {"X": {"fast": 4.0, "slow": 1.0}, "Y": {"fast": 2.0, "slow": 1.0}}
    table = {
        gpu: {f"('{m}', 1)": {"null": r[gpu]} for m, r in rates.items()} for gpu in ("fast", "slow")
    }
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="fast", count=2, gpus_per_server=2),
            GpuType(name="slow", count=2, gpus_per_server=2),
        )
    )
    rows = [{"user": "a", "model": "X", "total_steps": 1e9} for _ in range(4)]
    rows += [{"user": "b", "model": "Y", "total_steps": 1e9} for _ in range(4)]
    table_rates = throughputs_from_dict(table, reference="fast")
    return World.from_frame(job_frame(rows), cluster, table_rates)


def test_a_trade_computed_by_hand() -> None:
    """Equal tickets, demand 4 each on 4 GPUs: 1 fast + 1 slow each before trading.

    Speedups fast/slow: a 4, b 2. a buys fast from b at the midpoint price p = 3 slow per fast:
    x = min(b's fast 1, a's slow 1/3, b's room (4 - 2)/(3 - 1) = 1) = 1/3. After: a holds 4/3
    fast and no slow, b 2/3 fast and 2 slow. In per-GPU units normalized to the fast type
    (a: 1 and 1/4, b: 1 and 1/2) a goes from 1.25 to 4/3 and b from 1.5 to 5/3.
    """
    world = _trade_world()
    state = SimState(
        now=0.0,
        world=world,
        active=tuple(JobState(job=j) for j in world.jobs),
        round_index=0,
        round_seconds=ROUND,
    )
    e = GandivaFair(round_seconds=ROUND).shares(state)
    assert within(e["a"]["fast"], 4 / 3, RATIO_TOL) and within(e["a"]["slow"], 0.0, RATIO_TOL)
    assert within(e["b"]["fast"], 2 / 3, RATIO_TOL) and within(e["b"]["slow"], 2.0, RATIO_TOL)
    plain = GandivaFair(round_seconds=ROUND, trading=False).shares(state)
    assert all(within(plain[u][g], 1.0, RATIO_TOL) for u in "ab" for g in ("fast", "slow"))

    per_gpu = {"a": {"fast": 1.0, "slow": 0.25}, "b": {"fast": 1.0, "slow": 0.5}}
    after, trades = trade_shares(plain, per_gpu, {"a": 4.0, "b": 4.0})
    (t,) = trades
    assert (t.buyer, t.seller, t.fast, t.slow) == ("a", "b", "fast", "slow")
    assert within(t.price, 3.0, RATIO_TOL) and within(t.amount, 1 / 3, RATIO_TOL)
    speed = {u: per_gpu[u]["fast"] / per_gpu[u]["slow"] for u in per_gpu}
    assert speed[t.seller] < t.price < speed[t.buyer]  # the price rule: both gain
    for u in "ab":
        before = sum(plain[u][g] * per_gpu[u][g] for g in per_gpu[u])
        now = sum(after[u][g] * per_gpu[u][g] for g in per_gpu[u])
        assert now >= before
    assert within(sum(after["a"][g] * per_gpu["a"][g] for g in per_gpu["a"]), 4 / 3, RATIO_TOL)
    assert within(sum(after["b"][g] * per_gpu["b"][g] for g in per_gpu["b"]), 5 / 3, RATIO_TOL)


def test_trading_raises_both_users_throughput_in_simulation() -> None:
    """The stride scheduler enforces the traded shares: every 3 rounds a runs 4 fast
    GPU-rounds (16 steps per second of round) and b 2 fast + 6 slow (10), against 15 and 9
    with one fast and one slow GPU each without trading."""
    world = _trade_world()
    k = 4
    window = 3 * k * ROUND
    traded = _steps(world, _run(world, GandivaFair(round_seconds=ROUND), window), window)
    plain = _steps(
        world, _run(world, GandivaFair(round_seconds=ROUND, trading=False), window), window
    )
    assert within(traded["a"], 16 * k * ROUND, TIME_TOL)
    assert within(traded["b"], 10 * k * ROUND, TIME_TOL)
    assert within(plain["a"], 15 * k * ROUND, TIME_TOL)
    assert within(plain["b"], 9 * k * ROUND, TIME_TOL)


@given(
    st.lists(
        st.tuples(st.integers(1, 8), st.integers(1, 8), st.integers(1, 6)), min_size=2, max_size=4
    ),
    st.floats(0.0, 1.0),
)
def test_no_trade_lowers_a_users_throughput(users, lam) -> None:
    """Random rates and shares: every user's sum of share x per-GPU rate never drops, each trade
    is priced between the two speedups, and no user ends above its demand or below zero."""
    names = [f"u{k}" for k in range(len(users))]
    per_gpu = {
        n: {"fast": float(f), "slow": float(s)} for n, (f, s, _) in zip(names, users, strict=True)
    }
    demand = {n: float(d) + 1.0 for n, (_, _, d) in zip(names, users, strict=True)}
    shares = {n: {"fast": 0.5, "slow": 0.5} for n in names}
    after, trades = trade_shares(shares, per_gpu, demand, price_point=lam)
    for n in names:
        before = sum(shares[n][g] * per_gpu[n][g] for g in ("fast", "slow"))
        now = sum(after[n][g] * per_gpu[n][g] for g in ("fast", "slow"))
        assert now >= before * (1 - RATIO_TOL)
        assert all(v >= 0 for v in after[n].values())
        assert sum(after[n].values()) <= max(demand[n], 1.0) * (1 + RATIO_TOL)
    for t in trades:
        s_b = per_gpu[t.buyer][t.fast] / per_gpu[t.buyer][t.slow]
        s_s = per_gpu[t.seller][t.fast] / per_gpu[t.seller][t.slow]
        assert s_s * (1 - RATIO_TOL) <= t.price <= s_b * (1 + RATIO_TOL)
        assert within(t.price, s_s + lam * (s_b - s_s), RATIO_TOL)


def test_a_lone_job_stays_on_the_idle_fast_gpu() -> None:
    """One user, one job, a fast and a slow GPU: its shares are half of each, but nobody else
    wants the fast GPU, so the job runs there the whole time (no bouncing to the slow type
    where its pass is lower)."""
    world = _trade_world()
    world = World(world.cluster, world.throughputs, world.jobs[:1])
    result = _run(world, GandivaFair(round_seconds=ROUND), 6 * ROUND)
    assert set(result.intervals["gpu_type"]) == {"fast"}
    assert len(result.intervals["job_id"]) == 1  # one uninterrupted interval


def test_water_filling_redistributes_unused_share() -> None:
    """The paper's example: 8 GPUs, three users, c asks for 2: c gets 2, a and b 3 each."""
    f = fair_shares({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 8.0, "b": 8.0, "c": 2.0}, 8.0)
    assert f == {"a": 3.0, "b": 3.0, "c": 2.0}


# ------------------------------------------------------------------------------------------------
# properties


@given(user_worlds(), st.booleans(), st.booleans())
@settings(max_examples=60)
def test_random_worlds_validate_and_finish(case, trading, migration) -> None:
    world, tickets = case
    policy = GandivaFair(round_seconds=5.0, tickets=tickets, trading=trading, migration=migration)
    result = simulate(world, policy)
    report = validate(world, result)
    assert report.ok, report
    assert result.all_finished


@given(
    st.integers(1, 8),
    st.sampled_from([1, 2, 4]),
    st.lists(st.integers(1, 3), min_size=2, max_size=3),
    st.integers(20, 60),
)
@settings(max_examples=40)
def test_backlogged_users_converge_to_ticket_shares(count, per, tickets, rounds) -> None:
    r"""Users with ``count`` 1-GPU jobs each (backlogged) over ``K`` rounds.

    Stride keeps every client's pass within one stride :math:`\Delta / E_{\min}` of the lowest
    and a user's GPU-time is :math:`E_u` times its pass, so its share of the GPU-time differs
    from :math:`t_u / \sum t` by at most :math:`1 / (E_{\min} K)`.
    """
    users = [f"u{k}" for k in range(len(tickets))]
    rows = [{"user": u, "duration": LONG} for u in users for _ in range(count)]
    world = _one_type(count, per, rows)
    weights = dict(zip(users, map(float, tickets), strict=True))
    policy = GandivaFair(round_seconds=ROUND, tickets=weights)
    window = rounds * ROUND
    got = _gpu_seconds(world, _run(world, policy, window), window)
    total = sum(got.values())
    assert within(total, count * rounds * ROUND, TIME_TOL)  # work conserving
    share = {u: count * t / sum(tickets) for u, t in zip(users, tickets, strict=True)}
    bound = 1.0 / (min(share.values()) * rounds)
    for u, t in zip(users, tickets, strict=True):
        assert abs(got.get(u, 0.0) / total - t / sum(tickets)) <= bound + RATIO_TOL


@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.lists(st.integers(1, 3), min_size=2, max_size=3),
    st.integers(20, 60),
)
@settings(max_examples=40)
def test_backlogged_users_converge_on_two_types_without_trading(
    fast, slow, tickets, rounds
) -> None:
    r"""Two types, trading off: user :math:`u` holds :math:`E_{ug} = F_u C_g / C` of each.

    On each type the stride bound holds per client, :math:`|G_{ug} - E_{ug} K\Delta| \le
    E_{ug}\,\Delta / E_{\min}`, and summing over the types with :math:`E_{ug} \le C_g` bounds
    the deviation of the user's share of all GPU-time by :math:`1 / (E_{\min} K)` again.
    Every user has more 1-GPU jobs than the cluster has GPUs (backlogged on every type).
    """
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="fast", count=fast, gpus_per_server=2),
            GpuType(name="slow", count=slow, gpus_per_server=2),
        )
    )
    users = [f"u{k}" for k in range(len(tickets))]
    total_gpus = fast + slow
    rows = [
        {"user": u, "model": "A", "duration": LONG} for u in users for _ in range(total_gpus + 2)
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs())
    weights = dict(zip(users, map(float, tickets), strict=True))
    policy = GandivaFair(round_seconds=ROUND, tickets=weights, trading=False)
    window = rounds * ROUND
    got = _gpu_seconds(world, _run(world, policy, window), window)
    total = sum(got.values())
    assert within(total, total_gpus * window, TIME_TOL)
    e_min = min(c * t / sum(tickets) for t in tickets for c in (fast, slow))
    bound = 1.0 / (e_min * rounds)
    for u, t in zip(users, tickets, strict=True):
        assert abs(got.get(u, 0.0) / total - t / sum(tickets)) <= bound + RATIO_TOL


# ------------------------------------------------------------------------------------------------
# interface


def test_registered() -> None:
    assert "gandiva-fair" in POLICIES
    policy = make_policy("gandiva-fair")
    assert isinstance(policy, GandivaFair) and policy.name == "gandiva-fair"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"round_seconds": 0.0}, "round_seconds"),
        ({"round_seconds": math.inf}, "round_seconds"),
        ({"default_tickets": -1.0}, "default_tickets"),
        ({"tickets": {"a": 0.0}}, "tickets['a']"),
        ({"price_point": 1.5}, "price_point"),
    ],
)
def test_bad_parameters_are_named(kwargs, field) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        GandivaFair(**kwargs)
    assert info.value.field == field
