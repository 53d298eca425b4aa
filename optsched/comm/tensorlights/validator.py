r"""Independent validator of a TensorLights run (shares no code with the simulator).

:func:`validate` re-derives, from the instance and the run's reported times and
:class:`~optsched.comm.tensorlights.solution.NicTrace` alone:

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

from typing import Any

import numpy as np

from optsched.comm.tensorlights.instance import TensorLightsInstance
from optsched.comm.tensorlights.solution import SimulationResult
from optsched.errors import InvalidInstanceError
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL, TIME_TOL, UTILITY_TOL, within

__all__ = ["MAX_VIOLATIONS_PER_CONSTRAINT", "validate", "validate_files"]

#: Violations reported per constraint (the rest are counted in ``details``).
MAX_VIOLATIONS_PER_CONSTRAINT = 20


class _Collector:
    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.counts: dict[str, int] = {}

    def add(self, constraint: str, message: str, amount: float | None = None, **where: Any) -> None:
        n = self.counts.get(constraint, 0)
        self.counts[constraint] = n + 1
        if n < MAX_VIOLATIONS_PER_CONSTRAINT:
            self.violations.append(Violation(constraint, message, where, amount))


#: Relative resolution of the absolute clock: the simulator treats instants closer than this
#: fraction of the clock reading as one (it is :data:`~optsched.tolerances.TIME_TOL` squared).
CLOCK_REL = TIME_TOL * TIME_TOL


def _clock_slack(t: Any) -> Any:
    """Slack for comparing instants near ``t`` (scalar or array): the clock's resolution."""
    return CLOCK_REL * np.maximum(1.0, np.abs(t)) + 4 * np.spacing(np.maximum(1.0, np.abs(t)))


def _same_time(a: float, b: float, scale: float) -> bool:
    """Whether two instants agree within TIME_TOL of ``scale`` (a duration) plus the clock."""
    return bool(abs(a - b) <= TIME_TOL * scale + _clock_slack(max(abs(a), abs(b))))


