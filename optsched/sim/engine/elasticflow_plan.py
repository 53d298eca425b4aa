r"""ElasticFlow's plans: the free-GPU profile, minimum satisfactory share, EDF's greedy plan.

A *profile* :math:`F(\tau)`, :math:`\tau \ge t_0`, is the number of GPUs not yet promised at
time :math:`\tau`: a step function, :math:`N` (the cluster's GPUs) before anything is reserved.
A *plan* of a job is a step function :math:`a(\tau)` of its gang size from :math:`t_0` to its
planned end :math:`e`, with :math:`a(\tau) \le F(\tau)` and :math:`a(\tau)` a *level* (a gang
size the job may run at: the powers of two up to its cap with a positive rate, as ElasticFlow
plans). ``fit(q, f)`` is the largest level at most :math:`\min(q, f)` (0 if none).

**Minimum satisfactory share** (:func:`plan_min_share`). For the levels :math:`q_1 < q_2 < \dots`
in turn: walk back from the deadline :math:`D` over the pieces of :math:`F` on :math:`[t_0, D)`
summing :math:`r(\mathrm{fit}(q_k, F))` times the piece's length until the work :math:`W` is
reached; the first piece where it is, at :math:`p`, makes :math:`q_k` the share. The plan is
then, forward from :math:`t_0`, :math:`\mathrm{fit}(q_{k-1}, F)` before :math:`p` (nothing for
:math:`k = 1`: the job waits) and :math:`\mathrm{fit}(q_k, F)` from :math:`p`, until the work is
done; the work by :math:`D` is at least the backward sum, so the plan meets the deadline (up to
the end's rounding up to a whole second, as ElasticFlow rounds). When no level suffices the plan
runs :math:`\mathrm{fit}(q_{\max}, F)` until done and does not meet the deadline.

**EDF's plan** (:func:`plan_edf`): forward from :math:`t_0`, the base gang :math:`b` where
:math:`F \ge b`, else the largest level that fits, else nothing, until done.

Complexity: a plan walks the :math:`P` pieces of the profile once per level, :math:`O(K P)` for
:math:`K` levels; a reservation inserts two breakpoints, :math:`O(P)`.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "FreeProfile",
    "Plan",
    "fit",
    "on_grid",
    "plan_assigned",
    "plan_edf",
    "plan_min_share",
]

Rate = Callable[[int], float]


def fit(levels: Sequence[int], cap: int, free: int) -> int:
    """The largest level at most ``min(cap, free)``, 0 if none (``levels`` increasing)."""
    best = 0
    bound = min(cap, free)
    for n in levels:
        if n > bound:
            break
        best = n
    return best


@dataclass
class Plan:
    """A job's plan: ``pieces`` ``(start, gpus)`` in time order, the last lasting until ``end``.

    ``ok``: the planned end is at or before the deadline. ``hold``: the end rounded up to the
    slot grid of the plan's decision, until which its GPUs are reserved (ElasticFlow frees them
    on the grid; ``end`` when 0, no grid).
    """

    pieces: list[tuple[float, int]]
    end: float
    ok: bool
    hold: float = 0.0

    def __post_init__(self) -> None:
        self.hold = max(self.hold, self.end)

    def gpus_at(self, t: float) -> int:
        """The gang size the plan gives at ``t`` (0 before its first piece or from its end)."""
        if t >= self.end:
            return 0
        g = 0
        for s, n in self.pieces:
            if s > t:
                break
            g = n
        return g

    def gpu_time(self) -> float:
        r"""GPU-seconds the plan holds: :math:`\sum a(\tau)\,d\tau` up to its end."""
        total = 0.0
        for k, (s, n) in enumerate(self.pieces):
            e = self.pieces[k + 1][0] if k + 1 < len(self.pieces) else self.hold
            total += n * (min(e, self.hold) - s)
        return total

    def next_change(self, t: float) -> float:
        """The first time after ``t`` the plan's gang size changes (``inf``: none but the end)."""
        now = self.gpus_at(t)
        for s, n in self.pieces:
            if s > t and n != now and s < self.end:
                return s
        return math.inf


class FreeProfile:
    """GPUs not promised over time: ``free[k]`` on ``[times[k], times[k+1])``, the last for ever."""

    def __init__(self, t0: float, total: int) -> None:
        self.times: list[float] = [t0]
        self.free: list[int] = [total]

    def copy(self) -> FreeProfile:
        out = FreeProfile.__new__(FreeProfile)
        out.times = list(self.times)
        out.free = list(self.free)
        return out

    def at(self, t: float) -> int:
        k = bisect_right(self.times, t) - 1
        return self.free[max(k, 0)]

    def _split(self, t: float) -> int:
        """Index of a breakpoint at ``t`` (inserted if missing; ``t >= times[0]``)."""
        k = bisect_right(self.times, t) - 1
        if self.times[k] == t:
            return k
        self.times.insert(k + 1, t)
        self.free.insert(k + 1, self.free[k])
        return k + 1

    def pieces(self, t0: float, until: float) -> list[tuple[float, float, int]]:
        """``(start, end, free)`` of the profile's pieces covering ``[t0, until)``."""
        out: list[tuple[float, float, int]] = []
        k = max(bisect_right(self.times, t0) - 1, 0)
        start = t0
        while start < until:
            e = self.times[k + 1] if k + 1 < len(self.times) else math.inf
            end = min(e, until)
            out.append((start, end, self.free[k]))
            start = end
            k += 1
        return out

    def add(self, plan: Plan, sign: int) -> None:
        """Reserve (``sign = -1``) or release (``+1``) ``plan``'s GPUs."""
        for k, (s, n) in enumerate(plan.pieces):
            e = plan.pieces[k + 1][0] if k + 1 < len(plan.pieces) else plan.hold
            e = min(e, plan.hold)
            if n == 0 or e <= s:
                continue
            i = self._split(s)
            j = self._split(e)
            for m in range(i, j):
                self.free[m] += sign * n
                if self.free[m] < 0:
                    raise AssertionError("a plan reserved GPUs the profile does not have")


