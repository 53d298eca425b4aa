r"""Brute force: the optimum of a tiny instance by enumerating every placement.

The search space is every server per task (:math:`H^T`), every server per job for ``clwp``
(:math:`H^J`), or every slot per task for ``nlwp`` (GPU slots for GPU tasks, one host slot per
server otherwise). Each candidate is scored by the independent validator
(:func:`optsched.placement.validate`), so brute force shares nothing with the ILPs and checks
them end to end.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from optsched.errors import InvalidInstanceError
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.placement.validator import validate

__all__ = ["MAX_CANDIDATES", "brute_force", "brute_force_all"]

#: Refuse searches with more candidates than this.
MAX_CANDIDATES = 2_000_000


def _space(instance: PlacementInstance, objective: str) -> list[list[tuple[int, int | None]]]:
    """Per item (task, or job for clwp), the choices ``(server, gpu or None)``."""
    servers = range(len(instance.servers))
    anywhere: list[tuple[int, int | None]] = [(h, None) for h in servers]
    if objective == "clwp":
        return [list(anywhere) for _ in instance.jobs]
    if objective != "nlwp":
        return [list(anywhere) for _ in instance.tasks]
    out: list[list[tuple[int, int | None]]] = []
    for t in range(len(instance.tasks)):
        share = instance.spec(t).demand.get("gpu", 0.0)
        if share > 0:
            out.append([(h, g) for h in servers for g in range(instance.servers[h].gpus)])
        else:
            out.append(list(anywhere))
    return out


def brute_force(instance: PlacementInstance, objective: str) -> tuple[float, Placement] | None:
    """The least value of ``objective`` over all feasible placements, and one placement with it.

    Parameters
    ----------
    instance : PlacementInstance
        A tiny instance.
    objective : str
        One of the validator's objectives (``servers``, ``traffic``, ``max-load``,
        ``interference``, ``clwp``, ``nlwp``).

    Returns
    -------
    tuple of (float, Placement) or None
        ``None`` when no placement is feasible.

    Raises
    ------
    InvalidInstanceError
        The search space exceeds :data:`MAX_CANDIDATES` (a ``ValueError``).

    Notes
    -----
    Complexity: the product of the choice counts, times one validation each.
    """
    return brute_force_all(instance, [objective])[objective]


def brute_force_all(
    instance: PlacementInstance, objectives: Sequence[str]
) -> dict[str, tuple[float, Placement] | None]:
    """:func:`brute_force` for several objectives, sharing one enumeration where possible.

    Server-level objectives (all but ``nlwp``) are scored on the same enumeration of a server
    per task (``clwp`` alone enumerates a server per job); ``nlwp`` enumerates slots.

    Raises
    ------
    InvalidInstanceError
        A search space exceeds :data:`MAX_CANDIDATES` (a ``ValueError``).
    """
    out: dict[str, tuple[float, Placement] | None] = {}
    server_level = [o for o in objectives if o != "nlwp"]
    if server_level:
        kind = "clwp" if server_level == ["clwp"] else "servers"
        out.update(_search(instance, kind, server_level))
    if "nlwp" in objectives:
        out.update(_search(instance, "nlwp", ["nlwp"]))
    return out


def _search(
    instance: PlacementInstance, kind: str, objectives: Sequence[str]
) -> dict[str, tuple[float, Placement] | None]:
    space = _space(instance, kind)
    size = 1
    for choices in space:
        size *= len(choices)
    if size > MAX_CANDIDATES:
        raise InvalidInstanceError(
            "instance", f"brute force over {size} placements exceeds {MAX_CANDIDATES}"
        )
    best: dict[str, tuple[float, Placement] | None] = dict.fromkeys(objectives)
    for combo in itertools.product(*space):
        if kind == "clwp":
            per_task = [combo[t.job][0] for t in instance.tasks]
            gpus = None
        else:
            per_task = [h for h, _ in combo]
            gpus = (
                {t: g for t, (_, g) in enumerate(combo) if g is not None}
                if kind == "nlwp"
                else None
            )
        placement = Placement.from_indices(instance, per_task, gpus=gpus, method="brute-force")
        report = validate(instance, placement)
        if not report.ok:
            continue
        for objective in objectives:
            value = report.objectives[objective]
            if value is None:
                continue
            current = best[objective]
            if current is None or value < current[0]:
                best[objective] = (value, placement)
    return best
