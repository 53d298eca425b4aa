r"""The fluid model: an exact event-driven simulation of PS broadcasts sharing host NICs.

Job :math:`j` has :math:`n_j` workers, a model update of :math:`m_j` bytes per worker per
iteration split evenly over its PS shards :math:`S_j` (one per host in ``ps_hosts``), a compute
phase of :math:`c_j` seconds, :math:`I_j` iterations and a start time :math:`s_j`. Each
iteration is the compute phase, then the broadcast: shard :math:`h \in S_j` sends one flow of
:math:`m_j/|S_j|` bytes to each worker through host :math:`h`'s NIC of capacity :math:`B_h`.
The iteration ends when the last flow of the job finishes; synchronous training then starts the
next compute phase. Between events every rate is constant, so the simulation is exact. The
policies (TensorLights' mechanism [Huang2019]_ and its baselines):

* **fair** -- every active flow on a host gets an equal share (processor sharing);
* **priority** -- the active flows of the most urgent job on a host get the whole NIC;
* **rotate** -- as priority, with the order rotated cyclically every :math:`\Delta` seconds
  (job :math:`j` at position :math:`\pi_j` of the global order has level
  :math:`(\pi_j - \lfloor t/\Delta \rfloor) \bmod J`), the same on every host;
* **one-green** -- the job at rotated level 0 is urgent, all others share fairly.

Work conservation holds in every policy: a host with an unfinished flow sends at full rate.
Optional ``jitter`` draws each flow's share weight per iteration from
:math:`U[1 - \text{jitter}, 1 + \text{jitter}]` (TCP's unequal shares), which is what makes
workers of one job receive their update at different times.

Before running, :func:`simulate` bounds the number of events (:func:`event_bound`) and the
arrays it allocates, and refuses, naming the field, what exceeds :mod:`optsched.limits`.

References
----------
.. [Huang2019] X. S. Huang, A. Chen, T. S. E. Ng. "Green, Yellow, Yield: End-Host Traffic
   Scheduling for Distributed Deep Learning with TensorLights." IEEE IPDPS Workshops, 2019.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

import optsched.comm.tensorlights.kernel as _k
from optsched import limits
from optsched.comm.tensorlights.instance import MAX_TIME_RANGE, MIN_DURATION, TensorLightsInstance
from optsched.comm.tensorlights.reference import simulate_reference
from optsched.comm.tensorlights.solution import NicTrace, SimulationResult
from optsched.errors import InvalidInstanceError

__all__ = ["POLICIES", "Engine", "Policy", "event_bound", "simulate"]

Policy = Literal["fair", "priority", "rotate", "one-green"]
Engine = Literal["numba", "python"]

#: The NIC-sharing policies of :func:`simulate`.
POLICIES: tuple[str, ...] = ("fair", "priority", "rotate", "one-green")

_MODES = {
    "fair": _k.MODE_FAIR,
    "priority": _k.MODE_PRIORITY,
    "rotate": _k.MODE_ROTATE,
    "one-green": _k.MODE_ONE_GREEN,
}


@dataclass(frozen=True)
class Layout:
    """The instance as the kernel's arrays (flows of job ``j`` contiguous)."""

    job_flow_start: np.ndarray
    flow_host: np.ndarray
    flow_bytes: np.ndarray
    flow_worker: np.ndarray
    bandwidth: np.ndarray
    compute: np.ndarray
    start: np.ndarray
    iterations: np.ndarray


