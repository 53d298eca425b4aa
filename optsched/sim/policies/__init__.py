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
``allox`` matches queued single-GPU jobs to free GPUs at least total completion time
(:class:`AlloX`).

Every name is a factory in the registry (:mod:`optsched.sim.policies.registry`), where
:func:`register_policy` and the entry-point group ``optsched.policies`` add plug-in policies.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.gavel import POLICIES as LP_POLICIES
from optsched.sim.policies.allocation import AllocationLP
from optsched.sim.policies.allox import AlloX
from optsched.sim.policies.andreas import Andreas
from optsched.sim.policies.aonline import AonlinePolicy
from optsched.sim.policies.basic import EDF, FIFO, SJF, SRTF, OrderPolicy, greedy_allocation
from optsched.sim.policies.chronus import Chronus
from optsched.sim.policies.gandiva import Gandiva
from optsched.sim.policies.gandiva_fair import GandivaFair
from optsched.sim.policies.optimus import Optimus
from optsched.sim.policies.packed import PackedAllocationLP
from optsched.sim.policies.registry import (
    ENTRY_POINT_GROUP,
    _builtin,
    as_policies,
    import_plugin,
    make_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from optsched.sim.policies.themis import Themis
from optsched.sim.policies.tiresias import Tiresias
from optsched.sim.policy import Policy

__all__ = [
    "EDF",
    "ENTRY_POINT_GROUP",
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
    "Optimus",
    "OrderPolicy",
    "PackedAllocationLP",
    "Themis",
    "Tiresias",
    "as_policies",
    "greedy_allocation",
    "import_plugin",
    "make_policy",
    "policy_names",
    "register_policy",
    "unregister_policy",
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

#: Every built-in policy name (:func:`policy_names` adds the plug-ins registered with
#: :func:`register_policy` or the ``optsched.policies`` entry points).
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
)


def _register_builtins() -> None:
    """Every built-in name with its factory, in the order of :data:`POLICIES`."""
    from functools import partial

    special: dict[str, Callable[[], Policy]] = {
        "gandiva": Gandiva,
        "gandiva-fair": GandivaFair,
        "optimus": Optimus,
        "aonline": partial(AonlinePolicy, backfill=True),
        "aonline-strict": partial(AonlinePolicy, backfill=False),
        "themis": Themis,
        "andreas": Andreas,
        "chronus": partial(Chronus, mode="milp"),
        "chronus-greedy": partial(Chronus, mode="greedy"),
        "allox": AlloX,
    }
    for name in POLICIES:
        factory: Callable[[], Policy]
        if name in special:
            factory = special[name]
        elif name in LP_POLICIES:
            cls = PackedAllocationLP if name.endswith("-packed") else AllocationLP
            factory = partial(cls, name)
        else:
            aware = name.endswith("-perf")
            factory = partial(_BASE[name[: -len("-perf")] if aware else name], aware)
        _builtin(name, factory)


_register_builtins()
