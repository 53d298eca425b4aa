"""Communication scheduling in one data-parallel training iteration (the PACE family).

The family protocol:

* :class:`CommInstance` (``load``/``save``/``schema``): a DNN profile, workers, bandwidth
  (Gbit/s), latency, per-call overhead and PACE's fusion buffer; :func:`generate_instance`
  makes seeded random ones.
* :func:`solve` ``(instance) -> ExactResult[CommSchedule]``: PACE's exact schedule (fusion DP,
  then the optimal preemptive schedule), bound = objective; ``method="lp"`` proves it with the
  totally unimodular LP.
* The policies :class:`FIFO`, :class:`Horovod`, :class:`P3`, :class:`TicTac`,
  :class:`ByteScheduler` and :class:`Pace`, each called as ``policy(instance)`` and returning
  the same :class:`CommSchedule`.
* :func:`validate` ``(instance, schedule) -> Report``.
* :func:`compare` runs every policy (:class:`PolicyComparison`); :func:`sweep` runs it over
  bandwidths and worker counts (:class:`PaceSweep`), resumably.

Units: times in ms, bandwidths in Gbit/s, MB = 10^6 bytes (:data:`MB`; :data:`MiB` = 2^20).

>>> from optsched.comm import CommInstance, compare, solve
>>> instance = CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
>>> result = compare(instance)
>>> sorted(result.iteration_times) == sorted(["fifo", "horovod", "p3", "tictac",
...                                           "bytescheduler", "pace"])
True
>>> abs(solve(instance).objective - result.iteration_times["pace"]) < 1e-6
True
"""

from optsched.comm.compare import PolicyComparison, compare
from optsched.comm.cost import MB, CostModel, MiB
from optsched.comm.dag import IterationDAG, build_dag, execution_order
from optsched.comm.exact import ExactSchedule, exact_schedule
from optsched.comm.formulation import LPResult, solve_lp
from optsched.comm.fusion import Fusion, no_fusion, optimal_fusion, pace_schedule, threshold_fusion
from optsched.comm.generate import generate_instance
from optsched.comm.instance import CommInstance, instance_schema
from optsched.comm.policies import (
    FIFO,
    P3,
    POLICIES,
    ByteScheduler,
    Horovod,
    Pace,
    Policy,
    TicTac,
    default_policies,
    run_policy,
)
from optsched.comm.schedule import CommSchedule
from optsched.comm.simulate import ChannelPlan, Trace, check_trace, lower_bound, simulate
from optsched.comm.solve import solve, validate
from optsched.comm.sweep import PaceSweep, sweep

__all__ = [
    "FIFO",
    "MB",
    "P3",
    "POLICIES",
    "ByteScheduler",
    "ChannelPlan",
    "CommInstance",
    "CommSchedule",
    "CostModel",
    "ExactSchedule",
    "Fusion",
    "Horovod",
    "IterationDAG",
    "LPResult",
    "MiB",
    "Pace",
    "PaceSweep",
    "Policy",
    "PolicyComparison",
    "TicTac",
    "Trace",
    "build_dag",
    "check_trace",
    "compare",
    "default_policies",
    "exact_schedule",
    "execution_order",
    "generate_instance",
    "instance_schema",
    "lower_bound",
    "no_fusion",
    "optimal_fusion",
    "pace_schedule",
    "run_policy",
    "simulate",
    "solve",
    "solve_lp",
    "sweep",
    "threshold_fusion",
    "validate",
]
