"""Communication scheduling in one data-parallel training iteration (the PACE family).

Build the iteration DAG from a DNN profile (:func:`build_dag`), pick a cost model
(:class:`CostModel`), and either compute PACE's optimal preemptive schedule with fused tensors
(:func:`pace_schedule`) or compare it with the published baselines in one simulator
(:func:`compare`).

>>> from optsched.comm import compare
>>> result = compare("resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
>>> sorted(result.iteration_times) == sorted(["fifo", "horovod", "p3", "tictac",
...                                           "bytescheduler", "pace"])
True
"""

from optsched.comm.compare import Comparison, compare
from optsched.comm.cost import MB, CostModel
from optsched.comm.dag import IterationDAG, build_dag, execution_order
from optsched.comm.exact import ExactSchedule, exact_schedule
from optsched.comm.formulation import LPResult, solve_lp
from optsched.comm.fusion import Fusion, no_fusion, optimal_fusion, pace_schedule, threshold_fusion
from optsched.comm.policies import (
    P3,
    POLICIES,
    ByteScheduler,
    Fifo,
    Horovod,
    Pace,
    Policy,
    PolicyResult,
    TicTac,
    default_policies,
    run_policy,
)
from optsched.comm.simulate import ChannelPlan, Trace, lower_bound, simulate, validate_trace

__all__ = [
    "MB",
    "P3",
    "POLICIES",
    "ByteScheduler",
    "ChannelPlan",
    "Comparison",
    "CostModel",
    "ExactSchedule",
    "Fifo",
    "Fusion",
    "Horovod",
    "IterationDAG",
    "LPResult",
    "Pace",
    "Policy",
    "PolicyResult",
    "TicTac",
    "Trace",
    "build_dag",
    "compare",
    "default_policies",
    "exact_schedule",
    "execution_order",
    "lower_bound",
    "no_fusion",
    "optimal_fusion",
    "pace_schedule",
    "run_policy",
    "simulate",
    "solve_lp",
    "threshold_fusion",
    "validate_trace",
]
