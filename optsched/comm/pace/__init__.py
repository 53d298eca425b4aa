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
* :func:`compare` runs every policy (:class:`PolicyComparison`);
  :func:`optsched.runs.pace_sweep.sweep` runs it over bandwidths and worker counts, resumably.

Units: times in ms, bandwidths in Gbit/s, MB = 10^6 bytes (:data:`MB`; :data:`MiB` = 2^20).

>>> from optsched.comm.pace import CommInstance, compare, solve
>>> instance = CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
>>> result = compare(instance)
>>> sorted(result.iteration_times) == sorted(["fifo", "horovod", "p3", "tictac",
...                                           "bytescheduler", "pace"])
True
>>> abs(solve(instance).objective - result.iteration_times["pace"]) < 1e-6
True
"""

from optsched.comm.pace.compare import PolicyComparison, compare
from optsched.comm.pace.cost import MB, CostModel, MiB
from optsched.comm.pace.dag import IterationDAG, build_dag, execution_order
from optsched.comm.pace.exact import ExactSchedule, exact_schedule
from optsched.comm.pace.family import ALGORITHMS, FAMILY
from optsched.comm.pace.formulation import LPResult, solve_lp
from optsched.comm.pace.fusion import (
    Fusion,
    no_fusion,
    optimal_fusion,
    pace_schedule,
    threshold_fusion,
)
from optsched.comm.pace.generate import generate_instance
from optsched.comm.pace.instance import CommInstance, instance_schema
from optsched.comm.pace.policies import (
    FIFO,
    P3,
    POLICIES,
    ByteScheduler,
    CommPolicy,
    Horovod,
    Pace,
    TicTac,
    default_policies,
    run_policy,
)
from optsched.comm.pace.schedule import CommSchedule
from optsched.comm.pace.simulate import (
    ChannelPlan,
    IterationTrace,
    lower_bound,
    simulate,
)
from optsched.comm.pace.solve import solve, validate
from optsched.comm.pace.validator import check_trace

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "FIFO",
    "MB",
    "P3",
    "POLICIES",
    "ByteScheduler",
    "ChannelPlan",
    "CommInstance",
    "CommPolicy",
    "CommSchedule",
    "CostModel",
    "ExactSchedule",
    "Fusion",
    "Horovod",
    "IterationDAG",
    "IterationTrace",
    "LPResult",
    "MiB",
    "Pace",
    "PolicyComparison",
    "TicTac",
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
    "threshold_fusion",
    "validate",
]
