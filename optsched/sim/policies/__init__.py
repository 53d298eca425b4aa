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
(``srtf-perf``). The order policies (``fifo`` to ``tiresias-gittins``, and their ``-perf``
variants), ``gandiva``, ``chronus`` and ``chronus-greedy`` also have an ``-elastic`` variant
(``edf-elastic``, ``srtf-perf-elastic``, ``gandiva-elastic``, ``chronus-elastic``:
:data:`ELASTIC_POLICIES`) that sizes elastic gangs (:mod:`optsched.sim.policies.elastic`).
The allocation LPs of :mod:`optsched.allocation.gavel` (``max-min``, ``max-min-perf``, ``ftf``,
``ftf-perf``, ``makespan``, ``makespan-perf``, ``max-sum-throughput-perf``) run as round-based
policies (:class:`AllocationLP`): an exact LP every round, carried out by priority.
Their space-sharing forms (``max-min-packed``, ``ftf-packed``, ``makespan-packed``,
``max-sum-throughput-packed``) run as :class:`PackedAllocationLP` (pairs share a gang).
``themis`` runs Themis's partial-allocation auction every ten-minute lease (:class:`Themis`).
``gavel-fifo`` and ``gavel-gandiva`` are Gavel's own ``fifo`` and ``gandiva`` allocations
(:class:`GavelFIFO`, :class:`GavelGandiva`), meant for Gavel's mechanism
(``simulate(..., mechanism="gavel")``, :mod:`optsched.sim.engine.gavel`).
``allox`` matches queued single-GPU jobs to free GPUs at least total completion time
(:class:`AlloX`). ``elasticflow`` admits deadline jobs by their minimum satisfactory share and
scales the admitted ones by marginal throughput (:class:`ElasticFlow`).
``harmony``, ``interference-greedy``, ``consolidate-first``, ``first-fit``, ``load-balance``,
``tetris``, ``random-placement``, ``pairwise-ilp`` and ``true-exact`` place the workers and
parameter servers of each job on a world in the colocation mode
(:mod:`optsched.sim.world.colocation`); they are not part of ``"all"``. Harmony provides them
(:mod:`optsched.harmony.sim_policies`, imported the first time one is made: :data:`PROVIDED`).

