"""Online job scheduling: which jobs run when, decided as they arrive.

Systems
-------
oasis
    OASiS (INFOCOM'18): the offline ILP, the online primal-dual algorithm with its dual
    certificate, and the FIFO, DRF, RRH and Dorm-like baselines on one slot engine.
aonline
    Aonline: online gang scheduling on heterogeneous GPU pools by doubling intervals, beside
    its exact ILP.

"""

from optsched.online import aonline, oasis
from optsched.online.aonline import (
    OBJECTIVE_NAME,
    SMALL_DEMAND_FRACTION,
    AonlineInstance,
    AonlineJob,
    AonlineSchedule,
    GpuPool,
    IntervalRecord,
    Packing,
    PackingOracleResult,
    PriceState,
    PrimalDualPacking,
    Run,
    assumptions,
    interval_bounds,
    max_intervals,
    pack_exact,
    pack_primal_dual,
    price_parameters,
)
from optsched.online.oasis import (
    DRF,
    FIFO,
    RRH,
    DormLike,
    Job,
    JobSchedule,
    OASiS,
    OasisInstance,
    OasisResult,
    OasisServer,
    OnlineAlgorithm,
    OnlineRun,
    PriceParams,
    Schedule,
    SlotEngine,
    baseline_algorithms,
    build_schedule,
    dual_bound,
    estimate_prices,
    load_instance,
    load_prices,
    load_schedule,
)

#: Names two systems share (each system's ``solve``, ``validate``, ``FAMILY``, ...): reach them
#: through the system, e.g. ``optsched.online.oasis.solve``.
SHARED_NAMES: frozenset[str] = frozenset(
    [
        "ALGORITHMS",
        "ExactResult",
        "FAMILY",
        "Report",
        "Violation",
        "best_schedule",
        "generate_instance",
        "solve",
        "validate",
    ]
)

__all__ = [
    "DRF",
    "FIFO",
    "OBJECTIVE_NAME",
    "RRH",
    "SHARED_NAMES",
    "SMALL_DEMAND_FRACTION",
    "AonlineInstance",
    "AonlineJob",
    "AonlineSchedule",
    "DormLike",
    "GpuPool",
    "IntervalRecord",
    "Job",
    "JobSchedule",
    "OASiS",
    "OasisInstance",
    "OasisResult",
    "OasisServer",
    "OnlineAlgorithm",
    "OnlineRun",
    "Packing",
    "PackingOracleResult",
    "PriceParams",
    "PriceState",
    "PrimalDualPacking",
    "Run",
    "Schedule",
    "SlotEngine",
    "aonline",
    "assumptions",
    "baseline_algorithms",
    "build_schedule",
    "dual_bound",
    "estimate_prices",
    "interval_bounds",
    "load_instance",
    "load_prices",
    "load_schedule",
    "max_intervals",
    "oasis",
    "pack_exact",
    "pack_primal_dual",
    "price_parameters",
]
