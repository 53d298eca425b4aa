"""The options of the Tiresias simulator's mechanism and which policies it carries out.

See :mod:`optsched.sim.engine.tiresias_run` for the mechanism and the guide page
``docs/guide/elasticflow_crosscheck.rst`` (section "Tiresias against its references") for the
reading of the simulator it rests on.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.sim.engine.policy import Policy

__all__ = [
    "TIRESIAS_LIMITS",
    "TIRESIAS_POLICIES",
    "TiresiasMechanism",
    "tiresias_refuses",
]

#: The GPU-seconds at which a job leaves queue 0, then queue 1 (the simulator's ``queue_limit``
#: of its three queues; the third limit, 18000, is never read: the last queue has none).
TIRESIAS_LIMITS: tuple[float, ...] = (3250.0, 7200.0)

#: optsched policy name -> the simulator's schedule it is run as under this mechanism.
TIRESIAS_POLICIES: dict[str, str] = {"tiresias-las": "dlas-gpu"}


@dataclass(frozen=True)
class TiresiasMechanism:
    """Options of the Tiresias simulator's mechanism (:mod:`~.tiresias_run`).

    Attributes
    ----------
    limits : tuple of float
        GPU-seconds of attained service at which a job leaves each queue but the last (one
        queue more than limits). Default ``(3250, 7200)``, the simulator's.
    promote_knob : float or None
        The simulator's starvation rule (its ``dlas-gpu-K`` schedules, ``K`` the knob: 0.5, 1,
        2, 4, 8, 10, 100, 1000): a waiting job of a queue below the first that has run since
        its last promotion goes back to the end of queue 0 once its wait since then reaches
        ``int(K x`` its run time since then``)``; both counts restart at a promotion.
        ``None`` (default): no promotion, the ``dlas-gpu`` schedule.
    jump_division : {"floor", "ceil"}
        How the predicted demotion time ``t + (limit - e) / n`` is made whole: ``"floor"``
        (default) as the simulator runs, under Python 2.7 whose ``/`` of two integers is floor
        division (``run_sim.py`` does not import ``division`` from ``__future__``), so
        ``math.ceil`` of it changes nothing; ``"ceil"`` as the formula reads under Python 3
        (ElasticFlow's copy).
    queue_order : {"entry", "arrival"}
        The order within a queue: ``"entry"`` (default), the simulator's list in order of
        entry re-ordered running jobs first after every decision; ``"arrival"``, by arrival
        then position, whether a job runs or not, as optsched's ``tiresias-las`` orders it
        (a knob for the cross-check).
    """

    limits: tuple[float, ...] = TIRESIAS_LIMITS
    promote_knob: float | None = None
    jump_division: str = "floor"
    queue_order: str = "entry"

    def __post_init__(self) -> None:
        lim = self.limits
        if not isinstance(lim, tuple) or not all(
            not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) and x > 0
            for x in lim
        ):
            raise InvalidInstanceError("limits", f"must be a tuple of numbers > 0, got {lim!r}")
        if any(b <= a for a, b in itertools.pairwise(lim)):
            raise InvalidInstanceError("limits", f"must increase, got {lim!r}")
        k = self.promote_knob
        if k is not None and (
            isinstance(k, bool) or not (isinstance(k, int | float) and math.isfinite(k) and k > 0)
        ):
            raise InvalidInstanceError("promote_knob", f"must be None or a number > 0, got {k!r}")
        if self.queue_order not in ("entry", "arrival"):
            raise InvalidInstanceError(
                "queue_order", f"must be 'entry' or 'arrival', got {self.queue_order!r}"
            )
        if self.jump_division not in ("floor", "ceil"):
            raise InvalidInstanceError(
                "jump_division", f"must be 'floor' or 'ceil', got {self.jump_division!r}"
            )


def tiresias_refuses(policy: Policy) -> str | None:
    """Why the Tiresias simulator's mechanism cannot carry out ``policy`` (``None``: it can)."""
    if policy.name not in TIRESIAS_POLICIES:
        names = ", ".join(sorted(TIRESIAS_POLICIES))
        return (
            "the Tiresias simulator's mechanism runs its own DLAS-GPU, under the policy name "
            f"{names}; this one has no counterpart there"
        )
    return None
