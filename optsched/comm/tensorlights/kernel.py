r"""Event-driven fluid simulation of parameter-server broadcasts sharing host NICs.

One of two implementations of one algorithm, checked against each other by a property test:
:func:`simulate_kernel` here (Numba, arrays only) and
:func:`~optsched.comm.tensorlights.reference.simulate_reference` (plain Python, lists and
dictionaries,
written independently). Validation, budgets, defaults and documentation of the model live in
:mod:`optsched.comm.tensorlights.simulator`; these functions trust their arrays.

Model in one paragraph (see the module above for the full statement): job ``j`` repeats
``iterations[j]`` times a compute phase of ``compute[j]`` seconds followed by a communication
phase in which every flow ``f`` of the job (one per PS shard and worker) must send
``flow_bytes[f]`` bytes through its host's NIC. The iteration ends when the job's last flow
finishes. Between events every rate is constant: on each host, the active flows of the most
urgent priority level share the capacity in proportion to their weights and every other flow
gets nothing, so the simulation is exact (no time step).

Priority levels: ``mode`` 0 is fair sharing (one level); 1 is static priority (``level[h, j]``,
0 most urgent); 2 rotates the levels every ``period`` seconds, job ``j``'s level at rotation
index ``r`` being ``(level[h, j] - r) mod n_levels``; 3 is the one-green variant of 2, where the
job at rotated level 0 is urgent and every other job shares the second level.

Bounded loops. Every inner loop runs over jobs, flows or hosts. The event loop runs at most
``max_events`` times, a number the wrapper derives from the instance (each event starts a
broadcast, finishes a flow or crosses a rotation boundary while a flow is unfinished) and checks
against :data:`optsched.limits.Budget.max_events` before calling. The rotation index after a jump
over idle time is computed in closed form (:func:`rotation_index`), never period by period.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "EPS_BYTES_REL",
    "EPS_TIME_REL",
    "MODE_FAIR",
    "MODE_ONE_GREEN",
    "MODE_PRIORITY",
    "MODE_ROTATE",
    "rotation_index",
    "simulate_kernel",
]

MODE_FAIR = 0
MODE_PRIORITY = 1
MODE_ROTATE = 2
MODE_ONE_GREEN = 3

#: A flow whose remaining bytes fall below this fraction of its size has finished (absorbs the
#: rounding of ``remaining - rate * dt`` when several flows finish at the same instant).
EPS_BYTES_REL = 1e-9
#: Two event times closer than this (relative to the clock) are the same instant.
EPS_TIME_REL = 1e-12


@numba.njit(cache=True)
def _level_at(base: int, mode: int, rot: int, n_levels: int) -> int:
    if mode == 0:
        return 0
    if mode == 1:
        return base
    shifted = (base - rot) % n_levels
    if mode == 2:
        return shifted
    return 0 if shifted == 0 else 1


@numba.njit(cache=True)
def rotation_index(t: float, period: float, rot: int) -> int:
    r"""Rotation index at time ``t``: the largest :math:`r \ge` ``rot`` with :math:`r \Delta \le t`.

    "At or before ``t``" allows :data:`EPS_TIME_REL` of slack. Closed form
    :math:`\lfloor t / \Delta \rfloor`, then at most two corrections each way for the rounding
    of the division (its error is below one unit in the last place, so one would do), so the
    cost is :math:`O(1)` however many idle periods ``t`` jumps over. The caller guarantees
    :math:`t / \Delta \le 10^9`, so :math:`r` is exact in float64 and int64.
    """
    slack = t + EPS_TIME_REL * max(1.0, abs(t))
    r = math.floor(slack / period)
    for _ in range(2):
        if (r + 1) * period <= slack:
            r += 1
    for _ in range(2):
        if r > 0 and r * period > slack:
            r -= 1
    return max(r, rot)


@numba.njit(cache=True)
def simulate_kernel(
    bandwidth: np.ndarray,
    compute: np.ndarray,
    start: np.ndarray,
    iterations: np.ndarray,
    job_flow_start: np.ndarray,
    flow_host: np.ndarray,
    flow_bytes: np.ndarray,
    flow_weight: np.ndarray,
    level: np.ndarray,
    mode: int,
    period: float,
    n_levels: int,
    trace_capacity: int,
    max_events: int,
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    int,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    bool,
]:
    """Simulate to completion; see the module docstring for the model.

    Parameters
    ----------
    bandwidth : float64 (H,)
    compute, start : float64 (J,)
    iterations : int64 (J,)
    job_flow_start : int64 (J + 1,)
        Job ``j`` owns flows ``job_flow_start[j]:job_flow_start[j + 1]``.
    flow_host : int64 (F,)
    flow_bytes : float64 (F,)
    flow_weight : float64 (max iterations, F)
        Share weight of each flow in each iteration.
    level : int64 (H, J)
        Base priority level of each job on each host.
    mode : int
        0 fair, 1 static priority, 2 rotating, 3 rotating one-green.
    period : float
        Rotation period (modes 2 and 3).
    n_levels : int
        Modulus of the rotation (the number of jobs).
    trace_capacity : int
        Segments to record (0 for none).
    max_events : int
        Most events to simulate (the proven bound; the run stops there if it is reached).

    Returns
    -------
    iter_end, comm_start : float64 (J, max iterations)
    flow_finish : float64 (max iterations, F)
    busy_bytes, busy_time : float64 (H,)
    n_segments : int
        Segments simulated (the trace holds the first ``min(n_segments, trace_capacity)``).
    seg_time : float64 (trace_capacity + 1,)
        Segment boundaries.
    seg_used : float64 (trace_capacity, H)
        Total rate granted on each host in each segment.
    seg_active : float64 (trace_capacity, H)
        1 where the host had an unfinished flow in the segment, else 0.
    seg_rate : float64 (trace_capacity, J, H)
        Rate granted to each job's flows on each host in each segment.
    completed : bool
        Whether every job finished within ``max_events`` events.
    """
    n_jobs = compute.shape[0]
    n_hosts = bandwidth.shape[0]
    n_flows = flow_bytes.shape[0]
    max_it = flow_weight.shape[0]
    iter_end = np.full((n_jobs, max_it), np.nan)
    comm_start = np.full((n_jobs, max_it), np.nan)
    flow_finish = np.full((max_it, n_flows), np.nan)
    busy_bytes = np.zeros(n_hosts)
    busy_time = np.zeros(n_hosts)
    cap = max(trace_capacity, 0)
    seg_time = np.zeros(cap + 1)
    seg_used = np.zeros((cap, n_hosts))
    seg_active = np.zeros((cap, n_hosts))
    seg_rate = np.zeros((cap, n_jobs, n_hosts))

    flow_job = np.empty(n_flows, dtype=np.int64)
    for j in range(n_jobs):
        for f in range(job_flow_start[j], job_flow_start[j + 1]):
            flow_job[f] = j

    phase = np.zeros(n_jobs, dtype=np.int64)  # 0 compute, 1 communicate, 2 done
    it = np.zeros(n_jobs, dtype=np.int64)
    ready = start + compute
    left = np.zeros(n_jobs, dtype=np.int64)
    rem = np.zeros(n_flows)
    active = np.zeros(n_flows, dtype=np.bool_)
    rate = np.zeros(n_flows)
    flow_level = np.zeros(n_flows, dtype=np.int64)
    best = np.zeros(n_hosts, dtype=np.int64)
    wsum = np.zeros(n_hosts)
    used = np.zeros(n_hosts)
    host_active = np.zeros(n_hosts, dtype=np.bool_)
    rotating = mode == 2 or mode == 3

    t = 0.0
    rot = 0
    next_boundary = period if rotating else np.inf
    finished = 0
    n_seg = 0
    big = np.iinfo(np.int64).max
    while finished < n_jobs and n_seg < max_events:
        eps_t = EPS_TIME_REL * max(1.0, abs(t))
        # Compute phases that end now start their broadcast.
        for j in range(n_jobs):
            if phase[j] == 0 and ready[j] <= t + eps_t:
                phase[j] = 1
                comm_start[j, it[j]] = t
                left[j] = job_flow_start[j + 1] - job_flow_start[j]
                for f in range(job_flow_start[j], job_flow_start[j + 1]):
                    rem[f] = flow_bytes[f]
                    active[f] = True
        # Rates: the most urgent active level on each host shares the NIC by weight.
        for h in range(n_hosts):
            best[h] = big
            wsum[h] = 0.0
            used[h] = 0.0
            host_active[h] = False
        for f in range(n_flows):
            if active[f]:
                h = flow_host[f]
                lv = _level_at(level[h, flow_job[f]], mode, rot, n_levels)
                flow_level[f] = lv
                host_active[h] = True
                if lv < best[h]:
                    best[h] = lv
                    wsum[h] = 0.0
                if lv == best[h]:
                    wsum[h] += flow_weight[it[flow_job[f]], f]
        for f in range(n_flows):
            rate[f] = 0.0
            if active[f]:
                h = flow_host[f]
                if flow_level[f] == best[h]:
                    rate[f] = bandwidth[h] * flow_weight[it[flow_job[f]], f] / wsum[h]
                    used[h] += rate[f]
        # Next event: a compute phase ends, a flow finishes, or the rotation advances.
        dt = np.inf
        for j in range(n_jobs):
            if phase[j] == 0:
                dt = min(dt, ready[j] - t)
        any_active = False
        for f in range(n_flows):
            if active[f]:
                any_active = True
                if rate[f] > 0.0:
                    dt = min(dt, rem[f] / rate[f])
        boundary = False
        if rotating and any_active and next_boundary - t <= dt:
            dt = next_boundary - t
            boundary = True
        if dt == np.inf:
            break  # unreachable for validated input (positive bandwidths and weights)
        dt = max(dt, 0.0)
        # Advance the fluid.
        for f in range(n_flows):
            if active[f]:
                rem[f] -= rate[f] * dt
        for h in range(n_hosts):
            busy_bytes[h] += used[h] * dt
            if host_active[h]:
                busy_time[h] += dt
        if n_seg < cap:
            seg_time[n_seg] = t
            seg_time[n_seg + 1] = t + dt
            for h in range(n_hosts):
                seg_used[n_seg, h] = used[h]
                seg_active[n_seg, h] = 1.0 if host_active[h] else 0.0
            for f in range(n_flows):
                if rate[f] > 0.0:
                    seg_rate[n_seg, flow_job[f], flow_host[f]] += rate[f]
        n_seg += 1
        t = next_boundary if boundary else t + dt
        if rotating:
            # Closed form: a jump over many idle periods costs O(1).
            rot = rotation_index(t, period, rot)
            next_boundary = (rot + 1) * period
        # Finished flows; a job whose last flow finished ends its iteration.
        for f in range(n_flows):
            if active[f] and rem[f] <= EPS_BYTES_REL * flow_bytes[f]:
                j = flow_job[f]
                active[f] = False
                rem[f] = 0.0
                flow_finish[it[j], f] = t
                left[j] -= 1
                if left[j] == 0:
                    iter_end[j, it[j]] = t
                    it[j] += 1
                    if it[j] == iterations[j]:
                        phase[j] = 2
                        finished += 1
                    else:
                        phase[j] = 0
                        ready[j] = t + compute[j]
    if n_seg < cap:
        seg_time[n_seg] = t
    return (
        iter_end,
        comm_start,
        flow_finish,
        busy_bytes,
        busy_time,
        n_seg,
        seg_time,
        seg_used,
        seg_active,
        seg_rate,
        finished == n_jobs,
    )
