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

from typing import TYPE_CHECKING

from optsched._lazy import attach

if TYPE_CHECKING:
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

#: Each system loads on first use (OASiS's slot engine and prices compile Numba kernels): the
#: simulator's Aonline policy imports Aonline alone.
__getattr__, __dir__ = attach(
    __name__,
    {
        "aonline": "optsched.online.aonline",
        "oasis": "optsched.online.oasis",
        "OBJECTIVE_NAME": "optsched.online.aonline",
        "SMALL_DEMAND_FRACTION": "optsched.online.aonline",
        "AonlineInstance": "optsched.online.aonline",
        "AonlineJob": "optsched.online.aonline",
        "AonlineSchedule": "optsched.online.aonline",
        "GpuPool": "optsched.online.aonline",
        "IntervalRecord": "optsched.online.aonline",
        "Packing": "optsched.online.aonline",
        "PackingOracleResult": "optsched.online.aonline",
        "PriceState": "optsched.online.aonline",
        "PrimalDualPacking": "optsched.online.aonline",
        "Run": "optsched.online.aonline",
        "assumptions": "optsched.online.aonline",
        "interval_bounds": "optsched.online.aonline",
        "max_intervals": "optsched.online.aonline",
        "pack_exact": "optsched.online.aonline",
        "pack_primal_dual": "optsched.online.aonline",
        "price_parameters": "optsched.online.aonline",
        "DRF": "optsched.online.oasis",
        "FIFO": "optsched.online.oasis",
        "RRH": "optsched.online.oasis",
        "DormLike": "optsched.online.oasis",
        "Job": "optsched.online.oasis",
        "JobSchedule": "optsched.online.oasis",
        "OASiS": "optsched.online.oasis",
        "OasisInstance": "optsched.online.oasis",
        "OasisResult": "optsched.online.oasis",
        "OasisServer": "optsched.online.oasis",
        "OnlineAlgorithm": "optsched.online.oasis",
        "OnlineRun": "optsched.online.oasis",
        "PriceParams": "optsched.online.oasis",
        "Schedule": "optsched.online.oasis",
        "SlotEngine": "optsched.online.oasis",
        "baseline_algorithms": "optsched.online.oasis",
        "build_schedule": "optsched.online.oasis",
        "dual_bound": "optsched.online.oasis",
        "estimate_prices": "optsched.online.oasis",
        "load_instance": "optsched.online.oasis",
        "load_prices": "optsched.online.oasis",
        "load_schedule": "optsched.online.oasis",
    },
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
