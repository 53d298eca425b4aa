r"""Aonline instances: gang jobs on heterogeneous GPU pools, slotted time.

Model (after Zhou et al., IEEE TCC 2022 / Zhang et al., MobiHoc 2020, in a GPU-gang reading).
Time is slotted; slot :math:`t` covers :math:`[t, t+1)` (DESIGN §2.3). The cluster has GPU
*pools* :math:`g` (one per GPU type); pool :math:`g` holds :math:`C_g` GPUs on servers of
:math:`m_g` GPUs each (the last server holds the remainder, as in
:class:`optsched.sim.GpuType`). Job :math:`j` arrives at slot :math:`a_j`, has weight
:math:`w_j > 0`, needs :math:`W_j` units of work and runs as a *gang* of exactly :math:`n_j`
GPUs of one pool in every slot it runs (all or nothing, any pool, any slot: preemption and
migration between slots are free).

**Rates.** In a slot where its gang sits on *one server* of pool :math:`g` the job does
:math:`r_{jg}` units (``rates``); spread over two or more servers of the pool it does the
penalised :math:`\tilde r_{jg} \le r_{jg}` units (``spread_rates``; by default
:math:`\lfloor \sigma r_{jg} \rfloor` with the instance's ``spread_penalty`` :math:`\sigma`,
i.e. a gang on one server pays no communication penalty and a spread gang loses the fraction
:math:`1 - \sigma` of its rate to cross-server communication). Rates and work are integers, so
that the per-job oracle's dynamic program over progress is exact.

A job *completes* at :math:`C_j = s + 1` where :math:`s` is its last slot with a run, and it must
have done at least :math:`W_j` units by then. The objective of the family is the total weighted
completion time :math:`\sum_j w_j C_j`.
"""

from __future__ import annotations

import html
import math
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError
from optsched.limits import check_size

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_COUNT", "AonlineInstance", "AonlineJob", "GpuPool"]

#: Largest count (GPUs, slots, units of work) a field accepts; larger is refused as absurd.
MAX_COUNT = 10**6

_Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
_NAME = r"^[A-Za-z0-9_.\-]+$"