def on_grid(t0: float, t: float, slot: float) -> float:
    """``t`` rounded up to the grid ``t0 + k slot`` (``t`` itself when ``slot`` is 0)."""
    if slot <= 0 or t <= t0:
        return t
    return t0 + math.ceil((t - t0) / slot) * slot


def _forward(
    prof: FreeProfile, t0: float, work: float, rate: Rate, alloc: Callable[[float, int], int]
) -> tuple[list[tuple[float, int]], float]:
    """Walk forward from ``t0`` giving ``alloc(start, free)`` per piece until ``work`` is done."""
    pieces: list[tuple[float, int]] = []
    left = work
    for s, e, f in prof.pieces(t0, math.inf):
        a = alloc(s, f)
        if not pieces or pieces[-1][1] != a:
            pieces.append((s, a))
        r = rate(a) if a > 0 else 0.0
        if r > 0 and left <= r * (e - s):
            # ElasticFlow counts whole seconds: the end is rounded up to one
            return pieces, s + math.ceil(left / r)
        left -= r * (e - s) if r > 0 else 0.0
    raise AssertionError("the profile's last piece is free for ever; a plan always ends")


def _two_levels(
    levels: Sequence[int], point: float, before: int, after: int
) -> Callable[[float, int], int]:
    """The allocation ``fit(before)`` before ``point`` and ``fit(after)`` from it."""

    def alloc(s: float, f: int) -> int:
        return fit(levels, after if s >= point else before, f)

    return alloc


def plan_min_share(
    prof: FreeProfile,
    t0: float,
    work: float,
    deadline: float,
    levels: Sequence[int],
    rate: Rate,
    slot: float = 0.0,
) -> Plan:
    """The minimum-satisfactory-share plan (module notes); ``deadline`` may be ``inf``."""
    window = prof.pieces(t0, deadline) if deadline > t0 else []
    prev = 0
    for q in levels:
        acc = 0.0
        point = None
        for s, e, f in reversed(window):
            a = fit(levels, q, f)
            if a == 0:
                continue
            acc += rate(a) * (e - s)
            if acc >= work:
                point = s
                break
        if point is not None:
            pieces, end = _forward(prof, t0, work, rate, _two_levels(levels, point, prev, q))
            return Plan(pieces, end, end <= deadline, on_grid(t0, end, slot))
        prev = q
    top = levels[-1]
    pieces, end = _forward(prof, t0, work, rate, lambda s, f: fit(levels, top, f))
    return Plan(pieces, end, end <= deadline, on_grid(t0, end, slot))


def plan_assigned(
    prof: FreeProfile,
    t0: float,
    work: float,
    deadline: float,
    levels: Sequence[int],
    rate: Rate,
    gpus: int,
    slot: float = 0.0,
) -> Plan:
    """``gpus`` from ``t0`` to the profile's next breakpoint, then the minimum-share plan.

    ``gpus`` must be free at ``t0``. This is how ElasticFlow prices one more level for a job.
    """
    first = prof.pieces(t0, math.inf)[0]
    r = rate(gpus)
    if r > 0 and work <= r * (first[1] - first[0]):
        end = t0 + math.ceil(work / r)
        return Plan([(t0, gpus)], end, end <= deadline, on_grid(t0, end, slot))
    left = work - r * (first[1] - first[0])
    rest = plan_min_share(prof, first[1], left, deadline, levels, rate, slot)
    pieces = [(t0, gpus), *rest.pieces]
    merged: list[tuple[float, int]] = []
    for s, n in pieces:
        if not merged or merged[-1][1] != n:
            merged.append((s, n))
    return Plan(merged, rest.end, rest.ok, rest.hold)


def plan_edf(
    prof: FreeProfile,
    t0: float,
    work: float,
    deadline: float,
    levels: Sequence[int],
    rate: Rate,
    slot: float = 0.0,
) -> Plan:
    """EDF's plan: its base gang (the largest level) where free, else the largest that fits."""
    base = levels[-1]

    def alloc(_s: float, f: int) -> int:
        return base if f >= base else fit(levels, base, f)

    pieces, end = _forward(prof, t0, work, rate, alloc)
    return Plan(pieces, end, end <= deadline, on_grid(t0, end, slot))
