r"""Independent validator of a heterogeneous goodput-world run.

:func:`validate` reads only the run's record (:class:`~optsched.goodput.hetero.world.HeteroRun`:
its GPU types, interval, decisions and every job's stretches) and the job types' measurements;
it shares no code with :mod:`~optsched.goodput.hetero.job` or
:mod:`~optsched.goodput.hetero.world`. Constraints (:data:`CONSTRAINTS`):

``decisions``
    Every decision is on the interval grid and gives each job a known GPU type, nodes of that
    type, each node's GPUs together, no node over its GPUs; only to jobs submitted by then and
    not complete (a job whose last epoch ended less than half a second after the decision's
    time completes at that time, after it: a stretch of 0 s).
``restarts``
    Re-derived from the decisions by Sia's rule (a new GPU type, or a new GPU-count-per-node
    tuple on the same type, restarts a job; the first allocation is restart 0), the count equals
    the record's, and after each restart the job's first stretches are exactly its restart
    delay (carried into the next intervals when longer than one), without progress.
``stretches``
    Every stretch lies inside one decision interval, on the GPU type and placement that
    decision gave the job.
``progress``
    Each stretch starts at the progress the previous one ended at (0 first) and either ends
    inside its epoch after :math:`\Delta t` s at rate :math:`r = c\,G_e(M)/(T_\mathrm{step} +
    s(T_\mathrm{step}-T_\mathrm{sync}))` (:math:`|\Delta P - r \Delta t| \le` ``WORK_TOL``
    relative) at an interval's end, or reaches the next epoch's start after
    :math:`\operatorname{round}(\Delta P / r)` s; the job completes exactly when its last epoch
    ends, and an unfinished job never gets there.
``fixed_batch``
    In a fixed-batch run every stretch runs Sia's split of the owner's batch.
``attained_service``
    The record's GPU-seconds equal the stretches' GPUs times their lengths.

``details`` holds the GPU-hours recomputed from the decisions and the JCTs.
:math:`O(\text{decisions} \cdot \text{jobs} + \text{stretches})`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from optsched.goodput.hetero.world import HeteroJobRecord, HeteroRun
from optsched.goodput.progress import gradient_stats, measured_step_time, progress_at_epoch
from optsched.results import Report, Violation
from optsched.tolerances import TIME_TOL, WORK_TOL

__all__ = ["CONSTRAINTS", "validate"]


def _runs(nodes: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    prev = None
    for n in nodes:
        if n == prev:
            out[-1] += 1
        else:
            out.append(1)
        prev = n
    return tuple(out)


def _active(j: HeteroJobRecord, t: float) -> bool:
    """Whether the job may hold GPUs from ``t``: not complete by then.

    A job whose last epoch ends within half a second after a decision completes at that
    decision's time, after it (a stretch of 0 s from ``t``), so it counts as active.
    """
    c = j.completion_time
    return c is None or c > t or (c == t and any(s.start >= t for s in j.stretches))


def decisions(run: HeteroRun) -> list[Violation]:
    """The ``decisions`` constraint (module notes)."""
    out: list[Violation] = []
    types = {g.name: g for g in run.gpu_types}
    jobs = {j.name: j for j in run.jobs}
    for t, allocs in run.decisions:
        k = t / run.interval
        if abs(k - round(k)) > TIME_TOL:
            out.append(Violation("decisions", f"decision at {t} s is off the grid", {"time": t}))
        used: dict[tuple[str, int], int] = {}
        for name, (gname, nodes) in allocs.items():
            j = jobs.get(name)
            if j is None or j.submission_time > t or not _active(j, t):
                out.append(Violation("decisions", f"{name} allocated at {t} s, not active",
                                     {"job": name, "time": t}))  # fmt: skip
            g = types.get(gname)
            if g is None or any(not 0 <= n < g.num_nodes for n in nodes):
                out.append(Violation("decisions", f"{name}: {gname} nodes {nodes} not in cluster",
                                     {"job": name, "time": t}))  # fmt: skip
                continue
            if len(_runs(nodes)) != len(set(nodes)):
                out.append(Violation("decisions", f"{name}: {nodes} splits a node",
                                     {"job": name, "time": t}))  # fmt: skip
            for n in nodes:
                used[gname, n] = used.get((gname, n), 0) + 1
        for (gname, n), c in used.items():
            if c > types[gname].gpus_per_node:
                out.append(Violation("decisions", f"{gname} node {n} holds {c} GPUs at {t} s",
                                     {"time": t, "node": n}, float(c)))  # fmt: skip
    return out


def _held(run: HeteroRun, name: str) -> list[tuple[float, str, tuple[int, ...]] | None]:
    """Per decision, what the job holds: ``(time, GPU type, placement)`` or None."""
    return [(t, a[name][0], _runs(a[name][1])) if name in a else None for t, a in run.decisions]


def restarts(run: HeteroRun) -> list[Violation]:
    """The ``restarts`` constraint (module notes)."""
    out: list[Violation] = []
    for j in run.jobs:
        count, left = -1, 0.0
        gtype: str | None = None
        shape: tuple[int, ...] = ()
        for h in _held(run, j.name):
            if h is None:
                gtype, shape = None, ()
                continue
            t, g, p = h
            if g != gtype or p != shape:
                count += 1
                left = run.apps[j.application][g].restart_delay
            gtype, shape = g, p
            want = min(left, run.interval)
            got = sum(
                s.end - s.start
                for s in j.stretches
                if s.atomic_bsz == 0 and t - TIME_TOL <= s.start < t + run.interval
            )
            if abs(got - want) > TIME_TOL:
                out.append(Violation("restarts", f"{j.name}: {got} s of restart delay in the "
                                     f"interval from {t} s, not {want}",
                                     {"job": j.name, "time": t}))  # fmt: skip
            left -= want
        if max(count, 0) != j.num_restarts:
            out.append(Violation("restarts", f"{j.name}: {j.num_restarts} restarts recorded, "
                                 f"{max(count, 0)} by the decisions", {"job": j.name}))  # fmt: skip
    return out


def stretches(run: HeteroRun) -> list[Violation]:
    """The ``stretches`` constraint (module notes)."""
    out: list[Violation] = []
    for j in run.jobs:
        held = {h[0]: h for h in _held(run, j.name) if h is not None}
        for s in j.stretches:
            t0 = math.floor(s.start / run.interval + TIME_TOL) * run.interval
            h = held.get(t0)
            if h is None or s.end > t0 + run.interval + TIME_TOL or (h[1], h[2]) != (
                    s.gpu_type, s.placement):  # fmt: skip
                out.append(Violation("stretches", f"{j.name}: stretch [{s.start}, {s.end}] on "
                                     f"{s.gpu_type} {s.placement} not what the decision at "
                                     f"{t0} s gave", {"job": j.name, "time": s.start}))  # fmt: skip
    return out


def _rate(run: HeteroRun, j: HeteroJobRecord, s: object) -> float:
    app = run.apps[j.application][s.gpu_type]  # type: ignore[attr-defined]
    k = sum(s.placement)  # type: ignore[attr-defined]
    m, acc = s.atomic_bsz, s.accum_steps  # type: ignore[attr-defined]
    batch = k * m * (acc + 1)
    st = gradient_stats(app.traces, batch, s.epoch)  # type: ignore[attr-defined]
    init = float(min(app.traces.validation))
    den = st.var / (batch / init) + st.sqr
    g = (st.var + st.sqr) / den if den > 0 else 1.0
    step, sync = measured_step_time(app.traces, s.placement, m)  # type: ignore[attr-defined]
    return g / (step + (step - sync) * acc) * (1 / app.slowdown)


def progress(run: HeteroRun) -> list[Violation]:
    """The ``progress`` constraint (module notes)."""
    out: list[Violation] = []
    for j in run.jobs:
        p, done = 0.0, None
        traces = run.apps[j.application][run.gpu_types[0].name]
        last = progress_at_epoch(traces.traces, traces.max_epochs)

        def bad(msg: str, s: object, name: str = j.name) -> None:
            out.append(Violation("progress", f"{name}: {msg}", {"job": name, "time": s.start}))  # type: ignore[attr-defined]

        for s in j.stretches:
            if abs(s.progress_start - p) > WORK_TOL * max(1.0, p):
                bad(f"stretch at {s.start} s starts at {s.progress_start}, not {p}", s)
            dt, dp = s.end - s.start, s.progress_end - s.progress_start
            if s.atomic_bsz == 0:
                if dp != 0:
                    bad(f"progress during the restart delay at {s.start} s", s)
            else:
                r = _rate(run, j, s)
                target = progress_at_epoch(traces.traces, s.epoch + 1)
                if s.progress_end == target:
                    if dt != round((target - s.progress_start) / r):
                        bad(f"epoch {s.epoch} ends after {dt} s, not round({dp}/{r})", s)
                elif abs(dp - r * dt) > WORK_TOL * max(1.0, s.progress_end):
                    bad(f"progress {dp} over {dt} s at rate {r}", s)
            p = s.progress_end
            if done is None and p >= last and s.atomic_bsz:
                done = s.end
        if done != j.completion_time and not (
            done is not None and j.completion_time is not None
            and abs(done - j.completion_time) <= TIME_TOL
        ):  # fmt: skip
            out.append(Violation("progress", f"{j.name}: completes at {done} by its stretches, "
                                 f"recorded {j.completion_time}", {"job": j.name}))  # fmt: skip
    return out


def _split(run: HeteroRun, j: HeteroJobRecord, s: object) -> tuple[int, int]:
    app = run.apps[j.application][s.gpu_type]  # type: ignore[attr-defined]
    t = app.traces
    placement = s.placement  # type: ignore[attr-defined]
    k = sum(placement)
    rot = min(placement[i:] + placement[:i] for i in range(len(placement)))
    key = "".join(str(d) for d in rot)
    rows = np.array([p == key for p in t.placement])
    if rows.any():
        top = float(t.local_bsz[rows].max())
    else:
        sel = (t.scalability["num_nodes"] >= len(key)) & (t.scalability["num_replicas"] >= k)
        top = float(t.scalability["local_bsz"][sel].max())
    local = math.ceil(j.target_batch_size / k - 1e-8)
    acc = math.ceil(local / top - 1e-8) - 1
    if k == 1 and j.target_batch_size > min(t.validation):
        acc = max(1, acc)
    m = math.ceil(local / (acc + 1) - 1e-8)
    same = t.num_replicas == k
    if same.any():
        m = int(min(m, t.local_bsz[same].max()))
    return min(m, int(max(t.validation) / (k * (acc + 1)))), acc


def fixed_batch(run: HeteroRun) -> list[Violation]:
    """The ``fixed_batch`` constraint (module notes)."""
    if not run.fixed_batch:
        return []
    out: list[Violation] = []
    for j in run.jobs:
        for s in j.stretches:
            if s.atomic_bsz and (s.atomic_bsz, s.accum_steps) != _split(run, j, s):
                out.append(Violation("fixed_batch", f"{j.name}: ({s.atomic_bsz}, "
                                     f"{s.accum_steps}) at {s.start} s, not "
                                     f"{_split(run, j, s)}", {"job": j.name}))  # fmt: skip
    return out


def attained_service(run: HeteroRun) -> list[Violation]:
    """The ``attained_service`` constraint (module notes)."""
    out: list[Violation] = []
    for j in run.jobs:
        got = sum((s.end - s.start) * sum(s.placement) for s in j.stretches)
        if abs(got - j.attained_service) > TIME_TOL * max(1.0, got):
            out.append(Violation("attained_service", f"{j.name}: {j.attained_service} "
                                 f"recorded, {got} by its stretches", {"job": j.name}))  # fmt: skip
    return out


#: Every constraint, by name.
CONSTRAINTS: dict[str, Callable[[HeteroRun], list[Violation]]] = {
    "decisions": decisions,
    "restarts": restarts,
    "stretches": stretches,
    "progress": progress,
    "fixed_batch": fixed_batch,
    "attained_service": attained_service,
}


def validate(run: HeteroRun) -> Report:
    """Check ``run`` against :data:`CONSTRAINTS`; ``objective`` the average JCT."""
    violations: list[Violation] = []
    for check in CONSTRAINTS.values():
        violations += check(run)
    jcts = {j.name: j.completion_time - j.submission_time for j in run.jobs
            if j.completion_time is not None}  # fmt: skip
    gpu_s = sum(len(n) for _, a in run.decisions for _, n in a.values()) * run.interval
    return Report(violations=violations,
                  objective=sum(jcts.values()) / len(jcts) if jcts else None,
                  details={"jcts": jcts, "gpu_hours": gpu_s / 3600})  # fmt: skip
