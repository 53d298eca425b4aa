r"""Offered load of a world, and the same arrivals compressed or stretched to a target load.

The offered load is the GPU-time the jobs ask for, run alone on their fastest type, over the
GPU-time the cluster offers while they arrive:

.. math::

    \lambda = \frac{\sum_j n_j\, T^{iso}_j}{G\,(a_{\max} - a_{\min})}

with :math:`n_j` the gang size, :math:`T^{iso}_j` the job's isolated time on its fastest type
(:meth:`World.isolated_seconds <optsched.sim.World.isolated_seconds>`), :math:`G` the
cluster's GPUs and :math:`a` the arrivals. Public traces replayed on a given cluster are often
far from loaded (ElasticFlow's ``cluster10`` runs at about 2%); questions about scheduling
quality need :math:`\lambda` near or above 0.8, which :func:`at_offered_load` gives by scaling
the inter-arrival times by one factor (the order and relative spacing of arrivals are kept).
"""

from __future__ import annotations

import dataclasses
import math

from optsched.errors import InvalidInstanceError
from optsched.limits import RANGES, check_range
from optsched.sim.world.jobs import World

__all__ = ["at_arrival_rate", "at_offered_load", "offered_load"]


def offered_load(world: World) -> float:
    r""":math:`\lambda` of ``world`` (``inf`` when every job arrives at once)."""
    if not world.jobs:
        raise InvalidInstanceError("jobs", "a world with no job has no load")
    demand = sum(j.num_gpus * world.isolated_seconds(j) for j in world.jobs)
    arrivals = [j.arrival for j in world.jobs]
    span = max(arrivals) - min(arrivals)
    gpus = sum(t.count for t in world.cluster.gpu_types)
    return math.inf if span <= 0 else demand / (gpus * span)


def _check_last_arrival(world: World, stretch: float) -> None:
    """Refuse a scaling whose last arrival leaves the range of a trace's own arrivals.

    Both scalings keep the first arrival's distance to 0 at most ``stretch`` times; the last
    arrival times ``stretch`` bounds every scaled arrival.
    """
    last = max((j.arrival for j in world.jobs), default=0.0)
    top = RANGES["arrival"].high
    if last * stretch > top:
        raise InvalidInstanceError(
            "load",
            f"would move the last arrival to {last * stretch:.3g} s, beyond {top:g} s (the "
            "largest arrival a trace may hold)",
        )


def at_offered_load(world: World, load: float) -> World:
    """``world`` with its inter-arrival times scaled so that :func:`offered_load` is ``load``.

    Arrivals keep their first value and order; deadlines move with their job's arrival (the
    slack ``deadline - arrival`` is kept).

    Raises
    ------
    InvalidInstanceError
        ``load`` outside ``RANGES["offered_load"]`` (:mod:`optsched.limits`, field ``load``),
        a scaled arrival beyond ``1e12`` s, or every job arriving at once.
    """
    check_range("load", load, "offered_load")
    now = offered_load(world)
    if math.isinf(now):
        raise InvalidInstanceError("load", "every job arrives at once: no spacing to scale")
    factor = now / float(load)
    _check_last_arrival(world, factor)
    first = min(j.arrival for j in world.jobs)
    jobs = []
    for j in world.jobs:
        arrival = first + (j.arrival - first) * factor
        deadline = j.deadline if math.isnan(j.deadline) else j.deadline - j.arrival + arrival
        jobs.append(dataclasses.replace(j, arrival=arrival, deadline=deadline))
    return dataclasses.replace(world, jobs=tuple(jobs))


def at_arrival_rate(world: World, factor: float) -> World:
    """``world`` with every arrival divided by ``factor`` (arrivals ``factor`` times as dense).

    The arrival-rate factor of ``optsched sim sweep --loads``: 2 halves every arrival time
    (about twice the load), 0.5 doubles it. Deadlines keep their slack.

    Raises
    ------
    InvalidInstanceError
        ``factor`` outside ``RANGES["load"]`` (:mod:`optsched.limits`, field ``load``), or
        a scaled arrival beyond ``1e12`` s.
    """
    check_range("load", factor, "load")
    _check_last_arrival(world, 1.0 / float(factor))
    jobs = []
    for j in world.jobs:
        arrival = j.arrival / float(factor)
        deadline = j.deadline if math.isnan(j.deadline) else j.deadline - j.arrival + arrival
        jobs.append(dataclasses.replace(j, arrival=arrival, deadline=deadline))
    return dataclasses.replace(world, jobs=tuple(jobs))