class GpuPool(Frozen):
    """The GPUs of one type.

    Attributes
    ----------
    name : str
        GPU type name (``v100``, ``k80``, ...).
    count : int
        GPUs of this type (>= 1).
    gpus_per_server : int
        GPUs per server (>= 1); the last server holds ``count mod gpus_per_server`` when that is
        not zero.
    """

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=_NAME)]
    count: _Count
    gpus_per_server: _Count

    @property
    def num_servers(self) -> int:
        """Servers of this pool."""
        return -(-self.count // self.gpus_per_server)

    def server_capacity(self, server: int) -> int:
        """GPUs of server ``server`` (0-based); 0 for an unknown server."""
        if not 0 <= server < self.num_servers:
            return 0
        if server < self.num_servers - 1:
            return self.gpus_per_server
        return self.count - self.gpus_per_server * (self.num_servers - 1)


class AonlineJob(Frozen):
    r"""One training job.

    Attributes
    ----------
    arrival : int
        First slot it may run in (>= 0).
    weight : float
        :math:`w_j > 0`.
    work : int
        Units of work :math:`W_j` (>= 1).
    gpus : int
        Gang size :math:`n_j` (>= 1).
    rates : dict of str to int
        Units per slot with the gang on one server of each pool (0 or absent: cannot run there).
    spread_rates : dict of str to int, optional
        Units per slot with the gang spread over several servers (default
        :math:`\lfloor \sigma r \rfloor`); each at most the pool's ``rates`` entry.
    """

    arrival: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0
    weight: Annotated[float, Field(gt=0, le=1e12, allow_inf_nan=False)] = 1.0
    work: _Count
    gpus: _Count = 1
    rates: dict[Annotated[str, Field(pattern=_NAME)], Annotated[int, Field(ge=0, le=MAX_COUNT)]]
    spread_rates: (
        dict[Annotated[str, Field(pattern=_NAME)], Annotated[int, Field(ge=0, le=MAX_COUNT)]] | None
    ) = None


class AonlineInstance(Frozen):
    r"""Jobs and GPU pools (see the module notes).

    Attributes
    ----------
    kind : "aonline-instance"
        What the file holds (``optsched validate`` and ``optsched schema`` dispatch on it).
    pools : tuple of GpuPool
        At least one; names unique.
    jobs : tuple of AonlineJob
    spread_penalty : float
        :math:`\sigma \in (0, 1]`: default spread rate :math:`\lfloor \sigma r \rfloor`.

    Raises
    ------
    InvalidInstanceError
        Naming the field: duplicate pool names, a rate for an unknown pool, a spread rate above
        the consolidated one, a job that can run nowhere (no pool where its gang fits with a
        positive rate), or absurd sizes.
    """

    kind: Literal["aonline-instance"] = "aonline-instance"
    pools: tuple[GpuPool, ...] = Field(min_length=1)
    jobs: tuple[AonlineJob, ...] = ()
    spread_penalty: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.5

    @model_validator(mode="after")
    def _cross_checks(self) -> AonlineInstance:
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise InvalidInstanceError("pools", f"duplicate pool names in {names}")
        check_size("jobs", len(self.jobs), "max_trace_rows", "jobs")
        known = set(names)
        for j, job in enumerate(self.jobs):
            for key in ("rates", "spread_rates"):
                for g in getattr(job, key) or {}:
                    if g not in known:
                        raise InvalidInstanceError(
                            f"jobs[{j}].{key}.{g}", f"unknown pool; known: {names}"
                        )
            for g, r in (job.spread_rates or {}).items():
                if r > job.rates.get(g, 0):
                    raise InvalidInstanceError(
                        f"jobs[{j}].spread_rates.{g}",
                        f"a spread gang is never faster: {r} > rate {job.rates.get(g, 0)}",
                    )
            if not any(
                self.rate(j, p.name, True) > 0 or self.rate(j, p.name, False) > 0
                for p in self.pools
            ):
                raise InvalidInstanceError(
                    f"jobs[{j}].rates",
                    f"the gang of {job.gpus} GPUs makes progress on no pool "
                    "(it fits no server with a positive rate, nor spread with a positive "
                    "spread rate)",
                )
        return self

    # -- derived quantities ------------------------------------------------------------------

    @cached_property
    def pool_index(self) -> dict[str, int]:
        """Pool name -> position."""
        return {p.name: k for k, p in enumerate(self.pools)}

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @property
    def total_gpus(self) -> int:
        """GPUs of every pool together."""
        return sum(p.count for p in self.pools)

    def rate(self, j: int, pool: str, consolidated: bool) -> int:
        """Units per slot of job ``j``'s gang on ``pool``, on one server or spread.

        0 when the gang cannot be placed that way: consolidated needs a server with ``gpus``
        GPUs, spread needs at least two servers holding ``gpus`` GPUs together.
        """
        job = self.jobs[j]
        p = self.pools[self.pool_index[pool]]
        r = job.rates.get(pool, 0)
        if consolidated:
            fits = any(p.server_capacity(s) >= job.gpus for s in range(p.num_servers))
            return r if fits else 0
        if p.num_servers < 2 or p.count < job.gpus or job.gpus < 2:
            return 0
        if job.spread_rates is not None:
            return job.spread_rates.get(pool, 0)
        return math.floor(self.spread_penalty * r)

    def min_slots(self, j: int) -> int:
        """Fewest slots job ``j`` needs alone on an empty cluster (its best option every slot)."""
        best = max(max(self.rate(j, p.name, True), self.rate(j, p.name, False)) for p in self.pools)
        return -(-self.jobs[j].work // best)

    def sequential_value(self) -> float:
        r"""Total weighted completion time of one job at a time, in arrival order, each alone.

        A feasible schedule's value, hence an upper bound :math:`V \ge \text{OPT}`; the exact
        model uses it to bound every job's completion (:meth:`completion_bounds`).
        """
        t = 0
        value = 0.0
        for j in sorted(range(self.n_jobs), key=lambda i: (self.jobs[i].arrival, i)):
            t = max(t, self.jobs[j].arrival) + self.min_slots(j)
            value += self.jobs[j].weight * t
        return value

    def completion_bounds(self, value: float | None = None) -> list[int]:
        r"""Latest completion any optimal schedule can give each job.

        With a feasible value :math:`V \ge \text{OPT}` (default :meth:`sequential_value`) and
        :math:`C_i \ge a_i + p_i` for every job (:math:`p_i` = :meth:`min_slots`), an optimal
        schedule has :math:`w_j C_j \le V - \sum_{i \ne j} w_i (a_i + p_i)`, so
        :math:`C_j \le D_j := \lfloor (V - \sum_{i \ne j} w_i (a_i + p_i)) / w_j \rfloor`.
        Restricting job :math:`j` to slots before :math:`D_j` loses no optimal schedule.
        """
        v = self.sequential_value() if value is None else value
        low = [job.weight * (job.arrival + self.min_slots(j)) for j, job in enumerate(self.jobs)]
        total = sum(low)
        out = []
        for j, job in enumerate(self.jobs):
            slack = v - (total - low[j])
            # the small relative slack keeps D_j >= a_j + p_j against rounding in the sums
            out.append(max(job.arrival + self.min_slots(j), math.floor(slack / job.weight + 1e-9)))
        return out

    # -- output ------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One row per (job, pool): arrival, weight, work, gpus, rate, spread rate."""
        import pandas as pd

        rows = [
            {
                "job": j,
                "arrival": job.arrival,
                "weight": job.weight,
                "work": job.work,
                "gpus": job.gpus,
                "pool": p.name,
                "rate": self.rate(j, p.name, True),
                "spread_rate": self.rate(j, p.name, False),
            }
            for j, job in enumerate(self.jobs)
            for p in self.pools
        ]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        pools = ",".join(f"{p.name}={p.count}:{p.gpus_per_server}" for p in self.pools)
        return f"AonlineInstance({self.n_jobs} jobs, pools={pools}, sigma={self.spread_penalty:g})"

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"