def validate(instance: TensorLightsInstance, solution: SimulationResult) -> Report:
    """Check a run against its instance; see the module docstring for every constraint.

    Returns
    -------
    Report
        ``objective`` is the mean JCT recomputed from the iteration end times; ``objectives``
        holds ``mean-jct``, ``weighted-jct`` and ``makespan``; ``details`` the per-job
        completion times and the number of violations per constraint.
    """
    out = _Collector()
    jobs = instance.jobs
    n_jobs, n_hosts = len(jobs), len(instance.hosts)
    iters = [job.iterations for job in jobs]
    sizes = [len(job.ps_hosts) * job.workers for job in jobs]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    ends = np.asarray(solution.iteration_end, dtype=float)
    starts = np.asarray(solution.comm_start, dtype=float)
    finish = np.asarray(solution.flow_finish, dtype=float)
    if (
        ends.ndim != 2
        or ends.shape[0] != n_jobs
        or ends.shape[1] < max(iters)
        or starts.shape != ends.shape
        or finish.ndim != 2
        or finish.shape[0] < max(iters)
        or finish.shape[1] != offsets[-1]
    ):
        out.add(
            "shape",
            f"times have shapes {ends.shape}, {starts.shape}, {finish.shape}; the instance "
            f"needs ({n_jobs}, >= {max(iters)}) and (>= {max(iters)}, {offsets[-1]})",
        )
        return Report(out.violations, details={"violation_counts": out.counts})

    # Iteration structure, flow finishing times and completion, from the reported times.
    completion = np.full(n_jobs, np.nan)
    scales = np.ones(n_jobs)
    for j, job in enumerate(jobs):
        k = job.iterations
        # The job's own time scale: one standalone iteration, c_j + max_h n_j m_j / (|S_j| B_h).
        scale = job.compute_time_s + max(
            job.workers
            * job.message_bytes
            / len(job.ps_hosts)
            / instance.hosts[h].bandwidth_bytes_per_s
            for h in job.ps_hosts
        )
        scales[j] = scale
        previous = job.start_s
        for i in range(k):
            cs, ie = starts[j, i], ends[j, i]
            if not (np.isfinite(cs) and np.isfinite(ie)):
                out.add(
                    "compute_phase",
                    f"job {j} iteration {i} has no finite times",
                    job=j,
                    iteration=i,
                )
                break
            if not _same_time(cs, previous + job.compute_time_s, scale):
                out.add(
                    "compute_phase",
                    f"job {j} broadcast {i} starts at {cs:.9g}, not {previous:.9g} + "
                    f"c = {previous + job.compute_time_s:.9g}",
                    amount=float(cs - previous - job.compute_time_s),
                    job=j,
                    iteration=i,
                )
            if ie < cs - _clock_slack(cs):
                out.add(
                    "compute_phase",
                    f"job {j} iteration {i} ends before its broadcast starts",
                    amount=float(cs - ie),
                    job=j,
                    iteration=i,
                )
            flows = finish[i, offsets[j] : offsets[j + 1]]
            if not np.all(np.isfinite(flows)):
                out.add(
                    "flow_finish", f"job {j} iteration {i}: a flow never ends", job=j, iteration=i
                )
            else:
                if flows.min() < cs - _clock_slack(cs) or flows.max() > ie + _clock_slack(ie):
                    out.add(
                        "flow_finish",
                        f"job {j} iteration {i}: flows end in [{flows.min():.9g}, "
                        f"{flows.max():.9g}], outside the broadcast [{cs:.9g}, {ie:.9g}]",
                        job=j,
                        iteration=i,
                    )
                elif not _same_time(float(flows.max()), ie, scale):
                    out.add(
                        "flow_finish",
                        f"job {j} iteration {i} ends at {ie:.9g} but its last flow at "
                        f"{flows.max():.9g}",
                        amount=float(ie - flows.max()),
                        job=j,
                        iteration=i,
                    )
            previous = ie
        else:
            completion[j] = ends[j, k - 1]

    # The trace: capacities, hosts, sending only while broadcasting, bytes per broadcast.
    trace = solution.trace
    if trace is None:
        out.add("trace", "the run has no NIC trace (simulate with trace=True)")
    else:
        _check_trace(instance, trace.times, trace.used, trace.job_rate, starts, ends, out)
        _check_work_conserving(instance, trace.times, trace.job_rate, starts, finish, offsets, out)

    # Completion and objectives.
    begin = np.array([job.start_s for job in jobs])
    weights = np.array([job.weight for job in jobs])
    jct = completion - begin
    objectives: dict[str, float | None] = {"mean-jct": None, "weighted-jct": None, "makespan": None}
    if np.all(np.isfinite(completion)):
        share = weights / weights.sum()
        objectives = {
            "mean-jct": float(jct.sum() / n_jobs),
            "weighted-jct": float(share @ jct),
            "makespan": float(completion.max()),
        }
        for j in range(n_jobs):
            reported = float(np.asarray(solution.completion)[j])
            if not _same_time(reported, float(completion[j]), scales[j]):
                out.add(
                    "completion",
                    f"job {j} reports completion {reported:.9g}, its last iteration ends at "
                    f"{completion[j]:.9g}",
                    amount=reported - float(completion[j]),
                    job=j,
                )
            if not _same_time(float(np.asarray(solution.jct)[j]), float(jct[j]), scales[j]):
                out.add("completion", f"job {j} reports a JCT that is not C_j - s_j", job=j)
        for name, value in (
            ("mean-jct", solution.mean_jct),
            ("weighted-jct", solution.weighted_jct),
            ("makespan", solution.makespan),
        ):
            expected = objectives[name]
            if expected is not None and not within(value, expected, UTILITY_TOL):
                out.add(
                    "completion",
                    f"reported {name} {value:.9g} differs from the recomputed {expected:.9g}",
                    amount=value - expected,
                    objective=name,
                )
    del n_hosts
    return Report(
        out.violations,
        objective=objectives["mean-jct"],
        objectives=objectives,
        details={
            "completion": [None if not np.isfinite(c) else float(c) for c in completion],
            "violation_counts": out.counts,
        },
    )


