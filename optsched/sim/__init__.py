"""Trace-driven simulation of a heterogeneous GPU cluster under a scheduling policy.

The family's pieces: the world (:class:`ClusterSpec`, :class:`Throughputs`, :class:`World` built
from a normalized job table), the one :class:`Policy` interface (:class:`SimState` in,
:class:`PolicyDecision` of :class:`Grant` out, or a Gavel-style fractional allocation), the engine
(:func:`simulate`), the record (:class:`SimResult`), the independent validator (:func:`validate`),
the replay of a per-round plan (:func:`replay_rounds`) and the metrics; the exact optimum of the
round-based world (:func:`solve`) and policies side by side with their gaps to it
(:func:`compare`). Resumable parallel sweeps of the simulator are
:func:`optsched.runs.sim_sweep.sweep` (``optsched sim sweep``): a model package imports no
run store.
"""

from typing import TYPE_CHECKING

from optsched._lazy import attach

if TYPE_CHECKING:
    from optsched.sim.comparison import Comparison, compare, world_from_trace
    from optsched.sim.engine.core import default_horizon, event_bound, simulate
    from optsched.sim.engine.policy import (
        FractionalAllocation,
        Grant,
        GrantPlacement,
        JobState,
        Policy,
        PolicyDecision,
        SimState,
        carry_out,
    )
    from optsched.sim.engine.replay import FixedRounds, replay_rounds
    from optsched.sim.family import ALGORITHMS, FAMILY
    from optsched.sim.measure.metrics import deadline_metrics, job_metrics, run_metrics, utilization
    from optsched.sim.measure.record import INTERVAL_COLUMNS, JOB_RESULT_COLUMNS, SimResult
    from optsched.sim.measure.validate import validate
    from optsched.sim.optimum.exact import solve
    from optsched.sim.world.cluster import (
        ClusterSpec,
        GpuType,
        load_gavel_cluster_specs,
        parse_cluster,
    )
    from optsched.sim.world.generate import generate_instance, generate_job_table
    from optsched.sim.world.jobs import (
        JOB_COLUMNS,
        MODEL_FAMILIES,
        SimJob,
        World,
        job_type_for,
        jobs_from_frame,
        read_job_csv,
    )
    from optsched.sim.world.throughputs import GENERIC, Throughputs, load_throughputs

#: Every name loads on first use: ``import optsched.sim`` costs next to nothing, and a caller
#: that only simulates never imports the exact models, the bounds and their solvers
#: (``optsched.sim.comparison`` brings those), nor pandas, SciPy or Numba.
__getattr__, __dir__ = attach(
    __name__,
    {
        "ALGORITHMS": "optsched.sim.family",
        "FAMILY": "optsched.sim.family",
        "GENERIC": "optsched.sim.world.throughputs",
        "INTERVAL_COLUMNS": "optsched.sim.measure.record",
        "JOB_COLUMNS": "optsched.sim.world.jobs",
        "JOB_RESULT_COLUMNS": "optsched.sim.measure.record",
        "MODEL_FAMILIES": "optsched.sim.world.jobs",
        "ClusterSpec": "optsched.sim.world.cluster",
        "Comparison": "optsched.sim.comparison",
        "FixedRounds": "optsched.sim.engine.replay",
        "FractionalAllocation": "optsched.sim.engine.policy",
        "GpuType": "optsched.sim.world.cluster",
        "Grant": "optsched.sim.engine.policy",
        "GrantPlacement": "optsched.sim.engine.policy",
        "JobState": "optsched.sim.engine.policy",
        "Policy": "optsched.sim.engine.policy",
        "PolicyDecision": "optsched.sim.engine.policy",
        "SimJob": "optsched.sim.world.jobs",
        "SimResult": "optsched.sim.measure.record",
        "SimState": "optsched.sim.engine.policy",
        "Throughputs": "optsched.sim.world.throughputs",
        "World": "optsched.sim.world.jobs",
        "carry_out": "optsched.sim.engine.policy",
        "compare": "optsched.sim.comparison",
        "deadline_metrics": "optsched.sim.measure.metrics",
        "default_horizon": "optsched.sim.engine.core",
        "event_bound": "optsched.sim.engine.core",
        "generate_instance": "optsched.sim.world.generate",
        "generate_job_table": "optsched.sim.world.generate",
        "job_metrics": "optsched.sim.measure.metrics",
        "job_type_for": "optsched.sim.world.jobs",
        "jobs_from_frame": "optsched.sim.world.jobs",
        "load_gavel_cluster_specs": "optsched.sim.world.cluster",
        "load_throughputs": "optsched.sim.world.throughputs",
        "parse_cluster": "optsched.sim.world.cluster",
        "read_job_csv": "optsched.sim.world.jobs",
        "replay_rounds": "optsched.sim.engine.replay",
        "run_metrics": "optsched.sim.measure.metrics",
        "simulate": "optsched.sim.engine.core",
        "solve": "optsched.sim.optimum.exact",
        "utilization": "optsched.sim.measure.metrics",
        "validate": "optsched.sim.measure.validate",
        "world_from_trace": "optsched.sim.comparison",
    },
)

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "GENERIC",
    "INTERVAL_COLUMNS",
    "JOB_COLUMNS",
    "JOB_RESULT_COLUMNS",
    "MODEL_FAMILIES",
    "ClusterSpec",
    "Comparison",
    "FixedRounds",
    "FractionalAllocation",
    "GpuType",
    "Grant",
    "GrantPlacement",
    "JobState",
    "Policy",
    "PolicyDecision",
    "SimJob",
    "SimResult",
    "SimState",
    "Throughputs",
    "World",
    "carry_out",
    "compare",
    "deadline_metrics",
    "default_horizon",
    "event_bound",
    "generate_instance",
    "generate_job_table",
    "job_metrics",
    "job_type_for",
    "jobs_from_frame",
    "load_gavel_cluster_specs",
    "load_throughputs",
    "parse_cluster",
    "read_job_csv",
    "replay_rounds",
    "run_metrics",
    "simulate",
    "solve",
    "utilization",
    "validate",
    "world_from_trace",
]