def layout(instance: TensorLightsInstance) -> Layout:
    """Flows of job ``j``, shard by shard then worker by worker, are contiguous."""
    limits.check_size("jobs", float(instance.n_flows()), "max_array_cells", "flows")
    starts = [0]
    hosts: list[int] = []
    sizes: list[float] = []
    worker: list[int] = []
    for job in instance.jobs:
        share = job.message_bytes / len(job.ps_hosts)
        for h in job.ps_hosts:
            hosts += [h] * job.workers
            sizes += [share] * job.workers
            worker += list(range(job.workers))
        starts.append(len(hosts))
    return Layout(
        job_flow_start=np.array(starts, dtype=np.int64),
        flow_host=np.array(hosts, dtype=np.int64),
        flow_bytes=np.array(sizes, dtype=np.float64),
        flow_worker=np.array(worker, dtype=np.int64),
        bandwidth=np.array([h.bandwidth_bytes_per_s for h in instance.hosts], dtype=np.float64),
        compute=np.array([j.compute_time_s for j in instance.jobs], dtype=np.float64),
        start=np.array([j.start_s for j in instance.jobs], dtype=np.float64),
        iterations=np.array([j.iterations for j in instance.jobs], dtype=np.int64),
    )


def check_order(order: Sequence[int], n_jobs: int) -> tuple[int, ...]:
    """``order`` as a tuple, or an error naming ``order`` if it is not a permutation."""
    try:
        out = tuple(int(j) for j in order)
    except (TypeError, ValueError):
        raise InvalidInstanceError("order", f"must be job indices, got {order!r}") from None
    if sorted(out) != list(range(n_jobs)):
        raise InvalidInstanceError(
            "order", f"must be a permutation of 0..{n_jobs - 1}, got {list(out)}"
        )
    return out


def levels(
    n_hosts: int, order: tuple[int, ...], policy: str, coordinated: bool, seed: int
) -> np.ndarray:
    """Base priority level of every job on every host (0 = most urgent)."""
    n_jobs = len(order)
    rank = np.empty(n_jobs, dtype=np.int64)
    rank[list(order)] = np.arange(n_jobs)
    if policy == "fair":
        return np.zeros((n_hosts, n_jobs), dtype=np.int64)
    if coordinated:
        return np.tile(rank, (n_hosts, 1))
    rng = np.random.default_rng(seed)
    if policy == "priority":
        # Each host ranks its jobs on its own: an independent random order per host.
        return np.array(
            [np.argsort(rng.permutation(n_jobs)) for _ in range(n_hosts)], dtype=np.int64
        )
    # Rotation without coordination: every host runs the same cycle at its own random phase.
    offsets = rng.integers(0, n_jobs, size=n_hosts)
    return ((rank[None, :] + offsets[:, None]) % n_jobs).astype(np.int64)


def event_bound(instance: TensorLightsInstance, period: float | None = None) -> int:
    r"""An upper bound on the events of one simulation (``period`` for the rotations).

    .. math::

        E \le 2 + \sum_j I_j (1 + F_j)
              + [\text{rotating}] \Bigl(\sum_j I_j + \bigl\lceil \sum_h W_h / (B_h \Delta)
              \bigr\rceil\Bigr)

    with :math:`F_j = |S_j| n_j` flows per broadcast and :math:`W_h` the bytes host :math:`h`
    sends in total. Proof: every event of the simulation ends at a compute end (after which a
    broadcast starts: at most :math:`\sum_j I_j`), at a flow completion (at most
    :math:`\sum_j I_j F_j`) or at a rotation boundary :math:`k\Delta` crossed while some flow
    is unfinished; the rotation index then advances past it, so each boundary counts once.
    While a flow is unfinished its host sends at full rate, so the time with an unfinished flow
    has measure at most :math:`L = \sum_h W_h / B_h`; it is a union of at most
    :math:`\sum_j I_j` intervals (each begins with a broadcast), which together contain at most
    :math:`L/\Delta + \sum_j I_j` multiples of :math:`\Delta`. Idle time between broadcasts is
    jumped over in one event, whatever its length.
    """
    n_iter = sum(job.iterations for job in instance.jobs)
    flow_iter = sum(job.iterations * job.workers * len(job.ps_hosts) for job in instance.jobs)
    bound = 2.0 + n_iter + flow_iter
    if period is not None:
        busy = math.fsum(
            w / host.bandwidth_bytes_per_s
            for w, host in zip(instance.host_bytes(), instance.hosts, strict=True)
        )
        bound += n_iter + math.ceil(busy / period)
    return int(bound) if bound < 2.0**62 else 2**62