def _check_trace(
    instance: TensorLightsInstance,
    times: np.ndarray,
    used: np.ndarray,
    job_rate: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    out: _Collector,
) -> None:
    jobs = instance.jobs
    n_jobs, n_hosts = len(jobs), len(instance.hosts)
    times = np.asarray(times, dtype=float)
    used = np.asarray(used, dtype=float)
    job_rate = np.asarray(job_rate, dtype=float)
    k = len(times) - 1
    if k < 0 or used.shape != (k, n_hosts) or job_rate.shape != (k, n_jobs, n_hosts):
        out.add("trace_times", f"trace arrays have inconsistent shapes ({len(times)} boundaries)")
        return
    if not np.all(np.isfinite(times)) or (k >= 0 and times[0] < 0):
        out.add("trace_times", "segment boundaries must be finite and start at >= 0")
        return
    dt = np.diff(times)
    back = np.nonzero(dt < 0)[0]
    for s in back[:MAX_VIOLATIONS_PER_CONSTRAINT]:
        out.add(
            "trace_times",
            f"segment {s} ends before it starts",
            amount=float(-dt[s]),
            segment=int(s),
        )
    if len(back):
        return
    if not np.all(np.isfinite(job_rate)) or np.any(job_rate < 0):
        bad = np.argwhere(~np.isfinite(job_rate) | (job_rate < 0))
        for s, j, h in bad[:MAX_VIOLATIONS_PER_CONSTRAINT]:
            out.add(
                "rate_sign",
                f"segment {s}: job {j} on host {h} has rate {job_rate[s, j, h]}",
                segment=int(s),
                job=int(j),
                host=int(h),
            )
        return
    bandwidth = np.array([host.bandwidth_bytes_per_s for host in instance.hosts])
    allowed = np.zeros((n_jobs, n_hosts), dtype=bool)
    for j, job in enumerate(jobs):
        allowed[j, list(job.ps_hosts)] = True
    misplaced = np.argwhere((job_rate > 0) & ~allowed[None, :, :])
    for s, j, h in misplaced[:MAX_VIOLATIONS_PER_CONSTRAINT]:
        out.add(
            "wrong_host",
            f"segment {s}: job {j} sends from host {h}, which holds none of its shards",
            segment=int(s),
            job=int(j),
            host=int(h),
        )
    total = job_rate.sum(axis=1)
    over = total - bandwidth[None, :] * (1.0 + CAPACITY_TOL)
    for s, h in np.argwhere(over > 0):
        out.add(
            "nic_capacity",
            f"segment {s} [{times[s]:.9g}, {times[s + 1]:.9g}): host {h} sends "
            f"{total[s, h]:.9g} B/s over its capacity {bandwidth[h]:.9g}",
            amount=float(total[s, h] - bandwidth[h]),
            segment=int(s),
            host=int(h),
        )
    mismatch = np.abs(used - total) > CAPACITY_TOL * bandwidth[None, :]
    for s, h in np.argwhere(mismatch):
        out.add(
            "host_total",
            f"segment {s}: host {h} total {used[s, h]:.9g} is not the sum of "
            f"its jobs' rates {total[s, h]:.9g}",
            segment=int(s),
            host=int(h),
        )

    # Which broadcast each sending segment belongs to, and the bytes each broadcast sends.
    for j, job in enumerate(jobs):
        n_it = job.iterations
        cs, ie = starts[j, :n_it], ends[j, :n_it]
        if not (np.all(np.isfinite(cs)) and np.all(np.isfinite(ie))):
            continue  # already reported as compute_phase
        sending = np.nonzero((job_rate[:, j, :] > 0).any(axis=1) & (dt > 0))[0]
        # A segment belongs to the broadcast containing its midpoint; it must lie inside it
        # up to the clock's resolution.
        lo, hi = times[sending], times[sending + 1]
        it = np.searchsorted(cs, 0.5 * (lo + hi), "right") - 1
        safe = np.maximum(it, 0)
        inside = (
            (it >= 0)
            & (lo >= cs[safe] - _clock_slack(cs[safe]))
            & (hi <= ie[safe] + _clock_slack(ie[safe]))
        )
        for s in sending[~inside][:MAX_VIOLATIONS_PER_CONSTRAINT]:
            out.add(
                "idle_sending",
                f"job {j} sends in segment {s} [{times[s]:.9g}, "
                f"{times[s + 1]:.9g}) outside its broadcasts",
                job=j,
                segment=int(s),
            )
        sent = np.zeros((n_it, n_hosts))
        fuzz = np.zeros((n_it, n_hosts))
        rates = job_rate[sending[inside], j, :]
        np.add.at(sent, it[inside], rates * dt[sending[inside], None])
        # Bytes inherit the rounding of the segment boundaries they are computed from.
        np.add.at(fuzz, it[inside], rates * 2 * _clock_slack(hi[inside])[:, None])
        owed = job.workers * job.message_bytes / len(job.ps_hosts)
        for h in job.ps_hosts:
            wrong = np.nonzero(np.abs(sent[:, h] - owed) > TIME_TOL * owed + fuzz[:, h])[0]
            for i in wrong[:MAX_VIOLATIONS_PER_CONSTRAINT]:
                out.add(
                    "broadcast_bytes",
                    f"job {j} broadcast {i}: host {h} sends {sent[i, h]:.9g} bytes, not "
                    f"n m / |S| = {owed:.9g}",
                    amount=float(sent[i, h] - owed),
                    job=j,
                    iteration=int(i),
                    host=int(h),
                )


