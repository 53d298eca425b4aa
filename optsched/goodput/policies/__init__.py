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
is stateful across the decisions of one run.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import GoodputPolicy
from optsched.goodput.policies.optimus import OptimusOraclePolicy
from optsched.goodput.policies.pollux import PolluxPolicy
from optsched.goodput.policies.tiresias import TiresiasPolicy

__all__ = ["POLICIES", "OptimusOraclePolicy", "PolluxPolicy", "TiresiasPolicy", "make_policy"]

#: Policy name -> factory of a fresh instance.
POLICIES: dict[str, Callable[[], GoodputPolicy]] = {
    "tiresias": TiresiasPolicy,
    "optimus-oracle": OptimusOraclePolicy,
    "pollux": PolluxPolicy,
}


def make_policy(name: str) -> GoodputPolicy:
    """A fresh instance of the policy registered as ``name`` (:data:`POLICIES`)."""
    factory = POLICIES.get(name)
    if factory is None:
        raise InvalidInstanceError(
            "policy", f"unknown goodput policy {name!r}; known: {', '.join(sorted(POLICIES))}"
        )
    return factory()
