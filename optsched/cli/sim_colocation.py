"""``optsched sim compare`` with placement policies: the trace as a colocation world.

When ``--policies`` names a placement policy (``harmony``, ``interference-greedy``,
``consolidate-first``, ``first-fit``, ``load-balance``, ``tetris``, ``random-placement``,
``pairwise-ilp``, ``true-exact``: :mod:`optsched.harmony.sim_policies`), the
trace is read into a world in the colocation mode (:mod:`optsched.sim.world.colocation`) and every
named policy runs on it event-driven; each record passes the simulator's validator and gets
the usual metrics. ``--cluster`` is optional there: by default Harmony's cluster (6 servers
of 4 GPUs and 16 CPUs); a one-type cluster text (``gpu=24:4``) sets the servers and their GPUs.
``--harmony-model PATH`` runs ``harmony`` with another checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from optsched.errors import InvalidInstanceError

__all__ = ["HARMONY_MODEL_OPTION", "colocation_setup", "needs_colocation"]

#: ``--harmony-model PATH``: the checkpoint of the ``harmony`` placement policy.
HARMONY_MODEL_OPTION = click.option(
    "--harmony-model",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Checkpoint of the harmony placement policy (default: the shipped model).",
)


def needs_colocation(names: list[str]) -> bool:
    """Whether a policy of ``names`` places tasks (so the world must be a colocation world)."""
    from optsched.sim.policies import PLACEMENT_POLICIES

    return any(n in PLACEMENT_POLICIES for n in names)


def colocation_setup(
    read: Any,
    cluster: str | None,
    names: list[str],
    harmony_model: Path | None,
    *,
    refused: dict[str, bool],
) -> tuple[Any, list[Any], dict[str, Any]]:
    """The colocation world of the trace ``read``, the policies to run and what to report.

    ``refused`` names the options that have no meaning there (flag -> whether it was given):
    any given is refused, naming the flag.

    Raises
    ------
    InvalidInstanceError
        A refused option, a ``--cluster`` of more than one GPU type or with a partial last
        server, or a trace the colocation mode cannot describe.
    """
    from optsched.harmony.sim_policies import PlacementPolicy
    from optsched.sim.world.colocation import colocation_world_from_trace

    for flag, given in refused.items():
        if given:
            raise InvalidInstanceError(
                flag,
                "not available with placement policies: they run event-driven on a colocation "
                "world (no rounds, exact model, bounds, elastic gangs or Gavel mechanism)",
            )
    sizes: dict[str, Any] = {}
    if cluster is not None:
        from optsched.sim import parse_cluster

        spec = parse_cluster(cluster, field="--cluster")
        if len(spec.gpu_types) != 1:
            raise InvalidInstanceError(
                "--cluster", "placement policies need a cluster of one GPU type (gpu=24:4)"
            )
        t = spec.gpu_types[0]
        if t.count % t.gpus_per_server:
            raise InvalidInstanceError(
                "--cluster",
                f"{t.count} GPUs do not fill servers of {t.gpus_per_server}: every server of "
                "a colocation world is whole",
            )
        sizes = {"n_servers": t.num_servers, "gpus": t.gpus_per_server}
    world = colocation_world_from_trace(read, **sizes)
    policies: list[Any] = [
        PlacementPolicy("harmony", model=harmony_model) if n == "harmony" else n for n in names
    ]
    t = world.cluster.gpu_types[0]
    coloc = world.colocation
    assert coloc is not None
    info = {
        "servers": t.num_servers,
        "gpus_per_server": t.gpus_per_server,
        "cpus_per_server": coloc.cpus_per_server,
        "interference_types": coloc.n_types,
        "spread_penalty": coloc.spread_penalty,
        "harmony_model": None if harmony_model is None else str(harmony_model),
    }
    return world, policies, info
