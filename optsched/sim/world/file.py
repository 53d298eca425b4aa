r"""The file format of a simulated world: one JSON (or TOML) document, schema included.

A :class:`~optsched.sim.World` is saved whole, as the simulator sees it:

* ``cluster``: the :class:`~optsched.sim.ClusterSpec` (GPU types, counts, GPUs per server);
* ``restore_s``: the checkpoint/restore cost of a preemption;
* ``restore_on_first_start``: whether a job's first start pays it too (default false);
* ``throughputs``: the throughput table itself (:class:`ThroughputTable`: the reference GPU
  type, the generic per-GPU speeds, every measured rate alone and in pairs, per GPU type and
  consolidation, and the measured points of every scaling profile, from which its concave
  interpolant is rebuilt), **not** a reference to Gavel's ``simulation_throughputs.json``.
  Embedding it makes the file self-contained and exact: a world file alone reproduces a simulation
  bit for bit wherever it is moved, cannot silently change when the referenced file is edited
  or replaced, and covers tables no file holds (:meth:`Throughputs.uniform
  <optsched.sim.Throughputs.uniform>`, whose generic speeds are given rather than derived). The
  price is size: Gavel's table adds about 1 MB;
* ``jobs``: every :class:`~optsched.sim.SimJob` field, the derived ones included (``job_type``,
  ``work``, ``scale``: the result of the model-name mapping and the duration/steps rule of
  :mod:`optsched.sim.world.jobs`, so that loading does not depend on those rules staying the same);
  ``deadline`` is omitted (``null``) when the job has none; ``min_gpus``/``max_gpus``, the gang
  sizes an elastic policy may grant, default to ``num_gpus`` (a rigid gang) when absent;
  ``batch_schedule``, the batch-size phases of a dynamic job
  (:class:`~optsched.sim.world.batch_schedule.BatchSchedule`, field for field), is absent for a
  static job.

Loading goes through the guarded loader (:func:`optsched._io.load_data`: size cap, nesting,
duplicate keys, NaN refused), refuses more jobs than the budget ``max_trace_rows`` before
building any, validates every field by its schema (errors name it: ``jobs[3].work: must be > 0,
got 0``) and then the world's own rules (positions, arrival order, unique ids, gang sizes that
fit a GPU type, job types the table knows and that run somewhere).

Floats are written by :func:`repr` (shortest round-trip form) and read back exactly, so
``World.load(path) == world``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from optsched import limits
from optsched._io import load_data
from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError
from optsched.sim.world.cluster import ClusterSpec

if TYPE_CHECKING:
    from optsched.sim.world.batch_schedule import BatchSchedule
    from optsched.sim.world.jobs import World
    from optsched.sim.world.throughputs import Throughputs

__all__ = [
    "FORMAT",
    "CurveRecord",
    "JobRecord",
    "PairTable",
    "PhaseRecord",
    "RateTable",
    "ScheduleRecord",
    "ThroughputTable",
    "WorldFile",
]

#: The value of the document's ``format`` field.
FORMAT = "optsched.sim.world"

_Rate = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
_Count = Annotated[int, Field(ge=1, strict=True)]


class RateTable(Frozen):
    """Rates of gangs running alone on one GPU type, consolidated or not.

    ``rates``: ``[job_type, gpus, steps per second of the whole gang]`` rows.
    """

    gpu_type: Annotated[str, Field(min_length=1)]
    consolidated: bool
    rates: tuple[tuple[str, _Count, _Rate], ...] = ()


class PairTable(Frozen):
    """Rates of two gangs sharing the same GPUs of one type.

    ``rates``: ``[job_type_a, gpus_a, job_type_b, gpus_b, rate_a, rate_b]`` rows.
    """

    gpu_type: Annotated[str, Field(min_length=1)]
    consolidated: bool
    rates: tuple[tuple[str, _Count, str, _Count, _Rate, _Rate], ...] = ()


class CurveRecord(Frozen):
    """A scaling profile's measured points.

    See :class:`~optsched.sim.world.elasticflow_profiles.ScalingCurve`; the interpolant is rebuilt
    from ``counts`` and ``rates`` on loading.
    """

    gpu_type: Annotated[str, Field(min_length=1)]
    job_type: Annotated[str, Field(min_length=1)]
    counts: tuple[_Count, ...] = Field(min_length=1)
    rates: tuple[_Positive, ...] = Field(min_length=1)


class ThroughputTable(Frozen):
    """A :class:`~optsched.sim.Throughputs` table, in full (see the module notes)."""

    reference: Annotated[str, Field(min_length=1)]
    generic_speed: dict[str, _Positive] = Field(min_length=1)
    alone: tuple[RateTable, ...] = ()
    pairs: tuple[PairTable, ...] = ()
    curves: tuple[CurveRecord, ...] = ()


class PhaseRecord(Frozen):
    """One :class:`~optsched.sim.world.batch_schedule.BatchPhase`, field for field."""

    batch_size: _Count
    epochs: _Count
    end: _Positive
    job_type: Annotated[str, Field(min_length=1)]
    variant_batch: _Count
    steps_per_epoch: _Count


class ScheduleRecord(Frozen):
    """A :class:`~optsched.sim.world.batch_schedule.BatchSchedule`: its mode and phases."""

    mode: Literal["accordion", "gns"]
    epoch_samples: _Count
    phases: tuple[PhaseRecord, ...] = Field(min_length=2)


class JobRecord(Frozen):
    """One :class:`~optsched.sim.SimJob`, field for field (``deadline`` null when none)."""

    index: Annotated[int, Field(ge=0, strict=True)]
    job_id: Annotated[str, Field(min_length=1)]
    arrival: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    num_gpus: _Count
    job_type: str
    work: _Positive
    scale: _Positive
    weight: _Positive
    deadline: Annotated[float, Field(allow_inf_nan=False)] | None = None
    model: str = ""
    user: str = ""
    min_gpus: _Count | None = None
    max_gpus: _Count | None = None
    batch_schedule: ScheduleRecord | None = None


class WorldFile(Frozen):
    """The world document (see the module notes)."""

    format: Literal["optsched.sim.world"] = "optsched.sim.world"
    version: Literal[1] = 1
    cluster: ClusterSpec
    restore_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    restore_on_first_start: bool = False
    throughputs: ThroughputTable
    jobs: tuple[JobRecord, ...] = ()


# -- World <-> document -------------------------------------------------------------------


def table_record(tp: Throughputs) -> ThroughputTable:
    """The document form of a throughput table."""
    return ThroughputTable(
        reference=tp.reference,
        generic_speed=dict(tp.generic_speed),
        alone=tuple(
            RateTable(
                gpu_type=g,
                consolidated=c,
                rates=tuple((j, n, r) for (j, n), r in rates.items()),
            )
            for (g, c), rates in tp.alone.items()
        ),
        pairs=tuple(
            PairTable(
                gpu_type=g,
                consolidated=c,
                rates=tuple((a, n, b, m, ra, rb) for ((a, n), (b, m)), (ra, rb) in rates.items()),
            )
            for (g, c), rates in tp.pairs.items()
        ),
        curves=tuple(
            CurveRecord(gpu_type=g, job_type=j, counts=curve.counts, rates=curve.rates)
            for (g, j), curve in tp.curves.items()
        ),
    )


def table_from_record(rec: ThroughputTable) -> Throughputs:
    """The throughput table of a document (duplicate entries refused, naming them)."""
    from optsched.sim.world.throughputs import Throughputs

    if rec.reference not in rec.generic_speed:
        raise InvalidInstanceError(
            "throughputs.reference",
            f"GPU type {rec.reference!r} has no generic speed ({', '.join(rec.generic_speed)})",
        )
    alone: dict[tuple[str, bool], dict[tuple[str, int], float]] = {}
    for k, tab in enumerate(rec.alone):
        where = f"throughputs.alone[{k}]"
        if (tab.gpu_type, tab.consolidated) in alone:
            raise InvalidInstanceError(where, "a second table for the same GPU type and mode")
        rates: dict[tuple[str, int], float] = {}
        for r, (j, n, rate) in enumerate(tab.rates):
            if (j, n) in rates:
                raise InvalidInstanceError(f"{where}.rates[{r}]", f"repeats ({j!r}, {n})")
            rates[(j, n)] = rate
        alone[(tab.gpu_type, tab.consolidated)] = rates
    pairs: dict[tuple[str, bool], dict[tuple[tuple[str, int], tuple[str, int]], Any]] = {}
    for k, ptab in enumerate(rec.pairs):
        where = f"throughputs.pairs[{k}]"
        if (ptab.gpu_type, ptab.consolidated) in pairs:
            raise InvalidInstanceError(where, "a second table for the same GPU type and mode")
        prates: dict[tuple[tuple[str, int], tuple[str, int]], tuple[float, float]] = {}
        for r, (a, n, b, m, ra, rb) in enumerate(ptab.rates):
            if ((a, n), (b, m)) in prates:
                raise InvalidInstanceError(f"{where}.rates[{r}]", f"repeats ({a!r}, {b!r}, {n})")
            prates[((a, n), (b, m))] = (ra, rb)
        pairs[(ptab.gpu_type, ptab.consolidated)] = prates
    from optsched.sim.world.elasticflow_profiles import ScalingCurve

    curves: dict[tuple[str, str], ScalingCurve] = {}
    for k, crec in enumerate(rec.curves):
        where = f"throughputs.curves[{k}]"
        if (crec.gpu_type, crec.job_type) in curves:
            raise InvalidInstanceError(where, "a second curve for the same GPU type and job type")
        try:
            curves[(crec.gpu_type, crec.job_type)] = ScalingCurve(crec.counts, crec.rates)
        except InvalidInstanceError as exc:
            raise InvalidInstanceError(f"{where}.{exc.field}", exc.message) from None
    return Throughputs(
        alone=alone,
        pairs=pairs,
        generic_speed=dict(rec.generic_speed),
        reference=rec.reference,
        curves=curves,
    )


def world_record(world: World) -> WorldFile:
    """The document form of a world.

    Raises
    ------
    InvalidInstanceError
        The world is in the colocation mode (field ``colocation``): its interference truth
        has no document form.
    """
    if world.colocation is not None:
        raise InvalidInstanceError(
            "colocation",
            "a world in the colocation mode has no world document (its interference truth is "
            "not part of the format); rebuild it from its trace with "
            "optsched.sim.world.colocation.colocation_world_from_trace",
        )
    return WorldFile(
        cluster=world.cluster,
        restore_s=world.restore_s,
        restore_on_first_start=world.restore_on_first_start,
        throughputs=table_record(world.throughputs),
        jobs=tuple(
            JobRecord(
                index=j.index,
                job_id=j.job_id,
                arrival=j.arrival,
                num_gpus=j.num_gpus,
                job_type=j.job_type,
                work=j.work,
                scale=j.scale,
                weight=j.weight,
                deadline=None if math.isnan(j.deadline) else j.deadline,
                model=j.model,
                user=j.user,
                min_gpus=j.min_gpus,
                max_gpus=j.max_gpus,
                batch_schedule=_schedule_record(j.batch_schedule),
            )
            for j in world.jobs
        ),
    )


def world_from_record(rec: WorldFile) -> World:
    """Check a document against the world's rules and build the world.

    Raises
    ------
    InvalidInstanceError
        Naming the job field (``jobs[k].arrival``) or the table field.
    """
    from optsched.sim.world.jobs import SimJob, World

    tp = table_from_record(rec.throughputs)
    cluster = rec.cluster
    for t in cluster.names:
        if t not in tp.gpu_types:
            raise InvalidInstanceError("cluster", f"GPU type {t!r} is not in the throughput table")
    largest = max(t.count for t in cluster.gpu_types)
    jobs: list[SimJob] = []
    seen: set[str] = set()
    last = 0.0
    for k, j in enumerate(rec.jobs):
        where = f"jobs[{k}]"
        if j.index != k:
            raise InvalidInstanceError(f"{where}.index", f"must be its position {k}, got {j.index}")
        if j.job_id in seen:
            raise InvalidInstanceError(f"{where}.job_id", f"duplicate job id {j.job_id!r}")
        seen.add(j.job_id)
        if j.arrival < last:
            raise InvalidInstanceError(
                f"{where}.arrival", f"jobs must be sorted by arrival ({j.arrival} < {last})"
            )
        last = j.arrival
        if j.num_gpus > largest:
            raise InvalidInstanceError(
                f"{where}.num_gpus",
                f"{j.num_gpus} GPUs exceed every GPU type of the cluster (largest: {largest})",
            )
        lo = j.num_gpus if j.min_gpus is None else j.min_gpus
        hi = j.num_gpus if j.max_gpus is None else j.max_gpus
        if lo > j.num_gpus:
            raise InvalidInstanceError(
                f"{where}.min_gpus", f"must be <= num_gpus ({j.num_gpus}), got {lo}"
            )
        if hi < j.num_gpus:
            raise InvalidInstanceError(
                f"{where}.max_gpus", f"must be >= num_gpus ({j.num_gpus}), got {hi}"
            )
        if not tp.knows(j.job_type):
            raise InvalidInstanceError(
                f"{where}.job_type", f"{j.job_type!r} is not in the throughput table"
            )
        if not any(
            tp.rate(j.job_type, j.num_gpus, t.name) > 0 and t.count >= j.num_gpus
            for t in cluster.gpu_types
        ):
            raise InvalidInstanceError(
                f"{where}.job_type",
                f"job type {j.job_type or 'generic'!r} on {j.num_gpus} GPUs runs on no GPU type",
            )
        jobs.append(
            SimJob(
                index=k,
                job_id=j.job_id,
                arrival=j.arrival,
                num_gpus=j.num_gpus,
                job_type=j.job_type,
                work=j.work,
                scale=j.scale,
                weight=j.weight,
                deadline=math.nan if j.deadline is None else j.deadline,
                model=j.model,
                user=j.user,
                min_gpus=lo,
                max_gpus=hi,
                batch_schedule=_schedule_from_record(j, where, tp),
            )
        )
    return World(
        cluster=cluster,
        throughputs=tp,
        jobs=tuple(jobs),
        restore_s=rec.restore_s,
        restore_on_first_start=rec.restore_on_first_start,
    )


def _schedule_record(schedule: BatchSchedule | None) -> ScheduleRecord | None:
    if schedule is None:
        return None
    return ScheduleRecord(
        mode=schedule.mode,  # type: ignore[arg-type]
        epoch_samples=schedule.epoch_samples,
        phases=tuple(
            PhaseRecord(
                batch_size=p.batch_size,
                epochs=p.epochs,
                end=p.end,
                job_type=p.job_type,
                variant_batch=p.variant_batch,
                steps_per_epoch=p.steps_per_epoch,
            )
            for p in schedule.phases
        ),
    )


def _schedule_from_record(job: JobRecord, where: str, tp: Throughputs) -> BatchSchedule | None:
    """The job's schedule, checked: phase ends increase to the work, job types are known."""
    from optsched.sim.world.batch_schedule import BatchPhase, BatchSchedule

    rec = job.batch_schedule
    if rec is None:
        return None
    prev = 0.0
    for k, p in enumerate(rec.phases):
        field = f"{where}.batch_schedule.phases[{k}]"
        if not p.end > prev:
            raise InvalidInstanceError(f"{field}.end", f"must exceed {prev}, got {p.end}")
        prev = p.end
        if not tp.knows(p.job_type):
            raise InvalidInstanceError(
                f"{field}.job_type", f"{p.job_type!r} is not in the throughput table"
            )
    if rec.phases[-1].end != job.work:
        raise InvalidInstanceError(
            f"{where}.batch_schedule.phases[{len(rec.phases) - 1}].end",
            f"must equal the job's work {job.work}, got {rec.phases[-1].end}",
        )
    if rec.phases[0].job_type != job.job_type:
        raise InvalidInstanceError(
            f"{where}.batch_schedule.phases[0].job_type",
            f"must be the job's job type {job.job_type!r}, got {rec.phases[0].job_type!r}",
        )
    return BatchSchedule(
        mode=rec.mode,
        epoch_samples=rec.epoch_samples,
        phases=tuple(
            BatchPhase(
                batch_size=p.batch_size,
                epochs=p.epochs,
                end=p.end,
                job_type=p.job_type,
                variant_batch=p.variant_batch,
                steps_per_epoch=p.steps_per_epoch,
            )
            for p in rec.phases
        ),
    )


def world_from_dict(data: Any) -> World:
    """Validate a parsed world document (the job count against ``max_trace_rows`` first)."""
    if isinstance(data, dict) and isinstance(data.get("jobs"), list):
        # before a single job record is built
        limits.check_size("jobs", len(data["jobs"]), "max_trace_rows", "jobs")
    return world_from_record(WorldFile.from_dict(data))


def load_world(path: str | Path) -> World:
    """Read a world document through the guarded loader (see the module notes).

    Raises
    ------
    InvalidInstanceError
        The file is refused, holds more jobs than ``max_trace_rows``, or a field is invalid;
        the file and the field are named.
    """
    data = load_data(path)
    try:
        return world_from_dict(data)
    except InvalidInstanceError as exc:
        if exc.file is None:
            raise InvalidInstanceError(exc.field, exc.message, exc.errors, file=str(path)) from None
        raise
