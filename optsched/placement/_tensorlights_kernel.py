r"""Event-driven fluid simulation of parameter-server broadcasts sharing host NICs.

Two implementations of one algorithm, kept side by side and checked against each other by a
property test: :func:`simulate_kernel` (Numba, arrays only) and :func:`simulate_reference`
(plain Python, lists and dictionaries, written independently). Validation, defaults and
documentation of the model live in :mod:`optsched.placement.tensorlights`; these functions
trust their arrays.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

__all__ = [
    "EPS_BYTES_REL",
    "EPS_TIME_REL",
    "MODE_FAIR",
    "MODE_ONE_GREEN",
    "MODE_PRIORITY",
    "MODE_ROTATE",
    "ReferenceRun",
    "simulate_kernel",
    "simulate_reference",
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
    while finished < n_jobs:
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
        n_seg += 1
        t = next_boundary if boundary else t + dt
        if rotating:
            eps_t = EPS_TIME_REL * max(1.0, abs(t))
            while next_boundary <= t + eps_t:
                rot += 1
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
    )


@dataclass
class ReferenceRun:
    """Output of :func:`simulate_reference`.

    Times are keyed by ``(job, iteration)`` or ``(iteration, flow)``; ``segments`` holds
    ``(t0, t1, used per host, active per host)``.
    """

    iter_end: dict[tuple[int, int], float]
    comm_start: dict[tuple[int, int], float]
    flow_finish: dict[tuple[int, int], float]
    busy_bytes: list[float]
    busy_time: list[float]
    segments: list[tuple[float, float, list[float], list[bool]]]


def simulate_reference(
    bandwidth_a: np.ndarray,
    compute_a: np.ndarray,
    start_a: np.ndarray,
    iterations_a: np.ndarray,
    job_flow_start_a: np.ndarray,
    flow_host_a: np.ndarray,
    flow_bytes_a: np.ndarray,
    flow_weight_a: np.ndarray,
    level_a: np.ndarray,
    mode: int,
    period: float,
    n_levels: int,
) -> ReferenceRun:
    """Plain-Python reference of :func:`simulate_kernel` (same model, written independently).

    Takes the kernel's arrays (without ``trace_capacity``), converts them to Python lists and
    simulates with dictionaries of unfinished flows; returns a :class:`ReferenceRun`.
    """
    bandwidth: list[float] = bandwidth_a.tolist()
    compute: list[float] = compute_a.tolist()
    start: list[float] = start_a.tolist()
    iterations: list[int] = iterations_a.tolist()
    job_flow_start: list[int] = job_flow_start_a.tolist()
    flow_host: list[int] = flow_host_a.tolist()
    flow_bytes: list[float] = flow_bytes_a.tolist()
    flow_weight: list[list[float]] = flow_weight_a.tolist()
    level: list[list[int]] = level_a.tolist()
    n_jobs = len(compute)
    n_hosts = len(bandwidth)
    flows_of = {
        j: list(range(int(job_flow_start[j]), int(job_flow_start[j + 1]))) for j in range(n_jobs)
    }

    def current_level(j: int, h: int, rot: int) -> int:
        base = int(level[h][j])
        if mode == MODE_FAIR:
            return 0
        if mode == MODE_PRIORITY:
            return base
        shifted = (base - rot) % n_levels
        if mode == MODE_ROTATE:
            return shifted
        return 0 if shifted == 0 else 1

    # Per job: either ("compute", ready_time), ("comm", {flow: remaining}) or ("done",).
    state: dict[int, tuple] = {
        j: ("compute", float(start[j]) + float(compute[j])) for j in range(n_jobs)
    }
    iteration = dict.fromkeys(range(n_jobs), 0)
    out_end: dict[tuple[int, int], float] = {}
    out_comm: dict[tuple[int, int], float] = {}
    out_flow: dict[tuple[int, int], float] = {}
    busy_bytes = [0.0] * n_hosts
    busy_time = [0.0] * n_hosts
    segments: list[tuple[float, float, list[float], list[bool]]] = []
    now = 0.0
    rot = 0
    rotating = mode in (MODE_ROTATE, MODE_ONE_GREEN)

    while any(s[0] != "done" for s in state.values()):
        tol = EPS_TIME_REL * max(1.0, abs(now))
        for j in range(n_jobs):
            if state[j][0] == "compute" and state[j][1] <= now + tol:
                out_comm[(j, iteration[j])] = now
                state[j] = ("comm", {f: float(flow_bytes[f]) for f in flows_of[j]})
        # Group the unfinished flows by host, keep the most urgent level, split by weight.
        by_host: dict[int, list[tuple[int, int, float]]] = {}
        for j in range(n_jobs):
            if state[j][0] == "comm":
                w_row = flow_weight[iteration[j]]
                for f in state[j][1]:
                    h = int(flow_host[f])
                    by_host.setdefault(h, []).append((f, current_level(j, h, rot), float(w_row[f])))
        rates: dict[int, float] = {}
        for h, entries in by_host.items():
            top = min(lv for _, lv, _ in entries)
            total = sum(w for _, lv, w in entries if lv == top)
            for f, lv, w in entries:
                rates[f] = float(bandwidth[h]) * w / total if lv == top else 0.0
        candidates = [s[1] - now for s in state.values() if s[0] == "compute"] + [
            s[1][f] / rates[f]
            for s in state.values()
            if s[0] == "comm"
            for f in s[1]
            if rates[f] > 0
        ]
        step = min(candidates) if candidates else math.inf
        crossing = False
        if rotating and by_host:
            to_boundary = (rot + 1) * period - now
            if to_boundary <= step:
                step, crossing = to_boundary, True
        step = max(step, 0.0)
        used = [0.0] * n_hosts
        for f, r in rates.items():
            used[int(flow_host[f])] += r
        activity = [h in by_host for h in range(n_hosts)]
        for h in range(n_hosts):
            busy_bytes[h] += used[h] * step
            if activity[h]:
                busy_time[h] += step
        segments.append((now, now + step, used, activity))
        now = (rot + 1) * period if crossing else now + step
        if rotating:
            while (rot + 1) * period <= now + EPS_TIME_REL * max(1.0, abs(now)):
                rot += 1
        for j in range(n_jobs):
            if state[j][0] != "comm":
                continue
            remaining = state[j][1]
            for f in list(remaining):
                remaining[f] -= rates[f] * step
                if remaining[f] <= EPS_BYTES_REL * float(flow_bytes[f]):
                    del remaining[f]
                    out_flow[(iteration[j], f)] = now
            if not remaining:
                out_end[(j, iteration[j])] = now
                iteration[j] += 1
                if iteration[j] == int(iterations[j]):
                    state[j] = ("done",)
                else:
                    state[j] = ("compute", now + float(compute[j]))
    return ReferenceRun(out_end, out_comm, out_flow, busy_bytes, busy_time, segments)
