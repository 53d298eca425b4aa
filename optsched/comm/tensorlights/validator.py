r"""Independent validator of a TensorLights run (shares no code with the simulator).

:func:`validate` re-derives, from the instance and the run's reported times and
:class:`~optsched.comm.tensorlights.solution.NicTrace` alone, one function per constraint named
as below (:data:`CONSTRAINTS` maps each name to its function):

* ``shape`` -- the reported times cover every job, iteration and flow (checked first: nothing
  else is checked when it fails);
* ``trace`` -- the run carries its NIC trace;
* ``trace_times`` -- segment boundaries are finite, start at :math:`\ge 0` and never decrease;
* ``rate_sign`` -- every recorded rate is finite and :math:`\ge 0`;
* ``wrong_host`` -- a job sends only from the hosts of its PS shards;
* ``nic_capacity`` -- in every segment the rates on host :math:`h` sum to at most :math:`B_h`;
* ``host_total`` -- the host totals of the trace equal the sum of its per-job rates;
* ``compute_phase`` -- broadcast :math:`i` of job :math:`j` starts :math:`c_j` after the end of
  iteration :math:`i - 1` (after :math:`s_j` for the first), and ends no earlier than it starts;
* ``idle_sending`` -- a job sends only during its broadcasts;
* ``broadcast_bytes`` -- during broadcast :math:`i` host :math:`h \in S_j` sends exactly
  :math:`n_j m_j / |S_j|` bytes for job :math:`j` (job progress);
* ``flow_finish`` -- every flow of a broadcast ends inside it and the last one ends it;
* ``work_conservation`` -- while a shard of a job has an unfinished flow (from the start of the
  broadcast to the last finishing time of that shard's flows), its host sends at full rate;
* ``completion`` -- the reported completion, JCT and objectives are those of the times.

Tolerances come from :mod:`optsched.tolerances`: times compare with
:data:`~optsched.tolerances.TIME_TOL` (relative, at least 1 s of scale), capacities with
:data:`~optsched.tolerances.CAPACITY_TOL`, bytes with :data:`~optsched.tolerances.TIME_TOL`
relative (their error comes from rounding the segment times).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from optsched.comm.tensorlights.instance import TensorLightsInstance
from optsched.comm.tensorlights.solution import SimulationResult
from optsched.errors import InvalidInstanceError
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL, TIME_TOL, UTILITY_TOL, within

__all__ = ["CONSTRAINTS", "MAX_VIOLATIONS_PER_CONSTRAINT", "validate", "validate_files"]

#: Violations reported per constraint (the rest are counted in ``details``).
MAX_VIOLATIONS_PER_CONSTRAINT = 20


#: Relative resolution of the absolute clock: the simulator treats instants closer than this
#: fraction of the clock reading as one (it is :data:`~optsched.tolerances.TIME_TOL` squared).
CLOCK_REL = TIME_TOL * TIME_TOL


def _clock_slack(t: Any) -> Any:
    """Slack for comparing instants near ``t`` (scalar or array): the clock's resolution."""
    return CLOCK_REL * np.maximum(1.0, np.abs(t)) + 4 * np.spacing(np.maximum(1.0, np.abs(t)))


def _same_time(a: float, b: float, scale: float) -> bool:
    """Whether two instants agree within TIME_TOL of ``scale`` (a duration) plus the clock."""
    return bool(abs(a - b) <= TIME_TOL * scale + _clock_slack(max(abs(a), abs(b))))


def _v(constraint: str, message: str, amount: float | None = None, **where: Any) -> Violation:
    return Violation(constraint, message, where, amount)


# -- what every check reads ------------------------------------------------------------------