Every name is a factory in the registry (:mod:`optsched.sim.policies.registry`), where
:func:`register_policy` and the entry-point group ``optsched.policies`` add plug-in policies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from optsched._lazy import attach
from optsched.allocation.gavel.lp import POLICIES as LP_POLICIES
from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Policy
from optsched.sim.policies.basic import EDF, FIFO, SJF, SRTF, OrderPolicy, greedy_allocation
from optsched.sim.policies.registry import (
    ENTRY_POINT_GROUP,
    ProvidedFactory,
    _builtin,
    all_policy_names,
    as_policies,
    import_plugin,
    make_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from optsched.sim.policies.tiresias import Tiresias

if TYPE_CHECKING:
    from optsched.sim.policies.allocation import AllocationLP
    from optsched.sim.policies.allox import AlloX
    from optsched.sim.policies.andreas import Andreas
    from optsched.sim.policies.aonline import AonlinePolicy
    from optsched.sim.policies.chronus import Chronus
    from optsched.sim.policies.elasticflow import ElasticFlow
    from optsched.sim.policies.gandiva import Gandiva
    from optsched.sim.policies.gandiva_fair import GandivaFair
    from optsched.sim.policies.gavel_fifo import GavelFIFO
    from optsched.sim.policies.gavel_gandiva import GavelGandiva
    from optsched.sim.policies.optimus import Optimus
    from optsched.sim.policies.packed import PackedAllocationLP
    from optsched.sim.policies.themis import Themis

#: The policy classes whose modules load SciPy, Numba, the solvers or the other model packages:
#: each module is imported when its class is first read or its policy first made, so that
#: ``import optsched.sim`` (and a FIFO run) pays for none of them.
_LAZY: dict[str, str] = {
    "AllocationLP": "optsched.sim.policies.allocation",
    "AlloX": "optsched.sim.policies.allox",
    "Andreas": "optsched.sim.policies.andreas",
    "AonlinePolicy": "optsched.sim.policies.aonline",
    "Chronus": "optsched.sim.policies.chronus",
    "ElasticFlow": "optsched.sim.policies.elasticflow",
    "Gandiva": "optsched.sim.policies.gandiva",
    "GandivaFair": "optsched.sim.policies.gandiva_fair",
    "GavelFIFO": "optsched.sim.policies.gavel_fifo",
    "GavelGandiva": "optsched.sim.policies.gavel_gandiva",
    "Optimus": "optsched.sim.policies.optimus",
    "PackedAllocationLP": "optsched.sim.policies.packed",
    "SmithGang": "optsched.sim.policies.smith",
    "Themis": "optsched.sim.policies.themis",
}
__getattr__, __dir__ = attach(__name__, _LAZY)

__all__ = [
    "EDF",
    "ELASTIC_POLICIES",
    "ENTRY_POINT_GROUP",
    "FIFO",
    "PLACEMENT_POLICIES",
    "POLICIES",
    "PROVIDED",
    "SJF",
    "SRTF",
    "AlloX",
    "AllocationLP",
    "Andreas",
    "AonlinePolicy",
    "Chronus",
    "ElasticFlow",
    "Gandiva",
    "GandivaFair",
    "GavelFIFO",
    "GavelGandiva",
    "Optimus",
    "OrderPolicy",
    "PackedAllocationLP",
    "Themis",
    "Tiresias",
    "all_policy_names",
    "as_policies",
    "greedy_allocation",
    "import_plugin",
    "make_policy",
    "policy_names",
    "register_policy",
    "unregister_policy",
]

_BASE: dict[str, Callable[[bool, bool], Policy]] = {
    "fifo": lambda aware, el: FIFO(aware=aware, elastic=el),
    "fifo-backfill": lambda aware, el: FIFO(aware=aware, backfill=True, elastic=el),
    "sjf": lambda aware, el: SJF(aware=aware, elastic=el),
    "srtf": lambda aware, el: SRTF(aware=aware, elastic=el),
    "edf": lambda aware, el: EDF(aware=aware, elastic=el),
    "tiresias-las": lambda aware, el: Tiresias("las", aware=aware, elastic=el),
    "tiresias-gittins": lambda aware, el: Tiresias("gittins", aware=aware, elastic=el),
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
    "elasticflow",
    "gavel-fifo",
    "gavel-gandiva",
)

#: The policies sizing elastic gangs by :mod:`optsched.sim.policies.elastic`: every order policy
#: and its ``-perf`` variant with ``-elastic`` appended (``edf-elastic``), Gandiva's
#: grow-shrink (``gandiva-elastic``), and Chronus growing into idle GPUs (``chronus-elastic``,
#: ``chronus-greedy-elastic``). Kept apart from :data:`POLICIES` so that "every policy"
#: comparisons keep their rows.
ELASTIC_POLICIES: tuple[str, ...] = (
    *(f"{name}{perf}-elastic" for name in _BASE for perf in ("", "-perf")),
    "gandiva-elastic",
    "chronus-elastic",
    "chronus-greedy-elastic",
)


def _builtin_policy(name: str, *, field: str = "policy") -> Policy:
    """A fresh built-in policy by name (the registry's factory of every built-in name).

    Raises
    ------
    InvalidInstanceError
        Unknown name (naming ``field`` and listing the known ones).
    """
    #: name -> (class, keyword arguments); the class is read through ``__getattr__``, so that
    #: only the chosen policy's module is imported.
    simple: dict[str, tuple[str, dict[str, Any]]] = {
        "gandiva": ("Gandiva", {}),
        "gandiva-elastic": ("Gandiva", {"elastic": True}),
        "gandiva-fair": ("GandivaFair", {}),
        "aonline": ("AonlinePolicy", {"backfill": True}),
        "aonline-strict": ("AonlinePolicy", {"backfill": False}),
        "themis": ("Themis", {}),
        "chronus": ("Chronus", {"mode": "milp"}),
        "chronus-greedy": ("Chronus", {"mode": "greedy"}),
        "chronus-elastic": ("Chronus", {"mode": "milp", "elastic": True}),
        "chronus-greedy-elastic": ("Chronus", {"mode": "greedy", "elastic": True}),
        "optimus": ("Optimus", {}),
        "andreas": ("Andreas", {}),
        "allox": ("AlloX", {}),
        "elasticflow": ("ElasticFlow", {}),
        "gavel-fifo": ("GavelFIFO", {}),
        "gavel-gandiva": ("GavelGandiva", {}),
    }
    if name in simple:
        cls, kwargs = simple[name]
        policy: Policy = __getattr__(cls)(**kwargs)
        return policy
    if name in LP_POLICIES:
        cls = "PackedAllocationLP" if name.endswith("-packed") else "AllocationLP"
        lp: Policy = __getattr__(cls)(name)
        return lp
    elastic = name.endswith("-elastic")
    core = name[: -len("-elastic")] if elastic else name
    aware = core.endswith("-perf")
    base = core[: -len("-perf")] if aware else core
    factory = _BASE.get(base)
    if factory is None:
        known = ", ".join((*POLICIES, *ELASTIC_POLICIES))
        raise InvalidInstanceError(field, f"unknown policy {name!r}; known: {known}")
    return factory(aware, elastic)


def _register_builtins() -> None:
    """Every built-in name, rigid then elastic, with its factory."""
    from functools import partial

    for name in POLICIES:
        _builtin(name, partial(_builtin_policy, name))
    for name in ELASTIC_POLICIES:
        _builtin(name, partial(_builtin_policy, name), in_all=False)
    _builtin("smith-gang", _smith_gang, in_all=False)


def _smith_gang() -> Policy:
    """A fresh :class:`SmithGang` (its module imported on first use)."""
    policy: Policy = __getattr__("SmithGang")()
    return policy


_register_builtins()


#: The colocation mode's placement policies (:mod:`optsched.sim.world.colocation`), provided by
#: Harmony (:mod:`optsched.harmony.sim_policies`). Kept out of ``"all"``: they run on colocation
#: worlds only.
PLACEMENT_POLICIES: tuple[str, ...] = (
    "harmony",
    "interference-greedy",
    "consolidate-first",
    "first-fit",
    "load-balance",
    "tetris",
    "random-placement",
    "pairwise-ilp",
    "true-exact",
)

#: Built-in names another package of optsched provides: name -> ``"module:factory"``, the
#: factory called with the name. The module is imported the first time the name is made
#: (:class:`~optsched.sim.policies.registry.ProvidedFactory`): Harmony runs on the simulator's
#: engine, so the simulator names it only by this string, never by an import.
PROVIDED: dict[str, str] = {
    name: "optsched.harmony.sim_policies:PlacementPolicy" for name in PLACEMENT_POLICIES
}


def _register_provided() -> None:
    """Every provided name, out of ``"all"``, made by its provider on first use."""
    for name, spec in PROVIDED.items():
        _builtin(name, ProvidedFactory(spec, name), in_all=False)


_register_provided()
