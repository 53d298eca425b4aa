r"""Plain-Python reference of the TensorLights fluid simulation.

The same model as :func:`optsched.comm.tensorlights.kernel.simulate_kernel`, written independently
with lists and dictionaries of unfinished flows instead of arrays; a property test checks that
the two agree on every policy. Its loops are bounded the same way: the event loop runs at most
``max_events`` times (derived from the instance by the wrapper, see
:func:`optsched.comm.tensorlights.simulator.event_bound`) and the rotation index after an idle jump
is
computed in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.comm.tensorlights.kernel import (
    EPS_BYTES_REL,
    EPS_TIME_REL,
    MODE_FAIR,
    MODE_ONE_GREEN,
    MODE_PRIORITY,
    MODE_ROTATE,
)

__all__ = ["ReferenceRun", "simulate_reference"]


def _boundaries_passed(now: float, period: float) -> int:
    """How many rotation boundaries ``k * period`` (k >= 1) lie at or before ``now`` (+ slack)."""
    limit = now + EPS_TIME_REL * max(1.0, abs(now))
    count = int(limit // period)
    # ``//`` rounds; settle the last unit with exact comparisons (bounded: two each way).
    for _ in range(2):
        if (count + 1) * period <= limit:
            count += 1
    for _ in range(2):
        if count > 0 and count * period > limit:
            count -= 1
    return count


@dataclass
class ReferenceRun:
    """Output of :func:`simulate_reference`.

    Times are keyed by ``(job, iteration)`` or ``(iteration, flow)``; ``segments`` holds
    ``(t0, t1, used per host, active per host)`` and ``job_rates`` the positive rate of each
    ``(job, host)`` in each segment; ``completed`` says whether every job finished within the
    event bound.
    """

    iter_end: dict[tuple[int, int], float]
    comm_start: dict[tuple[int, int], float]
    flow_finish: dict[tuple[int, int], float]
    busy_bytes: list[float]
    busy_time: list[float]
    segments: list[tuple[float, float, list[float], list[bool]]]
    job_rates: list[dict[tuple[int, int], float]]
    completed: bool


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
    max_events: int,
) -> ReferenceRun:
    """Plain-Python reference of the kernel (same model, written independently).

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
    state: dict[int, tuple[Any, ...]] = {
        j: ("compute", float(start[j]) + float(compute[j])) for j in range(n_jobs)
    }
    iteration = dict.fromkeys(range(n_jobs), 0)
    out_end: dict[tuple[int, int], float] = {}
    out_comm: dict[tuple[int, int], float] = {}
    out_flow: dict[tuple[int, int], float] = {}
    busy_bytes = [0.0] * n_hosts
    busy_time = [0.0] * n_hosts
    segments: list[tuple[float, float, list[float], list[bool]]] = []
    job_rates: list[dict[tuple[int, int], float]] = []
    flow_owner = {f: j for j, flows in flows_of.items() for f in flows}
    now = 0.0
    rot = 0
    rotating = mode in (MODE_ROTATE, MODE_ONE_GREEN)

    for _ in range(max_events):
        if all(s[0] == "done" for s in state.values()):
            break
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
        per_job: dict[tuple[int, int], float] = {}
        for f, r in rates.items():
            if r > 0:
                key = (flow_owner[f], int(flow_host[f]))
                per_job[key] = per_job.get(key, 0.0) + r
        job_rates.append(per_job)
        now = (rot + 1) * period if crossing else now + step
        if rotating:
            rot = max(rot, _boundaries_passed(now, period))
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
    completed = all(s[0] == "done" for s in state.values())
    return ReferenceRun(
        out_end, out_comm, out_flow, busy_bytes, busy_time, segments, job_rates, completed
    )
