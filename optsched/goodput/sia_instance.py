r"""One scheduling round of Sia as an instance: jobs, their configurations, GPU capacities.

Sia (Jayaram Subramanya, Arfeen, Lin, Aghayev, Zhang, Ganger, Harchol-Balter; SOSP 2023)
extends Pollux's goodput-driven scheduling to clusters of several GPU types. Every round it
chooses, for each job, at most one *configuration*, a GPU type with a number of nodes and
GPUs, by an integer program over the jobs' normalised goodputs (:mod:`optsched.goodput.sia_ilp`,
docs page ``formulations/sia_ilp``). This module holds the round's data:

* :class:`SiaInstance` -- GPU types with their capacities, the jobs, and the objective's
  parameters :math:`p` (fairness power), :math:`\lambda_n` (the value of leaving a job without
  GPUs), the clip value and rounding of the powered goodputs;
* :class:`SiaJob` -- one job: its options (:class:`SiaOption`, a configuration with the job's
  normalised goodput on it), the option it held last round, its re-allocation factor and
  whether it must keep that option (a job in the middle of a checkpoint-restore);
* :func:`sia_configs` -- the configurations Sia's policy offers on a GPU type;
* :func:`realloc_factor` -- Pollux's re-allocation factor as Sia's policy applies it;
* :func:`coefficients` -- every option's objective coefficient
  :math:`\min(C, \mathrm{round}(\hat g^{\,p}, d))`;
* :func:`generate_instance` -- a seeded random round.

An adaptive job (Sia's default) has one option per configuration of every GPU type; a rigid job
one option per GPU type, all with its fixed GPU count. Both are the same record here.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from optsched import limits
from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

__all__ = [
    "DEFAULT_CLIP",
    "DEFAULT_DECIMALS",
    "DEFAULT_LAMBDA_N",
    "DEFAULT_P",
    "RESTART_PENALTIES",
    "SiaGpuType",
    "SiaInstance",
    "SiaJob",
    "SiaOption",
    "coefficients",
    "generate_instance",
    "realloc_factor",
    "sia_configs",
]

#: Sia's default fairness power :math:`p` (``simulator_config.sia_default_p_val``) [S].
DEFAULT_P = -0.5
#: Sia's default :math:`\lambda_n`, the objective's value of a job left without GPUs [S].
DEFAULT_LAMBDA_N = 1.1
#: Powered goodputs above this are clipped to it (``sia_goodput_clip_val``) [S].
DEFAULT_CLIP = 3000.0
#: Powered goodputs are rounded to this many decimals before the solve (``np.round(..., 2)``) [S].
DEFAULT_DECIMALS = 2

#: Checkpoint-restore seconds per model that Sia's policy charges a restart
#: (``get_restart_penalty`` in its ``sia.py``; 30 s for any other model) [S].
RESTART_PENALTIES: dict[str, float] = {
    "deepspeech": 25.0,
    "imagenet": 250.0,
    "cifar": 30.0,
    "bert": 120.0,
    "yolov3": 45.0,
}

_NAME = r"^[A-Za-z0-9_.:+\-]+$"


def sia_configs(gpus_per_node: int, nodes: int) -> list[tuple[int, int]]:
    r"""The (nodes, GPUs) configurations Sia's policy offers on a GPU type, in its order.

    One node with 1, 2, 4, ... GPUs (the powers of two below ``gpus_per_node``) and a whole
    node, then :math:`k` whole nodes for :math:`k = 2, \dots,` ``nodes``; for 4 and 8 GPUs per
    node this is Sia's ``CONFIGS_4GPU`` / ``CONFIGS_8GPU`` cut at ``nodes`` [S].

    Examples
    --------
    >>> sia_configs(4, 3)
    [(1, 1), (1, 2), (1, 4), (2, 8), (3, 12)]
    >>> sia_configs(8, 2)
    [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16)]
    """
    if gpus_per_node < 1:
        raise InvalidInstanceError("gpus_per_node", f"must be >= 1, got {gpus_per_node}")
    if nodes < 1:
        raise InvalidInstanceError("nodes", f"must be >= 1, got {nodes}")
    single = []
    g = 1
    while g < gpus_per_node:
        single.append((1, g))
        g *= 2
    single.append((1, gpus_per_node))
    return single + [(k, k * gpus_per_node) for k in range(2, nodes + 1)]


def realloc_factor(age: float, num_restarts: int, restart_penalty: float) -> float:
    r"""Pollux's re-allocation factor, as Sia's policy computes it for a job.

    .. math:: r = \frac{\max(a - n\,\delta,\ 0)}{a + \delta},\qquad r = 1 \text{ if } a < \delta,

    with :math:`a` the job's age (seconds since submission), :math:`n` its restarts so far and
    :math:`\delta` its restart penalty (:data:`RESTART_PENALTIES`) [S]. Every option but the one
    the job holds has its goodput multiplied by :math:`r` (a job that holds none is not scaled).

    Examples
    --------
    >>> realloc_factor(600.0, 2, 30.0)
    0.8571428571428571
    >>> realloc_factor(10.0, 0, 30.0)
    1.0
    """
    if not (math.isfinite(age) and age >= 0):
        raise InvalidInstanceError("age", f"must be a finite number >= 0, got {age}")
    if num_restarts < 0:
        raise InvalidInstanceError("num_restarts", f"must be >= 0, got {num_restarts}")
    if not (math.isfinite(restart_penalty) and restart_penalty > 0):
        raise InvalidInstanceError(
            "restart_penalty", f"must be a finite number > 0, got {restart_penalty}"
        )
    if age < restart_penalty:
        return 1.0
    return max(age - num_restarts * restart_penalty, 0.0) / (age + restart_penalty)


class SiaGpuType(Frozen):
    """A GPU type of the cluster.

    Attributes
    ----------
    name : str
    gpus : int
        GPUs of this type in the cluster: the capacity row of the model.
    gpus_per_node : int
        GPUs per node (what :func:`sia_configs` builds configurations from; the model itself
        counts GPUs only).
    """

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=_NAME)]
    gpus: Annotated[int, Field(ge=0)]
    gpus_per_node: Annotated[int, Field(ge=1)] = 8


class SiaOption(Frozen):
    """One configuration a job may be given, with its normalised goodput there.

    Attributes
    ----------
    gpu_type : str
        A type of the instance.
    gpus : int
        GPUs it takes of that type.
    nodes : int
        Nodes it spans (reported, not constrained: Sia's model counts GPUs per type).
    goodput : float
        The job's goodput on this configuration, normalised as Sia does (its smallest valid
        configuration anywhere has goodput 1 or the job's scale unit), before the
        re-allocation factor. Sia puts :math:`10^{-4}` on configurations a job cannot use.
    """

    gpu_type: Annotated[str, Field(min_length=1, max_length=64, pattern=_NAME)]
    gpus: Annotated[int, Field(ge=1)]
    nodes: Annotated[int, Field(ge=1)] = 1
    goodput: Annotated[float, Field(gt=0, allow_inf_nan=False)]


class SiaJob(Frozen):
    r"""One job of the round.

    Attributes
    ----------
    name : str
    options : tuple of SiaOption
        The configurations open to the job (at least one).
    previous : int or None
        Index into ``options`` of what the job held last round (``None``: nothing).
    realloc_factor : float
        :math:`r_j \in [0, 1]` multiplying the goodput of every option but ``previous`` (of
        none when ``previous`` is ``None``: a job holding nothing has nothing to restart from).
    pinned : bool
        The job must keep ``previous`` this round (Sia's checkpoint-restore rule).
    weight : float
        Sia's job weight :math:`w_j` on the goodput term (all ones in its simulator).
    """

    name: Annotated[str, Field(min_length=1, max_length=128)]
    options: tuple[SiaOption, ...] = Field(min_length=1)
    previous: Annotated[int, Field(ge=0)] | None = None
    realloc_factor: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 1.0
    pinned: bool = False
    weight: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0

    @model_validator(mode="after")
    def _check(self) -> SiaJob:
        if self.previous is not None and self.previous >= len(self.options):
            raise InvalidInstanceError(
                "previous",
                f"must index one of the job's {len(self.options)} options, got {self.previous}",
            )
        if self.pinned and self.previous is None:
            raise InvalidInstanceError(
                "pinned", "a pinned job needs the option it holds (previous)"
            )
        return self


class SiaInstance(Frozen):
    r"""One Sia scheduling round.

    Attributes
    ----------
    gpu_types : tuple of SiaGpuType
        Unique names, in Sia's cluster order.
    jobs : tuple of SiaJob
        Unique names; every option's ``gpu_type`` a type of the instance.
    p : float
        Fairness power, not 0: :math:`p < 0` minimises, :math:`p > 0` maximises.
    lambda_n : float
        Objective value of a job left without GPUs (Sia: :math:`\lambda_n = 1.1` with
        :math:`p = -0.5`).
    clip : float
        Powered goodputs above it are set to it.
    decimals : int or None
        Decimals the powered goodputs are rounded to (``None``: not rounded).

    Raises
    ------
    InvalidInstanceError
        A field out of range, a duplicate name, an unknown GPU type, or pinned jobs that
        together exceed a type's GPUs (the round would have no feasible allocation).
    """

    gpu_types: tuple[SiaGpuType, ...] = Field(min_length=1)
    jobs: tuple[SiaJob, ...] = ()
    p: Annotated[float, Field(allow_inf_nan=False)] = DEFAULT_P
    lambda_n: Annotated[float, Field(allow_inf_nan=False)] = DEFAULT_LAMBDA_N
    clip: Annotated[float, Field(gt=0, allow_inf_nan=False)] = DEFAULT_CLIP
    decimals: Annotated[int, Field(ge=0, le=12)] | None = DEFAULT_DECIMALS

    @model_validator(mode="after")
    def _check(self) -> SiaInstance:
        if self.p == 0:
            raise InvalidInstanceError("p", "must not be 0 (Sia's objective is goodput ** p)")
        names = [t.name for t in self.gpu_types]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise InvalidInstanceError(f"gpu_types[{i}].name", f"duplicate GPU type {name!r}")
        seen: set[str] = set()
        pinned_use = dict.fromkeys(names, 0)
        cells = 0
        for j, job in enumerate(self.jobs):
            if job.name in seen:
                raise InvalidInstanceError(f"jobs[{j}].name", f"duplicate job {job.name!r}")
            seen.add(job.name)
            cells += len(job.options)
            for o, opt in enumerate(job.options):
                if opt.gpu_type not in pinned_use:
                    raise InvalidInstanceError(
                        f"jobs[{j}].options[{o}].gpu_type",
                        f"unknown GPU type {opt.gpu_type!r}; the instance has {', '.join(names)}",
                    )
            if job.pinned and job.previous is not None:
                held = job.options[job.previous]
                pinned_use[held.gpu_type] += held.gpus
        limits.check_size("jobs.options", cells, "max_model_variables", "options")
        for t in self.gpu_types:
            if pinned_use[t.name] > t.gpus:
                raise InvalidInstanceError(
                    "jobs.pinned",
                    f"pinned jobs hold {pinned_use[t.name]} GPUs of type {t.name!r}, which has "
                    f"{t.gpus}",
                )
        return self

    @property
    def type_names(self) -> tuple[str, ...]:
        """GPU type names, in order."""
        return tuple(t.name for t in self.gpu_types)

    @property
    def sense(self) -> str:
        """``"min"`` when :math:`p < 0`, else ``"max"``."""
        return "min" if self.p < 0 else "max"


def coefficients(instance: SiaInstance) -> list[NDArray[np.float64]]:
    r"""Each job's objective coefficient on each of its options.

    .. math:: a_{jo} = \min\!\big(C,\ \mathrm{round}_d(\hat g_{jo}^{\,p})\big),\qquad
              \hat g_{jo} = g_{jo} \cdot (1 \text{ if } o = \mathrm{prev}_j
              \text{ or the job holds nothing, else } r_j),

    rounded as NumPy's ``np.round`` does (Sia's code), in double precision. A goodput scaled to
    0 by :math:`r_j = 0` powers to :math:`+\infty` for :math:`p < 0`, which the clip bounds.
    """
    out = []
    for job in instance.jobs:
        g = np.array([opt.goodput for opt in job.options], dtype=np.float64)
        scale = np.ones(g.shape)
        if job.previous is not None:
            # Sia scales a job's goodputs only when it holds a configuration to move from.
            scale[:] = job.realloc_factor
            scale[job.previous] = 1.0
        with np.errstate(divide="ignore", over="ignore"):
            a = np.power(g * scale, instance.p)
        if instance.decimals is not None:
            a = np.round(a, decimals=instance.decimals)
        out.append(np.minimum(a, instance.clip))
    return out


def _adaptive_options(
    rng: np.random.Generator, types: list[SiaGpuType], max_gpus: int
) -> list[SiaOption]:
    """Every Sia configuration of every type up to ``max_gpus``, with a concave speedup."""
    options = []
    for t in types:
        speed = float(rng.uniform(0.5, 3.0))
        loss = float(rng.uniform(0.0, 0.3))
        nodes = max(1, t.gpus // t.gpus_per_node)
        for n, k in sia_configs(t.gpus_per_node, nodes):
            if k > min(max_gpus, t.gpus):
                continue
            options.append(
                SiaOption(
                    gpu_type=t.name,
                    gpus=k,
                    nodes=n,
                    goodput=speed * k / (1.0 + loss * (k - 1)),
                )
            )
    low = min(o.goodput for o in options)
    return [o.model_copy(update={"goodput": o.goodput / low}) for o in options]


def generate_instance(
    num_jobs: int = 8,
    *,
    seed: int = 0,
    num_types: int = 2,
    rigid_fraction: float = 0.25,
    p: float = DEFAULT_P,
    lambda_n: float = DEFAULT_LAMBDA_N,
) -> SiaInstance:
    r"""A seeded random round: ``num_types`` GPU types, adaptive and rigid jobs.

    Types have 4 or 8 GPUs per node and 1-3 nodes; an adaptive job gets every Sia configuration
    of every type up to a random largest size, with goodput :math:`s_t k / (1 + \ell (k-1))`
    normalised to a smallest value of 1; a rigid job one option per type with a fixed GPU count.
    About a third of the jobs held an option last round (re-allocation factor in
    :math:`[0.5, 1]`), and a job that holds one is pinned with probability 0.1 while the pinned
    jobs still fit.

    Examples
    --------
    >>> inst = generate_instance(5, seed=1)
    >>> len(inst.jobs), inst.type_names
    (5, ('t0', 't1'))
    """
    if num_jobs < 0:
        raise InvalidInstanceError("num_jobs", f"must be >= 0, got {num_jobs}")
    if num_types < 1:
        raise InvalidInstanceError("num_types", f"must be >= 1, got {num_types}")
    if not 0.0 <= rigid_fraction <= 1.0:
        raise InvalidInstanceError("rigid_fraction", f"must be in [0, 1], got {rigid_fraction}")
    rng = np.random.default_rng(seed)
    types = []
    for i in range(num_types):
        per_node = int(rng.choice([4, 8]))
        types.append(
            SiaGpuType(
                name=f"t{i}", gpus=per_node * int(rng.integers(1, 4)), gpus_per_node=per_node
            )
        )
    jobs = []
    free = {t.name: t.gpus for t in types}
    for j in range(num_jobs):
        if rng.random() < rigid_fraction:
            k = int(rng.choice([1, 2, 4]))
            base = float(rng.uniform(1.0, 2.0))
            options = [
                SiaOption(gpu_type=t.name, gpus=k, nodes=-(-k // t.gpus_per_node), goodput=g)
                for t, g in zip(
                    types, k * base * rng.uniform(1.0, 3.0, size=len(types)), strict=True
                )
                if k <= t.gpus
            ]
            if not options:
                options = [SiaOption(gpu_type=types[0].name, gpus=1, goodput=1.0)]
        else:
            options = _adaptive_options(rng, types, int(rng.choice([1, 2, 4, 8, 16])))
        previous = int(rng.integers(len(options))) if rng.random() < 1 / 3 else None
        held = options[previous] if previous is not None else None
        pinned = bool(held is not None and rng.random() < 0.1 and free[held.gpu_type] >= held.gpus)
        if pinned and held is not None:
            free[held.gpu_type] -= held.gpus
        jobs.append(
            SiaJob(
                name=f"job{j}",
                options=tuple(options),
                previous=previous,
                realloc_factor=float(rng.uniform(0.5, 1.0)) if previous is not None else 1.0,
                pinned=pinned,
            )
        )
    return SiaInstance(gpu_types=tuple(types), jobs=tuple(jobs), p=p, lambda_n=lambda_n)