def _check_work_conserving(
    instance: TensorLightsInstance,
    times: np.ndarray,
    job_rate: np.ndarray,
    starts: np.ndarray,
    finish: np.ndarray,
    offsets: np.ndarray,
    out: _Collector,
) -> None:
    """Every host with an unfinished flow sends at its full capacity (all policies)."""
    times = np.asarray(times, dtype=float)
    job_rate = np.asarray(job_rate, dtype=float)
    if len(times) < 2 or job_rate.shape[0] != len(times) - 1:
        return  # reported as trace_times
    pending: list[list[tuple[float, float]]] = [[] for _ in instance.hosts]
    for j, job in enumerate(instance.jobs):
        for i in range(job.iterations):
            for k, h in enumerate(job.ps_hosts):
                lo = offsets[j] + k * job.workers
                last = finish[i, lo : lo + job.workers]
                if np.isfinite(starts[j, i]) and np.all(np.isfinite(last)):
                    pending[h].append((float(starts[j, i]), float(last.max())))
    mid = 0.5 * (times[:-1] + times[1:])
    dt = np.diff(times)
    total = job_rate.sum(axis=1)
    for h, intervals in enumerate(pending):
        if not intervals:
            continue
        merged: list[list[float]] = []
        for a, b in sorted(intervals):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        lo_arr = np.array([m[0] for m in merged])
        hi_arr = np.array([m[1] for m in merged])
        idx = np.searchsorted(lo_arr, mid, "right") - 1
        busy = (idx >= 0) & (mid < hi_arr[np.maximum(idx, 0)]) & (dt > 0)
        capacity = instance.hosts[h].bandwidth_bytes_per_s
        for s in np.nonzero(busy & (total[:, h] < capacity * (1.0 - CAPACITY_TOL)))[0]:
            out.add(
                "work_conservation",
                f"segment {s} [{times[s]:.9g}, {times[s + 1]:.9g}): host {h} has an unfinished "
                f"flow but sends {total[s, h]:.9g} B/s of its {capacity:.9g}",
                amount=float(capacity - total[s, h]),
                segment=int(s),
                host=int(h),
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
