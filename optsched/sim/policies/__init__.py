"""The queueing policies of the survey, and the registry of policy names.

==================== ===========================================================
name                 policy
==================== ===========================================================
``fifo``             strict FIFO (:class:`FIFO`)
``fifo-backfill``    FIFO letting later jobs that fit go ahead
``sjf``              non-preemptive shortest job first (known durations)
``srtf``             preemptive shortest remaining time first (known durations)
``edf``              earliest deadline first
``tiresias-las``     Tiresias discretized 2D-LAS (:class:`Tiresias`)
``tiresias-gittins`` Tiresias discretized 2D-Gittins
``gandiva``          Gandiva time slicing, packing, migration (:class:`Gandiva`)
``gandiva-fair``     user fair share: stride, trading (:class:`GandivaFair`)
``optimus``          marginal-gain GPU counts (:class:`Optimus`)
==================== ===========================================================

Every name but ``gandiva`` and ``gandiva-fair`` also has a heterogeneity-aware ``-perf`` variant
(``srtf-perf``).
The allocation LPs of :mod:`optsched.allocation.gavel` (``max-min``, ``max-min-perf``, ``ftf``,
``ftf-perf``, ``makespan``, ``makespan-perf``, ``max-sum-throughput-perf``) run as round-based
policies (:class:`AllocationLP`): an exact LP every round, carried out by priority.
Their space-sharing forms (``max-min-packed``, ``ftf-packed``, ``makespan-packed``,
``max-sum-throughput-packed``) run as :class:`PackedAllocationLP` (pairs share a gang).
``themis`` runs Themis's partial-allocation auction every ten-minute lease (:class:`Themis`).
``gavel-fifo`` and ``gavel-gandiva`` are Gavel's own ``fifo`` and ``gandiva`` allocations
(:class:`GavelFIFO`, :class:`GavelGandiva`), meant for Gavel's mechanism
(``simulate(..., mechanism="gavel")``, :mod:`optsched.sim.mechanism_gavel`).
``allox`` matches queued single-GPU jobs to free GPUs at least total completion time
(:class:`AlloX`).
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.gavel import POLICIES as LP_POLICIES
from optsched.errors import InvalidInstanceError
from optsched.sim.policies.allocation import AllocationLP
from optsched.sim.policies.allox import AlloX
from optsched.sim.policies.andreas import Andreas
from optsched.sim.policies.aonline import AonlinePolicy
from optsched.sim.policies.basic import EDF, FIFO, SJF, SRTF, OrderPolicy, greedy_allocation
from optsched.sim.policies.chronus import Chronus
from optsched.sim.policies.gandiva import Gandiva
from optsched.sim.policies.gandiva_fair import GandivaFair
from optsched.sim.policies.gavel_fifo import GavelFIFO
from optsched.sim.policies.gavel_gandiva import GavelGandiva
from optsched.sim.policies.optimus import Optimus
from optsched.sim.policies.packed import PackedAllocationLP
from optsched.sim.policies.themis import Themis
from optsched.sim.policies.tiresias import Tiresias
from optsched.sim.policy import Policy

__all__ = [
    "EDF",
    "FIFO",
    "POLICIES",
    "SJF",
    "SRTF",
    "AlloX",
    "AllocationLP",
    "Andreas",
    "AonlinePolicy",
    "Chronus",
    "Gandiva",
    "GandivaFair",
    "GavelFIFO",
    "GavelGandiva",
    "Optimus",
    "OrderPolicy",
    "PackedAllocationLP",
    "Themis",
    "Tiresias",
    "greedy_allocation",
    "make_policy",
]

_BASE: dict[str, Callable[[bool], Policy]] = {
    "fifo": lambda aware: FIFO(aware=aware),
    "fifo-backfill": lambda aware: FIFO(aware=aware, backfill=True),
    "sjf": lambda aware: SJF(aware=aware),
    "srtf": lambda aware: SRTF(aware=aware),
    "edf": lambda aware: EDF(aware=aware),
    "tiresias-las": lambda aware: Tiresias("las", aware=aware),
    "tiresias-gittins": lambda aware: Tiresias("gittins", aware=aware),
}

#: Every registered policy name.
POLICIES: tuple[str, ...] = (
    *_BASE,
    *(f"{name}-perf" for name in _BASE),
    "gandiva",
    "gandiva-fair",
    *LP_POLICIES,
    "optimus",
    "aonline",
    "aonline-strict",
    "themis",
    "andreas",
    "chronus",
    "chronus-greedy",
    "allox",
    "gavel-fifo",
    "gavel-gandiva",
)


def make_policy(name: str, *, field: str = "policy") -> Policy:
    """A fresh policy by registry name.

    Raises
    ------
    InvalidInstanceError
        Unknown name (naming ``field`` and listing the known ones).
    """
    if name == "gandiva":
        return Gandiva()
    if name == "gandiva-fair":
        return GandivaFair()
    if name.endswith("-packed") and name in LP_POLICIES:
        return PackedAllocationLP(name)
    if name in ("aonline", "aonline-strict"):
        return AonlinePolicy(backfill=name == "aonline")
    if name == "themis":
        return Themis()
    if name in ("chronus", "chronus-greedy"):
        return Chronus(mode="milp" if name == "chronus" else "greedy")
    if name in LP_POLICIES:
        return AllocationLP(name)
    if name == "optimus":
        return Optimus()
    if name == "andreas":
        return Andreas()
    if name == "allox":
        return AlloX()
    if name == "gavel-fifo":
        return GavelFIFO()
    if name == "gavel-gandiva":
        return GavelGandiva()
    aware = name.endswith("-perf")
    base = name[: -len("-perf")] if aware else name
    factory = _BASE.get(base)
    if factory is None:
        raise InvalidInstanceError(field, f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
    return factory(aware)
