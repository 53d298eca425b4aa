r"""Measured training throughputs per (job type, GPUs) on each GPU type, alone and in pairs.

The table follows Gavel's ``simulation_throughputs.json`` (Narayanan et al., OSDI 2020):
``{gpu_type: {"('<job type>', <scale factor>)": {"null": rate, "('<other type>', <sf>)":
[rate_self, rate_other], ...}}}``, rates in steps (iterations) per second of the whole gang.
The key ``"null"`` is the job alone; any other key is the job co-located (space sharing the same
GPUs) with that other job, the pair ``[rate of this job, rate of the other]``. GPU types named
``<type>_unconsolidated`` hold the rates of a gang spread over more servers than it needs.

Lookup rules (written here once; the engine and the validator both use :meth:`Throughputs.rate`
and :meth:`Throughputs.pair_rates`):

* **GPU counts not in the table** (the file has 1, 2, 4 and 8): the rate of the largest measured
  count ``n0 <= n`` scaled linearly by ``n / n0`` (the smallest measured count when ``n`` is below
  all), i.e. perfect weak scaling beyond the measurements.
* **Scaling profiles** (:meth:`Throughputs.from_scaling_profiles`, ElasticFlow's CSVs): a job
  type with a profile on the GPU type takes its concave interpolant for *every* count (the rule
  of :mod:`optsched.sim.world.elasticflow_profiles`: concave, non-decreasing, flat beyond the
  largest
  measured count), instead of the linear scaling above.
* **Unconsolidated rate missing**: the consolidated rate (no penalty known).
* **Pairs**: only the measured pairs of the same GPU count may share; a missing pair or a
  measured rate of 0 (the pair does not fit in GPU memory) means "cannot share".
* **Generic jobs** (job type ``""``: a model the mapping of :mod:`optsched.sim.jobs` does not
  know): rate ``n * speed[gpu_type]`` steps/s on ``n`` GPUs, where ``speed`` is
  :attr:`Throughputs.generic_speed`: for a Gavel table, the geometric mean over the job types
  measured on both types of the one-GPU speedup ``T(j, 1, g) / T(j, 1, ref)`` relative to the
  reference type ``ref`` (1.0 on ``ref``); for :meth:`Throughputs.uniform`, the speeds given;
  for :meth:`Throughputs.from_scaling_profiles`, the same geometric mean over the profiled job
  types.
  A generic job's *work* is then its duration times its reference rate, so its isolated run on
  ``ref`` takes exactly its trace duration.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from optsched._io import load_data
from optsched.errors import InvalidInstanceError
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles, profile_job_type

__all__ = [
    "GENERIC",
    "KNOWN_TYPE_ORDER",
    "UNCONSOLIDATED_SUFFIX",
    "Throughputs",
    "load_throughputs",
    "type_rank",
]

#: The job type of jobs whose model is not in the table.
GENERIC = ""
#: Suffix of the GPU types holding unconsolidated rates in Gavel's file.
UNCONSOLIDATED_SUFFIX = "_unconsolidated"

_KEY = re.compile(r"^\('(.+)',\s*(\d{1,4})\)$")

Key = tuple[str, int]


@dataclass(frozen=True)
class Throughputs:
    """Throughput table (steps/s of the whole gang).

    Attributes
    ----------
    alone : dict
        ``alone[(gpu_type, consolidated)][(job_type, n)]`` = rate alone.
    pairs : dict
        ``pairs[(gpu_type, consolidated)][((a, n), (b, n))]`` = ``(rate of a, rate of b)``.
    generic_speed : dict
        Per-GPU rate of a generic job on each GPU type (see the module notes).
    reference : str
        The reference GPU type (trace durations are taken as measured on it).
    curves : dict
        ``curves[(gpu_type, job_type)]``: a scaling profile's interpolant, used for every GPU
        count of that job type on that type (empty for Gavel tables).
    source : str
        Where the rates come from, stated in every table, record and comparison made with
        them: ``"uniform"`` (:meth:`uniform`), ``"gavel"`` (Gavel's measured table shipped
        with optsched), a file path, ``"profiles:<types>"``; ``""`` when built by hand.
        Not part of equality (two tables of the same rates are the same table).
    """

    alone: Mapping[tuple[str, bool], Mapping[Key, float]]
    pairs: Mapping[tuple[str, bool], Mapping[tuple[Key, Key], tuple[float, float]]]
    generic_speed: Mapping[str, float]
    reference: str
    curves: Mapping[tuple[str, str], ScalingCurve] = field(default_factory=dict)
    source: str = field(default="", compare=False)
    _counts: dict[tuple[str, bool, str], tuple[int, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def uniform(
        cls,
        gpu_types: Mapping[str, float] | tuple[str, ...],
        *,
        reference: str | None = None,
    ) -> Throughputs:
        """A table without job types: every job is generic, rate ``n * speed[type]``.

        Parameters
        ----------
        gpu_types : mapping of str to float, or tuple of str
            Per-GPU speed of each type (all 1.0 when only names are given).
        reference : str, optional
            The reference type (default: the first in the canonical order of
            :func:`type_rank`, fastest first, so that the order the types are listed in never
            matters; ``v100`` among equally fast Gavel types).
        """
        speed = dict(gpu_types) if isinstance(gpu_types, Mapping) else dict.fromkeys(gpu_types, 1.0)
        if not speed:
            raise InvalidInstanceError("gpu_types", "must name at least one GPU type")
        for name, s in speed.items():
            if not (isinstance(s, int | float) and math.isfinite(s) and s > 0):
                raise InvalidInstanceError(f"gpu_types.{name}", f"must be a speed > 0, got {s!r}")
        ref = reference if reference is not None else min(speed, key=lambda t: type_rank(t, speed))
        if ref not in speed:
            raise InvalidInstanceError("reference", f"unknown GPU type {ref!r}")
        return cls(alone={}, pairs={}, generic_speed=speed, reference=ref, source="uniform")

    @classmethod
    def from_scaling_profiles(
        cls, profiles: Iterable[ScalingProfiles], *, reference: str | None = None
    ) -> Throughputs:
        """A table from ElasticFlow scaling profiles, one :class:`ScalingProfiles` per GPU type.

        The job type of model ``m`` at global batch size ``b`` is ``"m (batch size b)"``
        (:func:`~optsched.sim.world.elasticflow_profiles.profile_job_type`), so a trace job of model
        ``m`` takes the profile of its batch size (the nearest measured one in log scale, by
        :func:`~optsched.sim.world.jobs.job_type_for`). A model without a profile is a generic job
        (module notes).

        Parameters
        ----------
        profiles : iterable of ScalingProfiles
            At most one per GPU type.
        reference : str, optional
            The reference GPU type (default: the first in the canonical order, as
            :meth:`uniform`).

        Raises
        ------
        InvalidInstanceError
            No profiles, a GPU type given twice, an unknown ``reference``.
        """
        by_type: dict[str, ScalingProfiles] = {}
        for p in profiles:
            if p.gpu_type in by_type:
                raise InvalidInstanceError("gpu_type", f"profiles of {p.gpu_type!r} given twice")
            by_type[p.gpu_type] = p
        if not by_type:
            raise InvalidInstanceError(
                "profiles", "must hold the profiles of one GPU type at least"
            )
        alone: dict[tuple[str, bool], dict[Key, float]] = {}
        curves: dict[tuple[str, str], ScalingCurve] = {}
        for g, p in by_type.items():
            tab = alone.setdefault((g, True), {})
            for (model, batch), curve in p.curves.items():
                jt = profile_job_type(model, batch)
                curves[(g, jt)] = curve
                # the measured counts also enter the table, so that job_types/knows see them
                for n in curve.counts:
                    tab[(jt, n)] = curve(n)
        one = {g: {jt: curves[(g, jt)](1) for (gg, jt) in curves if gg == g} for g in by_type}
        provisional = dict.fromkeys(by_type, 1.0)
        ref = (
            reference
            if reference is not None
            else min(by_type, key=lambda t: type_rank(t, provisional))
        )
        if ref not in by_type:
            raise InvalidInstanceError(
                "reference", f"GPU type {ref!r} has no profiles ({', '.join(sorted(by_type))})"
            )
        speed: dict[str, float] = {}
        for g in by_type:
            logs = [math.log(r / one[ref][jt]) for jt, r in one[g].items() if jt in one[ref]]
            speed[g] = math.exp(sum(logs) / len(logs)) if logs else 1.0
        return cls(
            alone=alone,
            pairs={},
            generic_speed=speed,
            reference=ref,
            curves=curves,
            source="profiles:" + ",".join(sorted(by_type)),
        )

    # -- queries --------------------------------------------------------------------------

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """GPU types the table knows."""
        return tuple(self.generic_speed)

    @property
    def job_types(self) -> tuple[str, ...]:
        """Job types measured on at least one GPU type (sorted)."""
        return tuple(sorted({j for table in self.alone.values() for j, _ in table}))

    def knows(self, job_type: str) -> bool:
        """Whether ``job_type`` is measured (the generic type is always known)."""
        return (
            job_type == GENERIC
            or any((job_type, n) in t for t in self.alone.values() for n in (1, 2, 4, 8))
            # a profile may start above 8 GPUs
            or any(j == job_type for _, j in self.curves)
        )

    def _measured_counts(self, gpu_type: str, consolidated: bool, job_type: str) -> tuple[int, ...]:
        key = (gpu_type, consolidated, job_type)
        counts = self._counts.get(key)
        if counts is None:
            table = self.alone.get((gpu_type, consolidated), {})
            counts = tuple(sorted(n for (j, n) in table if j == job_type))
            self._counts[key] = counts
        return counts

    def rate(self, job_type: str, n: int, gpu_type: str, consolidated: bool = True) -> float:
        """Steps per second of a ``job_type`` gang of ``n`` GPUs of ``gpu_type`` running alone.

        Returns 0.0 when the type or job type is unknown on ``gpu_type`` (the job cannot run
        there).
        """
        if job_type == GENERIC:
            return n * self.generic_speed.get(gpu_type, 0.0)
        curve = self.curves.get((gpu_type, job_type))
        if curve is not None:
            return curve(n)
        if not consolidated and not self._measured_counts(gpu_type, False, job_type):
            consolidated = True
        counts = self._measured_counts(gpu_type, consolidated, job_type)
        if not counts:
            return 0.0
        table = self.alone[(gpu_type, consolidated)]
        exact = table.get((job_type, n))
        if exact is not None:
            return exact
        below = [c for c in counts if c <= n]
        n0 = below[-1] if below else counts[0]
        return table[(job_type, n0)] * n / n0

    def pair_rates(
        self, a: str, b: str, n: int, gpu_type: str, consolidated: bool = True
    ) -> tuple[float, float] | None:
        """Rates ``(of a, of b)`` when gangs of ``n`` GPUs of ``a`` and ``b`` share the same GPUs.

        ``None`` when the pair is not measured or either rate is 0 (cannot share).
        """
        table = self.pairs.get((gpu_type, consolidated))
        if table is None:
            return None
        pair = table.get(((a, n), (b, n)))
        if pair is None or pair[0] <= 0 or pair[1] <= 0:
            return None
        return pair


#: Gavel's order of its GPU types (newest first): the tie-break among equally fast types.
KNOWN_TYPE_ORDER: tuple[str, ...] = ("v100", "p100", "k80")


def type_rank(name: str, speed: Mapping[str, float]) -> tuple[float, int, str]:
    """Sort key of a GPU type in the canonical order.

    Fastest generic speed first, ties by :data:`KNOWN_TYPE_ORDER` (unknown types after), then
    by name.
    """
    known = KNOWN_TYPE_ORDER.index(name) if name in KNOWN_TYPE_ORDER else len(KNOWN_TYPE_ORDER)
    return (-speed.get(name, 0.0), known, name)


def _parse_key(key: str, where: str) -> Key:
    m = _KEY.match(key)
    if m is None:
        raise InvalidInstanceError(where, f"expected a key like \"('ResNet-18', 1)\", got {key!r}")
    n = int(m.group(2))
    if n < 1:
        raise InvalidInstanceError(where, f"scale factor must be >= 1, got {n}")
    return m.group(1), n


#: Slowest rate a throughput table may give, in steps per second: one step in about 11.6 days
#: (a slower job would outlast any simulated horizon; 0 says "cannot run" instead).
MIN_RATE = 1e-6
#: Fastest rate, in steps per second (far above any measured training rate; larger ones only
#: overflow the allocation LPs, whose coefficients are products of rates).
MAX_RATE = 1e9


def _rate(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInstanceError(where, f"must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise InvalidInstanceError(where, f"must be a finite rate >= 0, got {value!r}")
    if v != 0 and not (MIN_RATE <= v <= MAX_RATE):
        # a denormal rate made a job last past every horizon (refused as "max_time", an option
        # never given) and a huge one overflowed the round LPs (refused as "c[3]"): both are
        # refused here, naming the table's own field
        raise InvalidInstanceError(
            where,
            f"a rate must be 0 (cannot run) or within [{MIN_RATE:g}, {MAX_RATE:g}] steps/s, "
            f"got {value!r}",
        )
    return v


def load_throughputs(path: str | Path, *, reference: str = "v100") -> Throughputs:
    """Read a throughput table in Gavel's ``simulation_throughputs.json`` format.

    Parameters
    ----------
    path : str or Path
    reference : str
        GPU type on which trace durations are taken to be measured (and relative to which
        :attr:`Throughputs.generic_speed` is computed).

    Raises
    ------
    InvalidInstanceError
        Naming the file and the field path (``v100.('ResNet-18', 1).null``): a rate that is
        negative, NaN, infinite or not a number, a malformed key, a job without its alone
        rate, a GPU type whose every rate is 0, an unknown ``reference``.
    """
    data = load_data(path)
    try:
        table = throughputs_from_dict(data, reference=reference)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(exc.field, exc.message, file=str(path)) from None
    return replace(table, source=str(path))


def throughputs_from_dict(data: object, *, reference: str = "v100") -> Throughputs:
    """Build a :class:`Throughputs` from the parsed JSON mapping (see :func:`load_throughputs`)."""
    if not isinstance(data, dict) or not data:
        raise InvalidInstanceError("<file>", "must be a non-empty object of GPU type -> table")
    alone: dict[tuple[str, bool], dict[Key, float]] = {}
    pairs: dict[tuple[str, bool], dict[tuple[Key, Key], tuple[float, float]]] = {}
    for gpu_key, table in data.items():
        consolidated = not gpu_key.endswith(UNCONSOLIDATED_SUFFIX)
        gpu = gpu_key if consolidated else gpu_key[: -len(UNCONSOLIDATED_SUFFIX)]
        if not isinstance(table, dict):
            raise InvalidInstanceError(gpu_key, "must be an object of job key -> rates")
        a_tab = alone.setdefault((gpu, consolidated), {})
        p_tab = pairs.setdefault((gpu, consolidated), {})
        for job_key, rates in table.items():
            where = f"{gpu_key}.{job_key}"
            key = _parse_key(job_key, where)
            if not isinstance(rates, dict):
                raise InvalidInstanceError(where, "must be an object with a 'null' rate")
            for other, value in rates.items():
                if other == "null":
                    a_tab[key] = _rate(value, f"{where}.null")
                    continue
                okey = _parse_key(other, f"{where}.{other}")
                if not isinstance(value, list) or len(value) != 2:
                    raise InvalidInstanceError(f"{where}.{other}", "must be a pair [self, other]")
                p_tab[(key, okey)] = (
                    _rate(value[0], f"{where}.{other}[0]"),
                    _rate(value[1], f"{where}.{other}[1]"),
                )
            if key not in a_tab:
                raise InvalidInstanceError(where, "has no 'null' (alone) rate")
    for (gpu, consolidated), a_tab in alone.items():
        if a_tab and not any(v > 0 for v in a_tab.values()):
            # a table of zeros would let no job progress on that type: refused, not simulated
            name = gpu if consolidated else gpu + UNCONSOLIDATED_SUFFIX
            raise InvalidInstanceError(name, f"every rate of {name!r} is 0 (no job could progress)")
    types = sorted({g for g, _ in alone})
    if reference not in types:
        raise InvalidInstanceError(
            "reference", f"GPU type {reference!r} is not in the table ({', '.join(types)})"
        )
    ref_tab = alone.get((reference, True), {})
    speed: dict[str, float] = {}
    for g in types:
        tab = alone.get((g, True), {})
        logs = [
            math.log(tab[k] / ref_tab[k])
            for k in ref_tab
            if k[1] == 1 and ref_tab[k] > 0 and tab.get(k, 0.0) > 0
        ]
        speed[g] = math.exp(sum(logs) / len(logs)) if logs else 1.0
    return Throughputs(alone=alone, pairs=pairs, generic_speed=speed, reference=reference)
