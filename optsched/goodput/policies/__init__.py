"""Policies of the goodput world (:class:`~optsched.goodput.decision.GoodputPolicy`).

=====================================================  =========================================
policy                                                 idea
=====================================================  =========================================
:class:`~.tiresias.TiresiasPolicy` (``tiresias``)       two-queue least-attained-service, rigid
                                                       gangs (Pollux artifact's baseline)
:class:`~.optimus.OptimusOraclePolicy`                 GPUs by marginal gain of remaining time,
(``optimus-oracle``)                                   fixed batches, true step times
:class:`~.pollux.PolluxPolicy` (``pollux``)             Pollux's genetic algorithm over GPU
                                                       counts per node, adaptive batches
=====================================================  =========================================

:data:`POLICIES` maps a name to a factory of a fresh instance (:func:`make_policy`); a policy
is stateful across the decisions of one run. The simulator's policies (``fifo``, ``srtf``,
``tiresias-las``, ...) run on the same jobs at fixed batches through
:class:`~.sim_adapter.SimPolicyAdapter`, which :func:`make_policy` builds for a name of
:mod:`optsched.sim.policies` when given the workload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import GoodputPolicy
from optsched.goodput.policies.optimus import OptimusOraclePolicy
from optsched.goodput.policies.pollux import PolluxPolicy
from optsched.goodput.policies.tiresias import TiresiasPolicy

if TYPE_CHECKING:
    from optsched.goodput.traces import ModelTraces
    from optsched.goodput.workload import PolluxWorkload

__all__ = ["POLICIES", "OptimusOraclePolicy", "PolluxPolicy", "TiresiasPolicy", "make_policy"]

#: Policy name -> factory of a fresh instance.
POLICIES: dict[str, Callable[[], GoodputPolicy]] = {
    "tiresias": TiresiasPolicy,
    "optimus-oracle": OptimusOraclePolicy,
    "pollux": PolluxPolicy,
}


def make_policy(
    name: str,
    workload: PolluxWorkload | None = None,
    traces: Mapping[str, ModelTraces] | str | Path | None = None,
) -> GoodputPolicy:
    """A fresh instance of the policy registered as ``name`` (:data:`POLICIES`).

    Given ``workload`` (and the ``traces`` the run will read), a simulator policy's name
    (:func:`optsched.sim.policies.policy_names`) gives its
    :class:`~.sim_adapter.SimPolicyAdapter` on that workload.
    """
    factory = POLICIES.get(name)
    if factory is not None:
        return factory()
    from optsched.sim.policies import policy_names

    if name in policy_names():
        if workload is None:
            raise InvalidInstanceError(
                "policy", f"the simulator's policy {name!r} runs on a given workload only"
            )
        from optsched.goodput.policies.sim_adapter import SimPolicyAdapter

        return SimPolicyAdapter(name, workload, traces)
    raise InvalidInstanceError(
        "policy",
        f"unknown goodput policy {name!r}; known: {', '.join(sorted(POLICIES))} and, on a "
        "given workload, the simulator's policies",
    )
