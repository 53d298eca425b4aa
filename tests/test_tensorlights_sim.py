"""TensorLights NIC simulator: closed forms, invariants, kernel vs reference, validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.tensorlights import TIME_ATOL, TIME_RTOL, close, instances, job, make, policies

from optsched.comm.tensorlights import (
    POLICIES,
    TensorLightsInstance,
    generate_instance,
    kernel,
    simulate,
    validate,
)
from optsched.comm.tensorlights.simulator import layout
from optsched.errors import InvalidInstanceError

#: Relative tolerance on NIC rates against capacity in the trace invariants.
RATE_RTOL = 1e-9


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------


@given(
    m=st.floats(0.1, 10),
    n=st.integers(1, 6),
    bw=st.floats(0.5, 4),
    c=st.floats(0, 3),
    iters=st.integers(1, 5),
    policy=policies,
    jitter=st.sampled_from([0.0, 0.5]),
)
def test_one_job_alone_takes_mn_over_bw(m, n, bw, c, iters, policy, jitter):
    inst = make([bw], [job(m, n, c, iters)])
    res = simulate(inst, policy, jitter=jitter, rotation_period=0.7)
    tau = m * n / bw
    expected = (c + tau) * np.arange(1, iters + 1)
    assert close(res.iteration_end[0], expected)
    assert close(res.jct[0], iters * (c + tau))
    assert close(res.mean_comm_time[0], tau)
    # Alone, the NIC is busy exactly during the broadcasts.
    assert close(res.nic_busy_fraction[0], tau / (c + tau))
    assert close(res.nic_utilization[0], tau / (c + tau))


@given(
    k=st.integers(1, 5),
    m=st.floats(0.1, 5),
    n=st.integers(1, 4),
    bw=st.floats(0.5, 4),
    c=st.floats(0, 3),
    iters=st.integers(1, 4),
)
def test_identical_jobs_fair_all_finish_at_k_mn_over_bw(k, m, n, bw, c, iters):
    inst = make([bw], [job(m, n, c, iters) for _ in range(k)])
    res = simulate(inst, "fair")
    tau = m * n / bw
    expected = (c + k * tau) * np.arange(1, iters + 1)
    for j in range(k):
        assert close(res.iteration_end[j], expected)
    assert np.all(res.straggler_spread_max == 0.0)


@given(
    order=st.integers(1, 5).flatmap(lambda k: st.permutations(range(k))),
    m=st.floats(0.1, 5),
    n=st.integers(1, 4),
    bw=st.floats(0.5, 4),
    extra=st.floats(0, 2),
    iters=st.integers(1, 4),
)
def test_identical_jobs_priority_kth_finishes_at_k_mn_over_bw(order, m, n, bw, extra, iters):
    """With c >= (K-1) tau the jobs stay staggered by tau: C_k(i) = i (c + tau) + (k-1) tau."""
    k = len(order)
    tau = m * n / bw
    c = (k - 1) * tau + extra
    inst = make([bw], [job(m, n, c, iters) for _ in range(k)])
    res = simulate(inst, "priority", order=order)
    for pos, j in enumerate(order):
        expected = np.arange(1, iters + 1) * (c + tau) + pos * tau
        assert close(res.iteration_end[j], expected)
        # The first broadcast of the pos-th job finishes at c + (pos + 1) tau.
        assert close(res.iteration_end[j, 0], c + (pos + 1) * tau)


@given(
    sizes=st.lists(st.integers(1, 8), min_size=1, max_size=5),
    workers=st.lists(st.integers(1, 3), min_size=5, max_size=5),
    bw=st.sampled_from([1.0, 2.0, 3.0]),
)
def test_fair_one_shot_is_processor_sharing(sizes, workers, bw):
    """One broadcast each, all at t=0: per-flow PS gives the k-th smallest flow
    C_(k) = (sum_{l<k} s_(l) + (F - k + 1) s_(k)) / B."""
    jobs = [job(float(s), workers[j], 0.0, 1) for j, s in enumerate(sizes)]
    res = simulate(make([bw], jobs), "fair")
    flows = sorted((float(s), j) for j, s in enumerate(sizes) for _ in range(workers[j]))
    n_flows = len(flows)
    finish: dict[int, float] = {}
    before = 0.0
    for k, (s, j) in enumerate(flows):
        finish[j] = (before + (n_flows - k) * s) / bw
        before += s
    for j in range(len(sizes)):
        assert close(res.completion[j], finish[j])


def preemptive_priority_one_machine(release, work, order):
    """Independent check: fill a single machine's timeline job by job in priority order.

    ``taken`` is the sorted union of disjoint intervals used by more urgent jobs; a job runs in
    the free time from its release on, so afterwards everything in [release, finish] is taken.
    """
    taken: list[tuple[float, float]] = []
    done = {}
    for j in order:
        t, left = release[j], work[j]
        for a, b in taken:
            if b <= t:
                continue
            if a > t:
                if a - t >= left:
                    break
                left -= a - t
            t = b
        done[j] = t + left
        pieces = sorted([*taken, (release[j], done[j])])
        taken = []
        for a, b in pieces:
            if taken and a <= taken[-1][1]:
                taken[-1] = (taken[-1][0], max(taken[-1][1], b))
            else:
                taken.append((a, b))
    return done


@given(
    data=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), min_size=1, max_size=5),
    order_seed=st.integers(0, 10_000),
)
def test_priority_one_shot_with_release_times_matches_interval_filling(data, order_seed):
    """One iteration each, compute time = release date: strict priority is preemptive-priority
    scheduling on one machine, computed here by filling idle intervals in priority order."""
    jobs = [job(float(w), 1, float(r), 1) for r, w in data]
    order = list(np.random.default_rng(order_seed).permutation(len(jobs)))
    res = simulate(make([1.0], jobs), "priority", order=order)
    expected = preemptive_priority_one_machine(
        [float(r) for r, _ in data], [float(w) for _, w in data], order
    )
    for j in range(len(jobs)):
        assert close(res.completion[j], expected[j])


@given(
    tau=st.integers(1, 4),
    iters=st.integers(1, 5),
    period=st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]),
)
def test_rotation_of_two_saturating_jobs(tau, iters, period):
    """Two identical jobs with c = 0 always want the NIC: rotation hands it over every period.

    With W = I tau the work of each, q = floor(W / period) and r = W - q period, the first job
    finishes at 2 q period + r (or 2 q period - period when r = 0) and the second at 2 W.
    """
    inst = make([1.0], [job(float(tau), 1, 0.0, iters) for _ in range(2)])
    res = simulate(inst, "rotate", rotation_period=period)
    work = iters * tau
    q, r = divmod(work, period)
    first = 2 * q * period + r if r > 1e-12 else 2 * q * period - period
    assert close(res.completion[0], first)
    assert close(res.completion[1], 2 * work)
    green = simulate(inst, "one-green", rotation_period=period)
    assert close(green.iteration_end, res.iteration_end)


@given(
    order=st.integers(2, 5).flatmap(lambda k: st.permutations(range(k))),
    q=st.integers(1, 4),
    period=st.sampled_from([0.5, 1.0, 2.0]),
    policy=st.sampled_from(["rotate", "one-green"]),
)
def test_rotation_is_round_robin_in_global_order(order, q, period, policy):
    """K saturating jobs (c = 0), each needing q periods of NIC time: the green light visits
    the jobs in the global order, so the job at position p finishes at (q - 1) K D + (p + 1) D."""
    k = len(order)
    inst = make([1.0], [job(q * period, 1, 0.0, 1) for _ in range(k)])
    res = simulate(inst, policy, order=order, rotation_period=period)
    for pos, j in enumerate(order):
        assert close(res.completion[j], (q - 1) * k * period + (pos + 1) * period)


@given(inst=instances(), order_seed=st.integers(0, 1000))
def test_rotation_slower_than_the_run_is_static_priority(inst, order_seed):
    order = list(np.random.default_rng(order_seed).permutation(inst.n_jobs))
    prio = simulate(inst, "priority", order=order)
    rot = simulate(inst, "rotate", order=order, rotation_period=10 * prio.makespan + 1)
    assert close(rot.iteration_end, prio.iteration_end)


@given(inst=instances(max_hosts=1, max_shards=1))
def test_one_green_with_two_jobs_is_rotate(inst):
    if inst.n_jobs > 2:
        inst = TensorLightsInstance.from_dict(
            {**inst.to_dict(), "jobs": inst.to_dict()["jobs"][:2]}
        )
    a = simulate(inst, "rotate", rotation_period=1.3)
    b = simulate(inst, "one-green", rotation_period=1.3)
    assert close(a.iteration_end, b.iteration_end)


@given(inst=instances(), perm_seed=st.integers(0, 1000))
def test_fair_sharing_does_not_depend_on_job_order(inst, perm_seed):
    perm = np.random.default_rng(perm_seed).permutation(inst.n_jobs)
    data = inst.to_dict()
    shuffled = TensorLightsInstance.from_dict({**data, "jobs": [data["jobs"][j] for j in perm]})
    a = simulate(inst, "fair")
    b = simulate(shuffled, "fair")
    assert close(a.completion[perm], b.completion)


def test_jitter_spreads_workers_of_a_lone_job():
    """Weighted sharing of one broadcast: the heaviest flow finishes first, at s W / (B w_max);
    the last at n s / B (work conservation). The weights are those simulate() draws."""
    n, m, bw, seed, jitter = 6, 3.0, 2.0, 11, 0.4
    inst = make([bw], [job(m, n, 0.0, 1)])
    res = simulate(inst, "fair", jitter=jitter, seed=seed)
    w = np.random.default_rng(seed).uniform(1 - jitter, 1 + jitter, size=(1, n))[0]
    first = m * w.sum() / (bw * w.max())
    last = n * m / bw
    assert close(res.flow_finish[0].min(), first)
    assert close(res.flow_finish[0].max(), last)
    assert close(res.straggler_spread_mean[0], last - first)
    assert close(res.worker_wait_mean[0], np.mean(last - res.flow_finish[0]))


def test_shards_on_two_hosts_straggle_when_hosts_disagree():
    """Two jobs, each with a shard on both hosts. Coordinated priority finishes the urgent job's
    shards together; hosts with opposite orders make both jobs wait for their slow shard."""
    inst = make([1.0, 1.0], [job(2.0, 1, 0.0, 1, hosts=(0, 1)) for _ in range(2)])
    together = simulate(inst, "priority", order=[0, 1])
    assert close(together.completion, [1.0, 2.0])
    assert close(together.straggler_spread_max, [0.0, 0.0])
    # Opposite orders: every job has one shard first (done at 1) and one second (done at 2).
    lay = layout(inst)
    out = kernel.simulate_kernel(
        lay.bandwidth, lay.compute, lay.start, lay.iterations, lay.job_flow_start,
        lay.flow_host, lay.flow_bytes, np.ones((1, len(lay.flow_bytes))),
        np.array([[0, 1], [1, 0]]), kernel.MODE_PRIORITY, 1.0, 2, 0, 100,
    )  # fmt: skip
    assert out[10]
    assert close(out[0][:, 0], [2.0, 2.0])


# ---------------------------------------------------------------------------------------------
# Invariants on the recorded trace
# ---------------------------------------------------------------------------------------------


@given(
    inst=instances(),
    policy=policies,
    jitter=st.sampled_from([0.0, 0.3]),
    coordinated=st.booleans(),
    engine=st.sampled_from(["numba", "python"]),
)
def test_nic_never_over_capacity_and_work_conserving(inst, policy, jitter, coordinated, engine):
    res = simulate(
        inst, policy, jitter=jitter, coordinated=coordinated, trace=True, engine=engine, seed=3
    )
    tr = res.trace
    assert tr is not None
    assert validate(inst, res).ok
    dt = np.diff(tr.times)
    assert np.all(dt >= 0)
    cap = tr.bandwidth[None, :]
    assert np.all(tr.used <= cap * (1 + RATE_RTOL))
    # Work conserving: a host with an unfinished flow sends at full rate; an idle one sends 0.
    assert np.all(np.where(tr.active, tr.used >= cap * (1 - RATE_RTOL), tr.used == 0.0))
    # Every byte of every broadcast is sent, on the right host.
    sent = (tr.used * dt[:, None]).sum(axis=0)
    owed = np.zeros(inst.n_hosts)
    for j in inst.jobs:
        for h in j.ps_hosts:
            owed[h] += j.iterations * j.workers * j.message_bytes / len(j.ps_hosts)
    assert np.allclose(sent, owed, rtol=1e-9)
    assert np.allclose(res.nic_utilization * tr.bandwidth * res.makespan, owed, rtol=1e-9)
    # Iterations are ordered and each job's broadcast starts after its compute phase.
    for j, spec in enumerate(inst.jobs):
        ends = res.iteration_end[j, : spec.iterations]
        starts = res.comm_start[j, : spec.iterations]
        previous = np.concatenate([[spec.start_s], ends[:-1]])
        assert np.allclose(starts, previous + spec.compute_time_s, rtol=TIME_RTOL, atol=TIME_ATOL)
        assert np.all(ends >= starts + res.alone_iteration_time[j] - spec.compute_time_s - 1e-9)


# ---------------------------------------------------------------------------------------------
# Kernel vs plain-Python reference
# ---------------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(
    inst=instances(max_jobs=5),
    policy=policies,
    jitter=st.sampled_from([0.0, 0.25]),
    coordinated=st.booleans(),
    period=st.sampled_from([None, 0.5, 1.0, 2.5]),
    seed=st.integers(0, 100),
)
def test_kernel_agrees_with_reference(inst, policy, jitter, coordinated, period, seed):
    kwargs = dict(jitter=jitter, coordinated=coordinated, rotation_period=period, seed=seed)
    a = simulate(inst, policy, engine="numba", **kwargs)
    b = simulate(inst, policy, engine="python", **kwargs)
    assert close(a.iteration_end, b.iteration_end)
    assert close(a.comm_start, b.comm_start)
    assert close(a.flow_finish, b.flow_finish)
    assert np.allclose(a.nic_utilization, b.nic_utilization, rtol=1e-9)
    assert np.allclose(a.nic_busy_fraction, b.nic_busy_fraction, rtol=1e-9)
    assert a.n_events == b.n_events
    assert close(a.trace.times, b.trace.times)
    assert np.allclose(a.trace.job_rate, b.trace.job_rate, rtol=1e-9)
    assert np.array_equal(a.trace.active, b.trace.active)


@settings(max_examples=30)
@given(
    inst=instances(max_jobs=3),
    gap=st.sampled_from([1e3, 1e5]),
    policy=st.sampled_from(["rotate", "one-green"]),
    period=st.sampled_from([0.01, 0.7]),
)
def test_kernel_agrees_with_reference_across_long_idle_gaps(inst, gap, policy, period):
    """The last job starts long after the others: both engines jump the idle periods."""
    data = inst.to_dict()
    data["jobs"][-1]["start_s"] = gap
    late = TensorLightsInstance.from_dict(data)
    a = simulate(late, policy, rotation_period=period)
    b = simulate(late, policy, rotation_period=period, engine="python")
    assert close(a.iteration_end, b.iteration_end)
    assert close(a.flow_finish, b.flow_finish)
    assert a.n_events == b.n_events


def test_kernel_agrees_with_reference_on_a_generated_instance():
    inst = generate_instance(3, 5, max_shards=2, seed=4)
    for policy in POLICIES:
        a = simulate(inst, policy, jitter=0.2, seed=1)
        b = simulate(inst, policy, jitter=0.2, seed=1, engine="python")
        assert close(a.iteration_end, b.iteration_end)
        assert close(a.flow_finish, b.flow_finish)


# ---------------------------------------------------------------------------------------------
# Results, files and validation
# ---------------------------------------------------------------------------------------------


def test_summary_is_json_ready_and_consistent():
    inst = generate_instance(2, 4, seed=2, max_shards=2)
    res = simulate(inst, "rotate", jitter=0.1, seed=5)
    data = json.loads(json.dumps(res.to_dict()))
    assert data["policy"] == "rotate"
    assert len(data["jobs"]) == 4 and len(data["hosts"]) == 2
    assert data["mean_jct"] == pytest.approx(float(np.mean([r["jct"] for r in data["jobs"]])))
    for row, spec in zip(data["jobs"], inst.jobs, strict=True):
        assert row["mean_iteration_time"] == pytest.approx(row["jct"] / spec.iterations)
        assert row["slowdown"] >= 1 - 1e-9  # contention never speeds a job up
    assert res.objective("makespan") == pytest.approx(res.makespan)
    assert 0 <= res.nic_utilization.max() <= 1 + 1e-9


def test_reported_order():
    inst = generate_instance(2, 3, seed=1)
    assert simulate(inst, "fair", order=[2, 1, 0]).order is None
    assert simulate(inst, "priority", order=[2, 1, 0]).order == (2, 1, 0)
    assert simulate(inst, "priority", coordinated=False).order is None
    assert simulate(inst, "rotate", coordinated=False).order == (0, 1, 2)


def test_default_rotation_period_is_median_standalone_iteration():
    inst = generate_instance(1, 3, seed=1)
    res = simulate(inst, "rotate")
    assert res.rotation_period == pytest.approx(float(np.median(inst.alone_iteration_time())))


def test_generator_is_seeded_and_valid(tmp_path):
    a = generate_instance(3, 6, max_shards=3, seed=9)
    b = generate_instance(3, 6, max_shards=3, seed=9)
    assert a == b
    assert a != generate_instance(3, 6, max_shards=3, seed=10)
    for path in (tmp_path / "i.json", tmp_path / "i.toml"):
        a.save(path)
        assert TensorLightsInstance.load(path) == a


def test_schema_describes_the_file_format():
    schema = TensorLightsInstance.schema()
    assert set(schema["properties"]) >= {"hosts", "jobs", "kind"}
    import jsonschema  # in the test extra: its absence is a failure, not a skip

    jsonschema.validate(generate_instance(2, 3, seed=0).to_dict(), schema)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["jobs"][1].update(ps_hosts=[5]), "jobs[1].ps_hosts[0]"),
        (lambda d: d["jobs"][0].update(ps_hosts=[0, 0]), "jobs.0.ps_hosts"),
        (lambda d: d["jobs"][0].update(workers=0), "jobs.0.workers"),
        (lambda d: d["jobs"][0].update(message_bytes=-1.0), "jobs.0.message_bytes"),
        (
            lambda d: d["hosts"][0].update(bandwidth_bytes_per_s=0.0),
            "hosts.0.bandwidth_bytes_per_s",
        ),
        (lambda d: d.update(jobs=[]), "jobs"),
        (lambda d: d["jobs"][0].update(colour="red"), "jobs.0.colour"),
    ],
)
def test_invalid_instances_name_the_field(mutate, field):
    data = make([1.0, 1.0], [job(1.0, 1, 0.0, 1), job(1.0, 1, 0.0, 1, hosts=(1,))]).to_dict()
    mutate(data)
    with pytest.raises(InvalidInstanceError) as err:
        TensorLightsInstance.from_dict(data)
    assert err.value.field.replace("[", ".").replace("]", "") == field.replace("[", ".").replace(
        "]", ""
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"policy": "green"}, "policy"),
        ({"policy": "priority", "order": [0, 0]}, "order"),
        ({"policy": "priority", "order": [0, 1], "coordinated": False}, "order"),
        ({"policy": "rotate", "rotation_period": 0.0}, "rotation_period"),
        ({"policy": "fair", "jitter": 1.0}, "jitter"),
        ({"policy": "fair", "engine": "fortran"}, "engine"),
    ],
)
def test_invalid_simulation_options(kwargs, field):
    inst = make([1.0], [job(1.0, 1, 0.0, 1), job(1.0, 1, 0.0, 1)])
    policy = kwargs.pop("policy")
    with pytest.raises(InvalidInstanceError) as err:
        simulate(inst, policy, **kwargs)
    assert err.value.field == field


def test_missing_file_is_invalid_input(tmp_path):
    with pytest.raises(InvalidInstanceError) as err:
        TensorLightsInstance.load(tmp_path / "nope.json")
    assert err.value.field == "<file>"
