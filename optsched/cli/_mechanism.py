"""The ``--mechanism`` options of ``sim run`` and ``sim compare`` (Gavel's round mechanism)."""

from __future__ import annotations

from typing import Any

import click

from optsched.errors import InvalidInstanceError

__all__ = ["mechanism_from", "mechanism_options", "refuse_unsupported", "seed_policy"]


def mechanism_options() -> list[Any]:
    """The click options, in the order to apply them as decorators."""
    return [
        click.option(
            "--mechanism",
            type=click.Choice(["optsched", "gavel"]),
            default="optsched",
            show_default=True,
            help="How rounds are carried out: optsched's engine, or Gavel's own mechanism "
            "(allocation reset on arrival/completion at most every --reset-interval, per-type "
            "queues, 360 s rounds; see the guide page 'Gavel's round mechanism').",
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
    from optsched.sim.engine.gavel import DEFAULT_RESET_INTERVAL, GavelMechanism

    if name != "gavel":
        for flag, value in (("--reset-interval", reset_interval), ("--mechanism-seed", seed)):
            if value is not None:
                raise InvalidInstanceError(flag, "applies only with --mechanism gavel")
        return "optsched"
    try:
        return GavelMechanism(
            reset_interval=DEFAULT_RESET_INTERVAL if reset_interval is None else reset_interval,
            seed=0 if seed is None else seed,
        )
    except InvalidInstanceError as exc:
        raise InvalidInstanceError("--reset-interval", exc.message) from None


def refuse_unsupported(policy: Any, mechanism: Any) -> None:
    """Refuse, naming ``--mechanism`` and ``--policy``, a policy Gavel's mechanism cannot run.

    Checked before the trace is read, so that the combination exits 2 at once rather than as
    the simulator's :class:`~optsched.errors.PolicyError` (exit 1) once the run has started.
    """
    if mechanism == "optsched":
        return
    from optsched.sim.engine.gavel import gavel_refuses

    why = gavel_refuses(policy)
    if why is not None:
        raise InvalidInstanceError("--mechanism", f"gavel cannot run --policy {policy.name}: {why}")


def seed_policy(policy: Any, mechanism: Any) -> None:
    """Give a seeded Gavel policy (``gavel-fifo``) the mechanism's seed, as Gavel's --seed."""
    seed = getattr(mechanism, "seed", None)
    if seed is not None and hasattr(policy, "seed"):
        policy.seed = seed
