"""The ``--mechanism`` options of ``sim run`` and ``sim compare``.

``optsched`` (the engine's own rounds, the default), ``gavel`` (Gavel's round mechanism),
``elasticflow`` (ElasticFlow's simulator's mechanism, with its scaling and restart overhead) and
``elasticflow-no-overhead`` (the same without the overhead: the knob that explains most of the
gap between ElasticFlow's simulator and an overhead-free simulation) and ``tiresias`` (the
Tiresias simulator's ``dlas-gpu``, for ``tiresias-las``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from optsched.errors import InvalidInstanceError

__all__ = [
    "MECHANISMS",
    "clock_from_trace",
    "mechanism_from",
    "mechanism_options",
    "refuse_unsupported",
    "refuses",
    "seed_policy",
]

#: The ``--mechanism`` choices.
MECHANISMS = ("optsched", "gavel", "elasticflow", "elasticflow-no-overhead", "tiresias")


def mechanism_options() -> list[Any]:
    """The click options, in the order to apply them as decorators."""
    return [
        click.option(
            "--mechanism",
            type=click.Choice(list(MECHANISMS)),
            default="optsched",
            show_default=True,
            help="How rounds are carried out: optsched's engine; Gavel's own mechanism "
            "(allocation reset on arrival/completion at most every --reset-interval, per-type "
            "queues, 360 s rounds; guide page 'Gavel's round mechanism'); or ElasticFlow's "
            "(policies elasticflow, edf, tiresias-las and gandiva as its simulator runs them: "
            "admission at arrival by minimum satisfactory share, "
            "power-of-two gangs, buddy placement, decisions at least 60 s apart, its scaling "
            "overhead unless elasticflow-no-overhead; guide page 'ElasticFlow's mechanism'); "
            "or the Tiresias simulator's (tiresias-las as its dlas-gpu: queues in order of "
            "entry, demotion at its predicted jump on a whole-second clock, GPU counting, no "
            "restart cost; guide page 'Cross-check against ElasticFlow's simulator').",
        ),
        click.option(
            "--reset-interval",
            type=float,
            default=None,
            help="With --mechanism gavel: minimum seconds between allocation resets "
            "[default: 1920, Gavel's].",
        ),
        click.option(
            "--mechanism-seed",
            type=int,
            default=None,
            help="With --mechanism gavel: Gavel's --seed (type-order shuffles of the "
            "heterogeneity-agnostic policies, gavel-fifo's draws) [default: 0].",
        ),
    ]


def mechanism_from(name: str, reset_interval: float | None, seed: int | None) -> Any:
    """The ``mechanism`` argument of :func:`optsched.sim.simulate` from the options."""
    from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism
    from optsched.sim.engine.gavel import DEFAULT_RESET_INTERVAL, GavelMechanism
    from optsched.sim.engine.tiresias_options import TiresiasMechanism

    if name != "gavel":
        for flag, value in (("--reset-interval", reset_interval), ("--mechanism-seed", seed)):
            if value is not None:
                raise InvalidInstanceError(flag, "applies only with --mechanism gavel")
        if name.startswith("elasticflow"):
            return ElasticFlowMechanism(overhead=name == "elasticflow")
        if name == "tiresias":
            return TiresiasMechanism()
        return "optsched"
    try:
        return GavelMechanism(
            reset_interval=DEFAULT_RESET_INTERVAL if reset_interval is None else reset_interval,
            seed=0 if seed is None else seed,
        )
    except InvalidInstanceError as exc:
        raise InvalidInstanceError("--reset-interval", exc.message) from None


def clock_from_trace(mechanism: Any, trace: Any) -> Any:
    """ElasticFlow's mechanism with the trace's first arrival as ``clock_origin`` (others as is).

    A world built from a trace starts its clock at the first arrival; ElasticFlow's Gandiva
    rotates its time slices on the trace's own 60 s grid, which this restores.
    """
    from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism

    if not isinstance(mechanism, ElasticFlowMechanism) or len(trace.jobs) == 0:
        return mechanism
    origin = float(trace.jobs["arrival"].min())
    return dataclasses.replace(mechanism, clock_origin=origin)


def refuses(policy: Any, mechanism: Any) -> str | None:
    """Why ``mechanism`` (``mechanism_from``'s value) cannot run ``policy`` (``None``: it can)."""
    if mechanism == "optsched":
        return None
    from optsched.sim.engine.elasticflow_options import (
        ElasticFlowMechanism,
        elasticflow_refuses,
    )
    from optsched.sim.engine.gavel import gavel_refuses
    from optsched.sim.engine.tiresias_options import TiresiasMechanism, tiresias_refuses

    if isinstance(mechanism, ElasticFlowMechanism):
        return elasticflow_refuses(policy)
    if isinstance(mechanism, TiresiasMechanism):
        return tiresias_refuses(policy)
    return gavel_refuses(policy)


def refuse_unsupported(policy: Any, mechanism: Any) -> None:
    """Refuse, naming ``--mechanism`` and ``--policy``, a policy the mechanism cannot run.

    Checked before the trace is read, so that the combination exits 2 at once rather than as
    the simulator's :class:`~optsched.errors.PolicyError` (exit 1) once the run has started.
    """
    why = refuses(policy, mechanism)
    if why is not None:
        names = {"GavelMechanism": "gavel", "TiresiasMechanism": "tiresias"}
        name = names.get(type(mechanism).__name__, "elasticflow")
        raise InvalidInstanceError(
            "--mechanism", f"{name} cannot run --policy {policy.name}: {why}"
        )


def seed_policy(policy: Any, mechanism: Any) -> None:
    """Give a seeded Gavel policy (``gavel-fifo``) the mechanism's seed, as Gavel's --seed."""
    seed = getattr(mechanism, "seed", None)
    if seed is not None and hasattr(policy, "seed"):
        policy.seed = seed