def check_period(instance: TensorLightsInstance, period: float) -> None:
    """Refuse a rotation period that is not finite and positive, or too short for the horizon.

    Raises
    ------
    InvalidInstanceError
        ``rotation_period`` is not finite and at least
        :data:`~optsched.comm.tensorlights.instance.MIN_DURATION`, the horizon bound spans more than
        :data:`~optsched.comm.tensorlights.instance.MAX_TIME_RANGE` periods (the rotation index
        would lose its exactness), or the events it implies exceed the ``max_events`` budget.
    """
    if not (math.isfinite(period) and period > 0):
        raise InvalidInstanceError("rotation_period", f"must be finite and > 0, got {period}")
    if period < MIN_DURATION:
        raise InvalidInstanceError(
            "rotation_period",
            f"must be >= {MIN_DURATION:g} s (the clock's resolution), got {period}",
        )
    horizon = instance.horizon_bound()
    if horizon > MAX_TIME_RANGE * period:
        raise InvalidInstanceError(
            "rotation_period",
            f"{period:.6g} s is shorter than 1/{MAX_TIME_RANGE:g} of the horizon bound "
            f"{horizon:.6g} s; use a longer period",
        )
    limits.check_size("rotation_period", event_bound(instance, period), "max_events", "events")


def simulate(
    instance: TensorLightsInstance,
    policy: Policy = "fair",
    *,
    order: Sequence[int] | None = None,
    rotation_period: float | None = None,
    coordinated: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = True,
    engine: Engine = "numba",
) -> SimulationResult:
    r"""Simulate every job to completion under one NIC-sharing policy.

    Parameters
    ----------
    instance : TensorLightsInstance
    policy : {"fair", "priority", "rotate", "one-green"}, default "fair"
        See the module docstring.
    order : sequence of int, optional
        The global job order, most urgent first (default ``0, 1, ..., J-1``, i.e. job-ID order).
        The static order of ``"priority"`` and the starting order of the rotations; ignored by
        ``"fair"``.
    rotation_period : float, optional
        :math:`\Delta > 0` in seconds for ``"rotate"`` and ``"one-green"``; default the median
        standalone iteration time :math:`c_j + \tau_j` of the jobs.
    coordinated : bool, default True
        When False, hosts do not agree: under ``"priority"`` every host draws its own random
        order, under the rotations every host starts the cycle at its own random phase (both
        from ``seed``). Ignored by ``"fair"``.
    jitter : float in [0, 1), default 0
        Per-iteration flow weights are drawn from :math:`U[1 - \text{jitter}, 1 + \text{jitter}]`
        (seeded); flows of one priority level share the NIC in proportion to them.
    seed : int >= 0, default 0
    trace : bool, default True
        Record the per-host and per-job NIC rates of every segment (:class:`NicTrace`), which
        :func:`~optsched.comm.tensorlights.validate` checks.
    engine : {"numba", "python"}, default "numba"
        The compiled kernel or the plain-Python reference (same results; tests compare them).

    Returns
    -------
    SimulationResult

    Raises
    ------
    InvalidInstanceError
        Unknown policy, an order that is not a permutation, a bad period, jitter or seed, or an
        event count or array size over the :mod:`optsched.limits` budget.

    Notes
    -----
    Complexity: :math:`O(E (F + J + H))` for :math:`E \le` :func:`event_bound` events and
    :math:`F = \sum_j |S_j| n_j` flows. Memory :math:`O(F \max_j I_j)` (every flow's finishing
    time and weight in every iteration), plus :math:`O(E J H)` for the trace.
    """
    if policy not in _MODES:
        raise InvalidInstanceError("policy", f"unknown policy {policy!r}; known: {POLICIES}")
    if engine not in ("numba", "python"):
        raise InvalidInstanceError("engine", f"must be 'numba' or 'python', got {engine!r}")
    if not (isinstance(jitter, (int, float)) and 0.0 <= jitter < 1.0):
        raise InvalidInstanceError("jitter", f"must be in [0, 1), got {jitter}")
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise InvalidInstanceError("seed", f"must be an integer >= 0, got {seed!r}")
    n_jobs = instance.n_jobs
    glob = check_order(order, n_jobs) if order is not None else tuple(range(n_jobs))
    if policy == "priority" and not coordinated and order is not None:
        raise InvalidInstanceError(
            "order", "an uncoordinated priority policy draws a random order per host; omit order"
        )
    rotating = policy in ("rotate", "one-green")
    period: float | None = None
    if rotating:
        period = (
            float(np.median(instance.alone_iteration_time()))
            if rotation_period is None
            else float(rotation_period)
        )
        check_period(instance, period)
    max_events = event_bound(instance, period)
    limits.check_size("jobs", max_events, "max_events", "events")
    max_it = max(job.iterations for job in instance.jobs)
    n_flows = instance.n_flows()
    cells = float(max_it) * (2 * n_flows + 2 * n_jobs)
    limits.check_size("jobs", cells, "max_array_cells")
    lay = layout(instance)
    lev = levels(instance.n_hosts, glob, policy, coordinated, seed)
    # The order the result reports: none for fair sharing or per-host random orders.
    fair_or_random = policy == "fair" or (policy == "priority" and not coordinated)
    reported = None if fair_or_random else glob
    if jitter > 0:
        rng = np.random.default_rng(seed)
        weights = rng.uniform(1.0 - jitter, 1.0 + jitter, size=(max_it, n_flows))
    else:
        weights = np.ones((max_it, n_flows))
    args = (
        lay.bandwidth, lay.compute, lay.start, lay.iterations, lay.job_flow_start,
        lay.flow_host, lay.flow_bytes, weights, lev, _MODES[policy],
        period if period is not None else 1.0, n_jobs,
    )  # fmt: skip
    per_segment = n_jobs * instance.n_hosts + 2 * instance.n_hosts + 1
    names = instance.job_names(), instance.host_names()
    nic_trace: NicTrace | None = None
    if engine == "numba":
        cap = min(4 * (n_flows + n_jobs) * max_it + 64, max_events) if trace else 0
        limits.check_size("jobs", float(cap) * per_segment, "max_array_cells", "trace cells")
        out = _k.simulate_kernel(*args, cap, max_events)
        if trace and out[5] > cap:
            limits.check_size("jobs", float(out[5]) * per_segment, "max_array_cells")
            out = _k.simulate_kernel(*args, int(out[5]), max_events)
        iter_end, comm_start, flow_finish, busy_bytes, busy_time, n_seg = out[:6]
        completed = bool(out[10])
        if trace:
            nic_trace = NicTrace(
                times=out[6][: n_seg + 1].copy(),
                used=out[7][:n_seg].copy(),
                active=out[8][:n_seg].astype(bool),
                bandwidth=lay.bandwidth.copy(),
                job_rate=out[9][:n_seg].copy(),
                job_names=names[0],
                host_names=names[1],
            )
    else:
        ref = simulate_reference(*args, max_events)
        completed = ref.completed
        iter_end = np.full((n_jobs, max_it), np.nan)
        comm_start = np.full((n_jobs, max_it), np.nan)
        flow_finish = np.full((max_it, n_flows), np.nan)
        for (j, i), v in ref.iter_end.items():
            iter_end[j, i] = v
        for (j, i), v in ref.comm_start.items():
            comm_start[j, i] = v
        for (i, f), v in ref.flow_finish.items():
            flow_finish[i, f] = v
        busy_bytes = np.array(ref.busy_bytes)
        busy_time = np.array(ref.busy_time)
        n_seg = len(ref.segments)
        if trace:
            limits.check_size("jobs", float(n_seg) * per_segment, "max_array_cells")
            segs = ref.segments
            rates = np.zeros((n_seg, n_jobs, instance.n_hosts))
            for k, per_job in enumerate(ref.job_rates):
                for (j, h), r in per_job.items():
                    rates[k, j, h] = r
            nic_trace = NicTrace(
                times=np.array([s[0] for s in segs] + [segs[-1][1] if segs else 0.0]),
                used=np.array([s[2] for s in segs], dtype=np.float64).reshape(n_seg, -1),
                active=np.array([s[3] for s in segs], dtype=np.bool_).reshape(n_seg, -1),
                bandwidth=lay.bandwidth.copy(),
                job_rate=rates,
                job_names=names[0],
                host_names=names[1],
            )
    if not completed:
        # Unreachable by event_bound's proof; never return a partial run as a result.
        raise RuntimeError(
            f"the simulation did not finish within its proven bound of {max_events} events"
        )
    return _summarise(
        instance, lay, policy, reported, period, coordinated, jitter,
        iter_end, comm_start, flow_finish, busy_bytes, busy_time, int(n_seg), nic_trace,
    )  # fmt: skip


