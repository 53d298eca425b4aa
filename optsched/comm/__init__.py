"""Communication scheduling: how gradients are sent.

Systems
-------
pace
    PACE (INFOCOM'20): preemptive all-reduce scheduling of one training iteration, its totally
    unimodular LP, the fusion DP and the published policies in one event simulator.
tensorlights
    TensorLights: NIC priorities for parameter-server jobs sharing a host, in a fluid simulator.

"""

from optsched.comm import pace, tensorlights
from optsched.comm.pace import (
    FIFO,
    MB,
    P3,
    ByteScheduler,
    ChannelPlan,
    CommInstance,
    CommPolicy,
    CommSchedule,
    CostModel,
    ExactSchedule,
    Fusion,
    Horovod,
    IterationDAG,
    IterationTrace,
    LPResult,
    MiB,
    Pace,
    PolicyComparison,
    TicTac,
    build_dag,
    check_trace,
    compare,
    default_policies,
    exact_schedule,
    execution_order,
    instance_schema,
    no_fusion,
    optimal_fusion,
    pace_schedule,
    run_policy,
    solve_lp,
    threshold_fusion,
)
from optsched.comm.tensorlights import (
    DEFAULT_BANDWIDTH,
    OBJECTIVES,
    NicHost,
    NicTrace,
    PSJob,
    SimulationResult,
    TensorLightsInstance,
    compare_policies,
    event_bound,
    fair,
    one_green,
    priority,
    rotate,
    run,
    smith,
    smith_order,
    smith_rule_is_optimal,
)

#: Names two systems share (each system's ``solve``, ``validate``, ``FAMILY``, ...): reach them
#: through the system, e.g. ``optsched.comm.pace.solve``.
SHARED_NAMES: frozenset[str] = frozenset(
    [
        "ALGORITHMS",
        "FAMILY",
        "POLICIES",
        "generate_instance",
        "lower_bound",
        "simulate",
        "solve",
        "validate",
    ]
)

__all__ = [
    "DEFAULT_BANDWIDTH",
    "FIFO",
    "MB",
    "OBJECTIVES",
    "P3",
    "SHARED_NAMES",
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
    "NicHost",
    "NicTrace",
    "PSJob",
    "Pace",
    "PolicyComparison",
    "SimulationResult",
    "TensorLightsInstance",
    "TicTac",
    "build_dag",
    "check_trace",
    "compare",
    "compare_policies",
    "default_policies",
    "event_bound",
    "exact_schedule",
    "execution_order",
    "fair",
    "instance_schema",
    "no_fusion",
    "one_green",
    "optimal_fusion",
    "pace",
    "pace_schedule",
    "priority",
    "rotate",
    "run",
    "run_policy",
    "smith",
    "smith_order",
    "smith_rule_is_optimal",
    "solve_lp",
    "tensorlights",
    "threshold_fusion",
]
