"""One call that runs every policy on a model and reports them side by side."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from optsched.comm.cost import CostModel
from optsched.comm.dag import IterationDAG, build_dag
from optsched.comm.exact import ExactSchedule, exact_schedule
from optsched.comm.fusion import no_fusion, optimal_fusion, threshold_fusion
from optsched.comm.policies import Pace, Policy, PolicyResult, default_policies
from optsched.comm.simulate import Engine, lower_bound
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.profiles import Profile

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True, eq=False)
class Comparison:
    """Every policy on one model, cluster and cost model.

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
    results : dict of str to PolicyResult
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
    results: dict[str, PolicyResult]
    pace: ExactSchedule
    fusion: dict[str, float] = field(default_factory=dict)

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


def compare(
    profile: Profile | str | Path,
    workers: int,
    bandwidth_gbps: float,
    latency_us: float,
    partition_mb: float | None = None,
    *,
    overhead_us: float = 0.0,
    fusion_mb: float = 64.0,
    cycle_ms: float = 5.0,
    order: str | Sequence[str] | None = None,
    update_ms_per_mb: float = 0.0,
    policies: Sequence[Policy] | None = None,
    engine: Engine = "numba",
) -> Comparison:
    """Run FIFO, Horovod, P3, TicTac, ByteScheduler and PACE on one model.

    Parameters
    ----------
    profile : Profile or str or Path
        A profile, a shipped profile name (``"resnet50"``) or a profile file.
    workers : int
        Data-parallel workers (ring all-reduce).
    bandwidth_gbps : float
        Per-link bandwidth (Gbit/s).
    latency_us : float
        Per-hop latency (microseconds).
    partition_mb : float, optional
        Partition size of P3 and ByteScheduler; ``None`` = P3's default and ByteScheduler's
        tuned size.
    overhead_us : float, default 0
        Fixed overhead per all-reduce call (microseconds): the per-partition overhead.
    fusion_mb : float, default 64
        Horovod's fusion threshold and PACE's fusion buffer.
    cycle_ms : float, default 5
        Horovod's cycle time.
    order : {"profile", "kahn"} or sequence of str, optional
        Forward execution order (:func:`~optsched.comm.dag.execution_order`).
    update_ms_per_mb : float, default 0
        Optimizer update time per MB of parameters.
    policies : sequence of Policy, optional
        Replace the default six.
    engine : {"numba", "python"}, default "numba"
        Simulator channel implementation.

    Returns
    -------
    Comparison

    Raises
    ------
    InvalidInstanceError
        Any invalid setting (the message names it).

    Examples
    --------
    >>> from optsched.comm import compare
    >>> result = compare("resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
    >>> result.fastest
    'pace'
    """
    from optsched.profiles import Profile, load_profile

    prof = profile if isinstance(profile, Profile) else load_profile(profile)
    if not (isinstance(fusion_mb, (int, float)) and math.isfinite(fusion_mb) and fusion_mb > 0):
        raise InvalidInstanceError("fusion_mb", f"must be a finite number > 0, got {fusion_mb!r}")
    cost = CostModel.ring(workers, bandwidth_gbps, latency_us, overhead_us=overhead_us)
    dag = build_dag(prof, order=order, update_ms_per_mb=update_ms_per_mb)
    chosen = (
        list(policies)
        if policies is not None
        else default_policies(partition_mb=partition_mb, fusion_mb=fusion_mb, cycle_ms=cycle_ms)
    )
    results: dict[str, PolicyResult] = {}
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
        "workers": int(workers),
        "bandwidth_gbps": float(bandwidth_gbps),
        "latency_us": float(latency_us),
        "overhead_us": float(overhead_us),
        "partition_mb": partition_mb,
        "fusion_mb": float(fusion_mb),
        "cycle_ms": float(cycle_ms),
        "update_ms_per_mb": float(update_ms_per_mb),
    }
    return Comparison(
        model=prof.name,
        display_name=prof.display_name,
        dag=dag,
        cost=cost,
        settings=settings,
        lower_bound=lower_bound(dag, cost),
        results=results,
        pace=pace,
        fusion=fusion,
    )