def _summarise(
    instance: TensorLightsInstance,
    lay: Layout,
    policy: str,
    order: tuple[int, ...] | None,
    period: float | None,
    coordinated: bool,
    jitter: float,
    iter_end: np.ndarray,
    comm_start: np.ndarray,
    flow_finish: np.ndarray,
    busy_bytes: np.ndarray,
    busy_time: np.ndarray,
    n_events: int,
    nic_trace: NicTrace | None,
) -> SimulationResult:
    n_jobs = instance.n_jobs
    completion = np.array([iter_end[j, lay.iterations[j] - 1] for j in range(n_jobs)])
    jct = completion - lay.start
    mean_it = jct / lay.iterations
    it_std = np.zeros(n_jobs)
    comm = np.zeros(n_jobs)
    spread_mean = np.zeros(n_jobs)
    spread_max = np.zeros(n_jobs)
    wait_mean = np.zeros(n_jobs)
    for j, job in enumerate(instance.jobs):
        k = job.iterations
        ends = iter_end[j, :k]
        durations = np.diff(np.concatenate([[job.start_s], ends]))
        it_std[j] = float(durations.std())
        comm[j] = float(np.mean(ends - comm_start[j, :k]))
        flows = slice(lay.job_flow_start[j], lay.job_flow_start[j + 1])
        # Worker w holds the update when its last shard's flow has finished.
        arrival = flow_finish[:k, flows].reshape(k, len(job.ps_hosts), job.workers).max(axis=1)
        spread = arrival.max(axis=1) - arrival.min(axis=1)
        spread_mean[j] = float(spread.mean())
        spread_max[j] = float(spread.max())
        wait_mean[j] = float(np.mean(arrival.max(axis=1, keepdims=True) - arrival))
    makespan = float(completion.max())
    horizon = makespan if makespan > 0 else 1.0
    return SimulationResult(
        policy=policy,
        order=order,
        rotation_period=period,
        coordinated=coordinated,
        jitter=float(jitter),
        job_names=instance.job_names(),
        host_names=instance.host_names(),
        completion=completion,
        jct=jct,
        weights=np.array([job.weight for job in instance.jobs]),
        mean_iteration_time=mean_it,
        iteration_time_std=it_std,
        alone_iteration_time=instance.alone_iteration_time(),
        mean_comm_time=comm,
        straggler_spread_mean=spread_mean,
        straggler_spread_max=spread_max,
        worker_wait_mean=wait_mean,
        nic_utilization=busy_bytes / (lay.bandwidth * horizon),
        nic_busy_fraction=busy_time / horizon,
        iteration_end=iter_end,
        comm_start=comm_start,
        flow_finish=flow_finish,
        n_events=n_events,
        trace=nic_trace,
    )
