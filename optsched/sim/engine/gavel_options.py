"""The options of Gavel's round mechanism and which policies it carries out.

See :mod:`optsched.sim.engine.gavel` for the mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Policy

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = [
    "DEFAULT_RESET_INTERVAL",
    "DEFAULT_ROUND_SECONDS",
    "GAVEL_TYPE_ORDER",
    "GavelMechanism",
    "gavel_refuses",
    "is_agnostic",
    "type_order",
]

#: Gavel's ``minimum_time_between_allocation_resets`` (seconds).
DEFAULT_RESET_INTERVAL = 1920.0
#: Gavel's driver default ``--time_per_iteration`` (seconds).
DEFAULT_ROUND_SECONDS = 360.0
#: The order in which Gavel walks its per-type queues.
GAVEL_TYPE_ORDER: tuple[str, ...] = ("v100", "p100", "k80")


@dataclass(frozen=True)
class GavelMechanism:
    """Options of Gavel's mechanism (module notes).

    Attributes
    ----------
    reset_interval : float
        Minimum seconds between two allocation resets (Gavel's
        ``minimum_time_between_allocation_resets``), default 1920.
    seed : int
        Seed of the per-round shuffle of the type order of heterogeneity-agnostic policies
        (the generator is seeded with ``seed + 5``, as Gavel's ``_worker_type_shuffler``).
    shuffle : bool or None
        Shuffle the type order every round; ``None`` (default): for heterogeneity-agnostic
        policies only (:func:`is_agnostic`), as Gavel does.
    whole_steps : bool or None
        Count whole steps per round, as Gavel (``int(rate L)`` steps, so a job not done ends
        its round a fraction of a step early); ``None`` (default): when the world's
        ``restore_s`` is 0 (Gavel's simulator charges no restore), continuous progress
        otherwise. Refused with ``restore_s > 0``: the gap it leaves before every round's end
        would count as a new run, with its restore, every round.
    interior : bool
        Allocation LPs (:class:`~optsched.sim.policies.AllocationLP`): take the
        interior-point optimum (:meth:`~optsched.sim.policies.AllocationLP.interior_fractional`)
        as Gavel's cvxpy solve does, rather than the simplex vertex. Default ``True``.
    direct : bool
        With ``interior``: build the interior-point problems straight into Clarabel
        (:mod:`optsched.allocation.gavel.interior`, default) rather than through cvxpy (the
        reference: the same point up to the solver's stopping tolerance).
    """

    reset_interval: float = DEFAULT_RESET_INTERVAL
    seed: int = 0
    shuffle: bool | None = None
    whole_steps: bool | None = None
    interior: bool = True
    direct: bool = True

    def __post_init__(self) -> None:
        r = self.reset_interval
        if isinstance(r, bool) or not (isinstance(r, int | float) and math.isfinite(r) and r >= 0):
            raise InvalidInstanceError("reset_interval", f"must be a finite number >= 0, got {r!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidInstanceError("seed", f"must be an integer, got {self.seed!r}")
        if self.shuffle is not None and not isinstance(self.shuffle, bool):
            raise InvalidInstanceError("shuffle", f"must be a bool or None, got {self.shuffle!r}")
        if not isinstance(self.interior, bool):
            raise InvalidInstanceError("interior", f"must be a bool, got {self.interior!r}")
        if not isinstance(self.direct, bool):
            raise InvalidInstanceError("direct", f"must be a bool, got {self.direct!r}")
        if self.whole_steps is not None and not isinstance(self.whole_steps, bool):
            raise InvalidInstanceError(
                "whole_steps", f"must be a bool or None, got {self.whole_steps!r}"
            )


def is_agnostic(policy: Policy) -> bool:
    """Whether Gavel would shuffle the type order for ``policy`` every round.

    Gavel shuffles unless its policy's name contains ``Perf`` or ``Packing``: here, unless the
    name ends in ``-perf``, contains ``packed`` or is Gavel's Gandiva (a packing policy).
    """
    name = policy.name
    return not (name.endswith("-perf") or "packed" in name or "gandiva" in name)


def gavel_refuses(policy: Policy) -> str | None:
    """Why Gavel's mechanism cannot carry out ``policy`` (``None``: it can).

    The mechanism carries out a fractional allocation ``X``; a policy that decides its grants
    itself (it overrides :meth:`~optsched.sim.Policy.allocate`) has none.
    """
    cls = type(policy)
    if cls.allocate is not Policy.allocate or cls.fractional is Policy.fractional:
        return "Gavel's mechanism carries out a fractional allocation, which this policy has not"
    return None


def type_order(world: World) -> list[str]:
    """The GPU types in the order Gavel walks them: v100, p100, k80, then the others."""
    names = list(world.cluster.names)
    known = [t for t in GAVEL_TYPE_ORDER if t in names]
    return known + [t for t in names if t not in GAVEL_TYPE_ORDER]