def _times(solution: SimulationResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reported broadcast starts, iteration ends and flow finishing times, as arrays."""
    return (
        np.asarray(solution.comm_start, dtype=float),
        np.asarray(solution.iteration_end, dtype=float),
        np.asarray(solution.flow_finish, dtype=float),
    )


def _offsets(instance: TensorLightsInstance) -> np.ndarray:
    """Column offset of each job's flows in ``flow_finish`` (``|S_j| n_j`` flows per job)."""
    sizes = [len(job.ps_hosts) * job.workers for job in instance.jobs]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(int)


def _scale(instance: TensorLightsInstance, j: int) -> float:
    """Job ``j``'s own time scale: one standalone iteration, c_j + max_h n_j m_j / (|S_j| B_h)."""
    job = instance.jobs[j]
    return job.compute_time + max(
        job.workers * job.message_bytes / len(job.ps_hosts) / instance.hosts[h].bandwidth
        for h in job.ps_hosts
    )


def _finite_prefix(instance: TensorLightsInstance, solution: SimulationResult, j: int) -> int:
    """How many of job ``j``'s iterations, from the first, have finite start and end times."""
    starts, ends, _ = _times(solution)
    k = instance.jobs[j].iterations
    finite = np.isfinite(starts[j, :k]) & np.isfinite(ends[j, :k])
    return k if finite.all() else int(np.argmin(finite))


def _completion(instance: TensorLightsInstance, solution: SimulationResult) -> np.ndarray:
    """Each job's completion (its last iteration's end), NaN where an iteration has no times."""
    _, ends, _ = _times(solution)
    return np.array(
        [
            ends[j, job.iterations - 1]
            if _finite_prefix(instance, solution, j) == job.iterations
            else np.nan
            for j, job in enumerate(instance.jobs)
        ]
    )


def _trace_arrays(solution: SimulationResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trace's boundaries, host totals and per-job rates (the trace must exist)."""
    trace = solution.trace
    assert trace is not None
    return (
        np.asarray(trace.times, dtype=float),
        np.asarray(trace.used, dtype=float),
        np.asarray(trace.job_rate, dtype=float),
    )


def _trace_usable(instance: TensorLightsInstance, solution: SimulationResult) -> bool:
    """Whether the trace exists and passes ``trace_times`` and ``rate_sign``.

    Every check of the trace's content needs both.
    """
    if solution.trace is None or trace_times(instance, solution):
        return False
    return not rate_sign(instance, solution)


# -- the constraints -------------------------------------------------------------------------


def shape(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``shape``: the reported times cover every job, iteration and flow of the instance."""
    starts, ends, finish = _times(solution)
    iters = max(job.iterations for job in instance.jobs)
    n_flows = int(_offsets(instance)[-1])
    fits = ends.ndim == 2 and ends.shape[0] == instance.n_jobs and ends.shape[1] >= iters
    fits = fits and starts.shape == ends.shape and finish.ndim == 2
    if fits and finish.shape[0] >= iters and finish.shape[1] == n_flows:
        return []
    return [
        _v(
            "shape",
            f"times have shapes {ends.shape}, {starts.shape}, {finish.shape}; the instance "
            f"needs ({instance.n_jobs}, >= {iters}) and (>= {iters}, {n_flows})",
        )
    ]


def _phase(
    instance: TensorLightsInstance, solution: SimulationResult, j: int, i: int
) -> list[Violation]:
    """``compute_phase`` of one iteration with finite times."""
    job = instance.jobs[j]
    starts, ends, _ = _times(solution)
    cs, ie = starts[j, i], ends[j, i]
    previous = job.start if i == 0 else ends[j, i - 1]
    out = []
    if not _same_time(cs, previous + job.compute_time, _scale(instance, j)):
        out.append(
            _v(
                "compute_phase",
                f"job {j} broadcast {i} starts at {cs:.9g}, not {previous:.9g} + "
                f"c = {previous + job.compute_time:.9g}",
                float(cs - previous - job.compute_time),
                job=j,
                iteration=i,
            )
        )
    if ie < cs - _clock_slack(cs):
        out.append(
            _v(
                "compute_phase",
                f"job {j} iteration {i} ends before its broadcast starts",
                float(cs - ie),
                job=j,
                iteration=i,
            )
        )
    return out


def compute_phase(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    r"""``compute_phase``: a broadcast starts :math:`c_j` after the previous iteration ends.

    Broadcast :math:`i` starts :math:`c_j` after iteration :math:`i - 1` ends (after :math:`s_j`
    for the first), and ends no earlier than it starts.
    """
    out: list[Violation] = []
    for j, job in enumerate(instance.jobs):
        done = _finite_prefix(instance, solution, j)
        for i in range(done):
            out += _phase(instance, solution, j, i)
        if done < job.iterations:
            message = f"job {j} iteration {done} has no finite times"
            out.append(_v("compute_phase", message, job=j, iteration=done))
    return out


def _flows_of(
    instance: TensorLightsInstance, solution: SimulationResult, j: int, i: int
) -> list[Violation]:
    """``flow_finish`` of one broadcast with finite times."""
    starts, ends, finish = _times(solution)
    offsets = _offsets(instance)
    cs, ie = starts[j, i], ends[j, i]
    flows = finish[i, offsets[j] : offsets[j + 1]]
    if not np.all(np.isfinite(flows)):
        return [_v("flow_finish", f"job {j} iteration {i}: a flow never ends", job=j, iteration=i)]
    if flows.min() < cs - _clock_slack(cs) or flows.max() > ie + _clock_slack(ie):
        message = (
            f"job {j} iteration {i}: flows end in [{flows.min():.9g}, {flows.max():.9g}], "
            f"outside the broadcast [{cs:.9g}, {ie:.9g}]"
        )
        return [_v("flow_finish", message, job=j, iteration=i)]
    if not _same_time(float(flows.max()), ie, _scale(instance, j)):
        message = f"job {j} iteration {i} ends at {ie:.9g} but its last flow at {flows.max():.9g}"
        return [_v("flow_finish", message, float(ie - flows.max()), job=j, iteration=i)]
    return []


def flow_finish(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``flow_finish``: every flow of a broadcast ends inside it, and the last one ends it."""
    return [
        v
        for j in range(instance.n_jobs)
        for i in range(_finite_prefix(instance, solution, j))
        for v in _flows_of(instance, solution, j, i)
    ]


def trace(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``trace``: the run carries its NIC trace."""
    if solution.trace is None:
        return [_v("trace", "the run has no NIC trace (simulate with trace=True)")]
    return []


def trace_times(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``trace_times``: the trace's arrays fit the instance, and its clock is sound.

    Segment boundaries are finite, start at >= 0 and never decrease.
    """
    if solution.trace is None:
        return []
    times, used, job_rate = _trace_arrays(solution)
    k = len(times) - 1
    n_hosts = instance.n_hosts
    if k < 0 or used.shape != (k, n_hosts) or job_rate.shape != (k, instance.n_jobs, n_hosts):
        return [
            _v("trace_times", f"trace arrays have inconsistent shapes ({len(times)} boundaries)")
        ]
    if not np.all(np.isfinite(times)) or times[0] < 0:
        return [_v("trace_times", "segment boundaries must be finite and start at >= 0")]
    dt = np.diff(times)
    return [
        _v("trace_times", f"segment {s} ends before it starts", float(-dt[s]), segment=int(s))
        for s in np.nonzero(dt < 0)[0]
    ]


def rate_sign(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``rate_sign``: every recorded rate is finite and >= 0 (checked on a sound clock)."""
    if solution.trace is None or trace_times(instance, solution):
        return []
    _, _, job_rate = _trace_arrays(solution)
    return [
        _v(
            "rate_sign",
            f"segment {s}: job {j} on host {h} has rate {job_rate[s, j, h]}",
            segment=int(s),
            job=int(j),
            host=int(h),
        )
        for s, j, h in np.argwhere(~np.isfinite(job_rate) | (job_rate < 0))
    ]


def wrong_host(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``wrong_host``: a job sends only from the hosts of its PS shards."""
    if not _trace_usable(instance, solution):
        return []
    _, _, job_rate = _trace_arrays(solution)
    allowed = np.zeros((instance.n_jobs, instance.n_hosts), dtype=bool)
    for j, job in enumerate(instance.jobs):
        allowed[j, list(job.ps_hosts)] = True
    return [
        _v(
            "wrong_host",
            f"segment {s}: job {j} sends from host {h}, which holds none of its shards",
            segment=int(s),
            job=int(j),
            host=int(h),
        )
        for s, j, h in np.argwhere((job_rate > 0) & ~allowed[None, :, :])
    ]


def _bandwidth(instance: TensorLightsInstance) -> np.ndarray:
    return np.array([host.bandwidth for host in instance.hosts])


def nic_capacity(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    r"""``nic_capacity``: per segment, the rates on host :math:`h` sum to at most :math:`B_h`.

    Checked on a sound clock with signed rates (``trace_times``, ``rate_sign``).
    """
    if not _trace_usable(instance, solution):
        return []
    times, _, job_rate = _trace_arrays(solution)
    bandwidth = _bandwidth(instance)
    total = job_rate.sum(axis=1)
    over = total - bandwidth[None, :] * (1.0 + CAPACITY_TOL)
    return [
        _v(
            "nic_capacity",
            f"segment {s} [{times[s]:.9g}, {times[s + 1]:.9g}): host {h} sends "
            f"{total[s, h]:.9g} B/s over its capacity {bandwidth[h]:.9g}",
            float(total[s, h] - bandwidth[h]),
            segment=int(s),
            host=int(h),
        )
        for s, h in np.argwhere(over > 0)
    ]


def host_total(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``host_total``: the host totals of the trace equal the sum of its per-job rates."""
    if not _trace_usable(instance, solution):
        return []
    _, used, job_rate = _trace_arrays(solution)
    total = job_rate.sum(axis=1)
    mismatch = np.abs(used - total) > CAPACITY_TOL * _bandwidth(instance)[None, :]
    return [
        _v(
            "host_total",
            f"segment {s}: host {h} total {used[s, h]:.9g} is not the sum of "
            f"its jobs' rates {total[s, h]:.9g}",
            segment=int(s),
            host=int(h),
        )
        for s, h in np.argwhere(mismatch)
    ]


def _sending(
    instance: TensorLightsInstance, solution: SimulationResult, j: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Job ``j``'s sending segments, the broadcast each belongs to, and whether it lies inside.

    A segment belongs to the broadcast containing its midpoint; it must lie inside it up to the
    clock's resolution.
    """
    starts, ends, _ = _times(solution)
    n_it = instance.jobs[j].iterations
    cs, ie = starts[j, :n_it], ends[j, :n_it]
    times, _, job_rate = _trace_arrays(solution)
    dt = np.diff(times)
    sending = np.nonzero((job_rate[:, j, :] > 0).any(axis=1) & (dt > 0))[0]
    lo, hi = times[sending], times[sending + 1]
    it = np.searchsorted(cs, 0.5 * (lo + hi), "right") - 1
    safe = np.maximum(it, 0)
    inside = (
        (it >= 0)
        & (lo >= cs[safe] - _clock_slack(cs[safe]))
        & (hi <= ie[safe] + _clock_slack(ie[safe]))
    )
    return sending, it, inside


def _timed_jobs(instance: TensorLightsInstance, solution: SimulationResult) -> list[int]:
    """Jobs whose every iteration has finite times (the others are ``compute_phase``'s)."""
    return [
        j
        for j, job in enumerate(instance.jobs)
        if _finite_prefix(instance, solution, j) == job.iterations
    ]


def idle_sending(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``idle_sending``: a job sends only during its broadcasts."""
    if not _trace_usable(instance, solution):
        return []
    times, _, _ = _trace_arrays(solution)
    out: list[Violation] = []
    for j in _timed_jobs(instance, solution):
        sending, _, inside = _sending(instance, solution, j)
        out += [
            _v(
                "idle_sending",
                f"job {j} sends in segment {s} [{times[s]:.9g}, "
                f"{times[s + 1]:.9g}) outside its broadcasts",
                job=j,
                segment=int(s),
            )
            for s in sending[~inside]
        ]
    return out


def _bytes_of(
    instance: TensorLightsInstance, solution: SimulationResult, j: int
) -> list[Violation]:
    """``broadcast_bytes`` of job ``j``, from the segments inside its broadcasts."""
    job = instance.jobs[j]
    times, _, job_rate = _trace_arrays(solution)
    dt = np.diff(times)
    sending, it, inside = _sending(instance, solution, j)
    sent = np.zeros((job.iterations, instance.n_hosts))
    fuzz = np.zeros((job.iterations, instance.n_hosts))
    rates = job_rate[sending[inside], j, :]
    np.add.at(sent, it[inside], rates * dt[sending[inside], None])
    # Bytes inherit the rounding of the segment boundaries they are computed from.
    np.add.at(fuzz, it[inside], rates * 2 * _clock_slack(times[sending + 1][inside])[:, None])
    owed = job.workers * job.message_bytes / len(job.ps_hosts)
    return [
        _v(
            "broadcast_bytes",
            f"job {j} broadcast {i}: host {h} sends {sent[i, h]:.9g} bytes, not "
            f"n m / |S| = {owed:.9g}",
            float(sent[i, h] - owed),
            job=j,
            iteration=int(i),
            host=int(h),
        )
        for h in job.ps_hosts
        for i in np.nonzero(np.abs(sent[:, h] - owed) > TIME_TOL * owed + fuzz[:, h])[0]
    ]


def broadcast_bytes(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    r"""``broadcast_bytes``: every broadcast carries exactly the job's bytes from each shard.

    During broadcast :math:`i` host :math:`h \in S_j` sends :math:`n_j m_j / |S_j|` bytes for
    job :math:`j`.
    """
    if not _trace_usable(instance, solution):
        return []
    return [v for j in _timed_jobs(instance, solution) for v in _bytes_of(instance, solution, j)]


def _pending(instance: TensorLightsInstance, solution: SimulationResult) -> list[np.ndarray]:
    """Per host, the merged intervals (rows ``[start, end]``) with an unfinished flow.

    A shard's flows are unfinished from its broadcast's start to the last of them.
    """
    starts, _, finish = _times(solution)
    offsets = _offsets(instance)
    spans: list[list[tuple[float, float]]] = [[] for _ in instance.hosts]
    for j, job in enumerate(instance.jobs):
        for i, (k, h) in itertools.product(range(job.iterations), enumerate(job.ps_hosts)):
            lo = offsets[j] + k * job.workers
            last = finish[i, lo : lo + job.workers]
            if np.isfinite(starts[j, i]) and np.all(np.isfinite(last)):
                spans[h].append((float(starts[j, i]), float(last.max())))
    merged: list[np.ndarray] = []
    for intervals in spans:
        rows: list[list[float]] = []
        for a, b in sorted(intervals):
            if rows and a <= rows[-1][1]:
                rows[-1][1] = max(rows[-1][1], b)
            else:
                rows.append([a, b])
        merged.append(np.array(rows, dtype=float).reshape(-1, 2))
    return merged


def work_conservation(
    instance: TensorLightsInstance, solution: SimulationResult
) -> list[Violation]:
    """``work_conservation``: while a shard has an unfinished flow, its host sends at full rate.

    Every policy is work-conserving.
    """
    if solution.trace is None:
        return []
    times, _, job_rate = _trace_arrays(solution)
    if len(times) < 2 or job_rate.shape[0] != len(times) - 1:
        return []  # reported as trace_times
    mid, dt, total = 0.5 * (times[:-1] + times[1:]), np.diff(times), job_rate.sum(axis=1)
    out: list[Violation] = []
    for h, merged in enumerate(_pending(instance, solution)):
        idx = np.searchsorted(merged[:, 0], mid, "right") - 1
        busy = (idx >= 0) & (mid < merged[np.maximum(idx, 0), 1]) if len(merged) else idx < -1
        capacity = instance.hosts[h].bandwidth
        out += [
            _v(
                "work_conservation",
                f"segment {s} [{times[s]:.9g}, {times[s + 1]:.9g}): host {h} has an unfinished "
                f"flow but sends {total[s, h]:.9g} B/s of its {capacity:.9g}",
                float(capacity - total[s, h]),
                segment=int(s),
                host=int(h),
            )
            for s in np.nonzero(busy & (dt > 0) & (total[:, h] < capacity * (1.0 - CAPACITY_TOL)))[
                0
            ]
        ]
    return out


def _objectives(
    instance: TensorLightsInstance, solution: SimulationResult
) -> dict[str, float | None]:
    """``mean-jct``, ``weighted-jct`` and ``makespan`` from the iteration end times.

    All ``None`` when a job has no completion.
    """
    completion = _completion(instance, solution)
    if not np.all(np.isfinite(completion)):
        return {"mean-jct": None, "weighted-jct": None, "makespan": None}
    jct = completion - np.array([job.start for job in instance.jobs])
    weights = np.array([job.weight for job in instance.jobs])
    return {
        "mean-jct": float(jct.sum() / instance.n_jobs),
        "weighted-jct": float((weights / weights.sum()) @ jct),
        "makespan": float(completion.max()),
    }


def _job_completion(
    instance: TensorLightsInstance, solution: SimulationResult, j: int, done: float
) -> list[Violation]:
    """``completion`` of job ``j``: its reported completion and JCT against the times."""
    out = []
    reported = float(np.asarray(solution.completion)[j])
    scale = _scale(instance, j)
    if not _same_time(reported, done, scale):
        message = (
            f"job {j} reports completion {reported:.9g}, its last iteration ends at {done:.9g}"
        )
        out.append(_v("completion", message, reported - done, job=j))
    jct = done - instance.jobs[j].start
    if not _same_time(float(np.asarray(solution.jct)[j]), jct, scale):
        out.append(_v("completion", f"job {j} reports a JCT that is not C_j - s_j", job=j))
    return out


def completion(instance: TensorLightsInstance, solution: SimulationResult) -> list[Violation]:
    """``completion``: the reported completions, JCTs and objectives are those of the times."""
    done = _completion(instance, solution)
    if not np.all(np.isfinite(done)):
        return []
    out = [
        v for j in range(instance.n_jobs) for v in _job_completion(instance, solution, j, done[j])
    ]
    reported = {
        "mean-jct": solution.mean_jct,
        "weighted-jct": solution.weighted_jct,
        "makespan": solution.makespan,
    }
    for name, expected in _objectives(instance, solution).items():
        value = reported[name]
        if expected is not None and not within(value, expected, UTILITY_TOL):
            message = f"reported {name} {value:.9g} differs from the recomputed {expected:.9g}"
            out.append(_v("completion", message, value - expected, objective=name))
    return out


#: Every constraint the validator checks, by its name on the formulation page, in check order.
#: ``shape`` comes first: when the times do not fit the instance, nothing else is checked.
CONSTRAINTS: dict[str, Callable[[TensorLightsInstance, SimulationResult], list[Violation]]] = {
    "shape": shape,
    "compute_phase": compute_phase,
    "flow_finish": flow_finish,
    "trace": trace,
    "trace_times": trace_times,
    "rate_sign": rate_sign,
    "wrong_host": wrong_host,
    "nic_capacity": nic_capacity,
    "host_total": host_total,
    "idle_sending": idle_sending,
    "broadcast_bytes": broadcast_bytes,
    "work_conservation": work_conservation,
    "completion": completion,
}


def validate(instance: TensorLightsInstance, solution: SimulationResult) -> Report:
    """Check a run against its instance; see the module docstring for every constraint.

    Every constraint of :data:`CONSTRAINTS` is checked; at most
    :data:`MAX_VIOLATIONS_PER_CONSTRAINT` violations of each are reported, and
    ``details["violation_counts"]`` counts them all.

    Returns
    -------
    Report
        ``objective`` is the mean JCT recomputed from the iteration end times; ``objectives``
        holds ``mean-jct``, ``weighted-jct`` and ``makespan``; ``details`` the per-job
        completion times and the number of violations per constraint.
    """
    counts: dict[str, int] = {}
    out: list[Violation] = []
    for name, check in CONSTRAINTS.items():
        found = check(instance, solution)
        if found:
            counts[name] = len(found)
            out += found[:MAX_VIOLATIONS_PER_CONSTRAINT]
        if name == "shape" and found:
            return Report(out, details={"violation_counts": counts})
    objectives = _objectives(instance, solution)
    return Report(
        out,
        objective=objectives["mean-jct"],
        objectives=objectives,
        details={
            "completion": [
                None if not np.isfinite(c) else float(c) for c in _completion(instance, solution)
            ],
            "violation_counts": counts,
        },
    )


def validate_files(instance_path: str, schedule_path: str | None) -> dict[str, Any]:
    """Validate a TensorLights instance file (the ``optsched validate`` hook).

    Raises
    ------
    InvalidInstanceError
        The file is malformed (the message names the field), or a schedule file was given:
        TensorLights runs are simulated, not read from files.
    """
    if schedule_path is not None:
        raise InvalidInstanceError("schedule", "a tensorlights-instance has no schedule file")
    inst = TensorLightsInstance.load(instance_path)
    return {
        "valid": True,
        "kind": "tensorlights-instance",
        "jobs": inst.n_jobs,
        "hosts": inst.n_hosts,
        "lines": [f"instance: {inst.n_jobs} jobs on {inst.n_hosts} hosts: valid"],
    }
