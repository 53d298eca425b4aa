"""One call that runs every policy on one iteration and reports them side by side."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import IterationDAG
from optsched.comm.pace.exact import ExactSchedule, exact_schedule
from optsched.comm.pace.fusion import no_fusion, optimal_fusion, threshold_fusion
from optsched.comm.pace.instance import CommInstance, check_budgets
from optsched.comm.pace.policies import CommPolicy, Pace, default_policies
from optsched.comm.pace.schedule import CommSchedule
from optsched.comm.pace.simulate import Engine, lower_bound
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import pandas as pd

    from optsched.profiles import Profile

__all__ = ["PolicyComparison", "compare"]


@dataclass(frozen=True, eq=False, repr=False)
class PolicyComparison:
    """Every policy on one iteration (model, cluster and cost model).

    Attributes
    ----------
    model : str
        Profile name.
    display_name : str
    dag : IterationDAG
    cost : CostModel
    settings : dict
        Workers, bandwidth, latency, partition, fusion and cycle settings.
    lower_bound : float
        Lower bound on every policy's iteration time (ms).
    results : dict of str to CommSchedule
        Per policy, in the order run.
    pace : ExactSchedule
        PACE's optimal schedule (fused groups, segments, completions).
    fusion : dict of str to float
        Iteration time of the optimal preemptive schedule without fusion, with Horovod-style
        threshold fusion and with the fusion DP.
    """

    model: str
    display_name: str
    dag: IterationDAG
    cost: CostModel
    settings: dict[str, object]
    lower_bound: float
    results: dict[str, CommSchedule]
    pace: ExactSchedule
    fusion: dict[str, float] = field(default_factory=dict)
    instance: CommInstance | None = None

    @property
    def iteration_times(self) -> dict[str, float]:
        """Iteration time (ms) per policy."""
        return {name: r.iteration_time for name, r in self.results.items()}

    @property
    def fastest(self) -> str:
        """The policy with the smallest iteration time (PACE wins ties)."""
        times = self.iteration_times
        best = min(times.values())
        if "pace" in times and times["pace"] <= best:
            return "pace"
        return min(times, key=lambda k: times[k])

    def speedup(self, reference: str | None = None) -> dict[str, float]:
        """Each policy's iteration time divided by PACE's (or ``reference``'s)."""
        ref = reference or ("pace" if "pace" in self.results else self.fastest)
        base = self.results[ref].iteration_time
        return {k: (v / base if base > 0 else 1.0) for k, v in self.iteration_times.items()}

    def to_dict(self, *, schedule: bool = True) -> dict[str, object]:
        """JSON-ready report: per-policy results, lower bound, PACE schedule, fusion."""
        out: dict[str, object] = {
            "model": self.model,
            "display_name": self.display_name,
            "time_unit": "ms",
            **self.settings,
            "cost_model": self.cost.to_dict(),
            "compute": self.dag.summary(),
            "lower_bound": self.lower_bound,
            "policies": {k: r.to_dict() for k, r in self.results.items()},
            "fastest": self.fastest,
            "speedup_of_pace": self.speedup("pace") if "pace" in self.results else {},
            "fusion": self.fusion,
        }
        if schedule:
            out["pace_schedule"] = self.pace.to_dict(self.dag.tensors)
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per policy: iteration time (ms), lower bound, ratio to PACE, overlap, calls.

        Columns: ``model``, ``policy``, ``iteration_time_ms``, ``lower_bound_ms``,
        ``ratio_to_pace`` (this policy's time / PACE's), ``overlap``, ``calls``,
        ``comm_busy_ms``.
        """
        import pandas as pd

        speed = self.speedup() if self.results else {}
        rows: list[dict[str, Any]] = [
            {
                "model": self.model,
                "policy": name,
                "iteration_time_ms": r.iteration_time,
                "lower_bound_ms": self.lower_bound,
                "ratio_to_pace": speed.get(name),
                "overlap": r.overlap,
                "calls": r.n_calls,
                "comm_busy_ms": r.trace.comm_busy_ms,
            }
            for name, r in self.results.items()
        ]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        times = ", ".join(f"{k}={v:.4g}" for k, v in self.iteration_times.items())
        return f"PolicyComparison({self.model!r}, ms: {times}; lower_bound={self.lower_bound:.4g})"

    def _repr_html_(self) -> str:
        frame: Any = self.to_frame()
        return str(frame.to_html(index=False))


def compare(
    profile: CommInstance | Profile | str | Path,
    workers: int = 8,
    bandwidth_gbps: float = 10.0,
    latency_us: float = 5.0,
    partition_mb: float | None = None,
    *,
    overhead_us: float = 0.0,
    fusion_mb: float = 64.0,
    cycle_ms: float = 5.0,
    order: str | Sequence[str] | None = None,
    update_ms_per_mb: float = 0.0,
    policies: Sequence[CommPolicy] | None = None,
    engine: Engine = "numba",
) -> PolicyComparison:
    """Run FIFO, Horovod, P3, TicTac, ByteScheduler and PACE on one iteration.

    Parameters
    ----------
    profile : CommInstance or Profile or str or Path
        An instance (then ``workers``, ``bandwidth_gbps``, ``latency_us``, ``overhead_us``,
        ``order`` and ``update_ms_per_mb`` come from it, and ``fusion_mb`` defaults to its
        ``max_group_mb``), a profile, a shipped profile name (``"resnet50"``) or a profile
        file.
    workers : int, default 8
        Data-parallel workers (ring all-reduce).
    bandwidth_gbps : float, default 10
        Per-link bandwidth (Gbit/s).
    latency_us : float, default 5
        Per-hop latency (microseconds).
    partition_mb : float, optional
        Partition size of P3 and ByteScheduler; ``None`` = P3's default and ByteScheduler's
        tuned size.
    overhead_us : float, default 0
        Fixed overhead per all-reduce call (microseconds): the per-partition overhead.
    fusion_mb : float, default 64
        Horovod's fusion threshold and PACE's fusion buffer (MB = 10^6 bytes).
    cycle_ms : float, default 5
        Horovod's cycle time.
    order : {"profile", "kahn"} or sequence of str, optional
        Forward execution order (:func:`~optsched.comm.pace.dag.execution_order`).
    update_ms_per_mb : float, default 0
        Optimizer update time per MB of parameters.
    policies : sequence of CommPolicy, optional
        Replace the default six.
    engine : {"numba", "python"}, default "numba"
        Simulator channel implementation.

    Returns
    -------
    PolicyComparison

    Raises
    ------
    InvalidInstanceError
        Any invalid setting (the message names it).

    Examples
    --------
    >>> from optsched.comm.pace import compare
    >>> result = compare("resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
    >>> result.fastest
    'pace'
    """
    if not (isinstance(fusion_mb, (int, float)) and math.isfinite(fusion_mb) and fusion_mb > 0):
        raise InvalidInstanceError("fusion_mb", f"must be a finite number > 0, got {fusion_mb!r}")
    if isinstance(profile, CommInstance):
        instance = profile
        if instance.max_group_mb is not None and fusion_mb == 64.0:
            fusion_mb = instance.max_group_mb
    else:
        from optsched.profiles import Profile

        fields: dict[str, Any] = {
            "profile": profile if isinstance(profile, Profile) else str(profile),
            "workers": workers,
            "bandwidth_gbps": bandwidth_gbps,
            "latency_us": latency_us,
            "overhead_us": overhead_us,
            "update_ms_per_mb": update_ms_per_mb,
            "max_group_mb": fusion_mb,
        }
        if order is not None:
            fields["order"] = order if isinstance(order, str) else tuple(order)
        instance = CommInstance(**fields)
    prof = instance.resolved_profile
    cost = instance.cost
    dag = instance.dag
    # PACE's fusion DP is the largest piece of work: refuse an instance over its budget before
    # any policy runs.
    check_budgets(dag.n_tensors)
    chosen = (
        list(policies)
        if policies is not None
        else default_policies(partition_mb=partition_mb, fusion_mb=fusion_mb, cycle_ms=cycle_ms)
    )
    results: dict[str, CommSchedule] = {}
    for policy in chosen:
        results[policy.name] = policy.run(dag, cost, engine=engine)
    pace_policy = next((p for p in chosen if isinstance(p, Pace)), Pace(max_group_mb=fusion_mb))
    groups = pace_policy.groups(dag, cost)
    pace = exact_schedule(dag, cost, groups)
    fusion = {
        "none": max(dag.compute_ms, no_fusion(dag, cost).value),
        "threshold": max(dag.compute_ms, threshold_fusion(dag, cost, fusion_mb).value),
        "dp": max(dag.compute_ms, optimal_fusion(dag, cost, max_group_mb=fusion_mb).value),
    }
    settings: dict[str, object] = {
        "workers": instance.workers,
        "bandwidth_gbps": instance.bandwidth_gbps,
        "latency_us": instance.latency_us,
        "overhead_us": instance.overhead_us,
        "partition_mb": partition_mb,
        "fusion_mb": float(fusion_mb),
        "cycle_ms": float(cycle_ms),
        "update_ms_per_mb": instance.update_ms_per_mb,
        "mb_bytes": 10**6,
    }
    return PolicyComparison(
        model=prof.name,
        display_name=prof.display_name,
        dag=dag,
        cost=cost,
        settings=settings,
        lower_bound=lower_bound(dag, cost),
        results=results,
        pace=pace,
        fusion=fusion,
        instance=instance,
    )
