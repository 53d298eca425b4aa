r"""The simulated world: a cluster, a throughput table, the jobs and the preemption cost.

Jobs come from the normalized job table (one row per job) with the columns

=============== ======= ==================================================================
column          dtype   meaning
=============== ======= ==================================================================
``job_id``      str     unique id
``arrival``     float64 submission time (s), >= 0, sorted
``num_gpus``    int64   gang size (>= 1); all its GPUs of one type, all at once
``model``       str     model name ("" when unknown), mapped to a job type below
``total_steps`` float64 iterations to run (NaN when unknown)
``duration``    float64 seconds when run alone at ``num_gpus`` on the reference type (NaN)
``batch_size``  float64 batch size (NaN when unknown), picks the job type's variant
``weight``      float64 priority weight (> 0)
``deadline``    float64 absolute deadline (s; NaN for none)
``user``        str     user or virtual cluster
=============== ======= ==================================================================

**Work and rates.** A job's work ``W`` is in steps and its rate on ``n`` GPUs of type ``g``
is ``s * T(type, n, g)`` with ``T`` the throughput table (:mod:`optsched.sim.world.throughputs`) and
``s`` a per-job scale:

* ``total_steps`` and ``duration`` both known: ``W = total_steps`` and
  ``s = total_steps / (duration * T(type, num_gpus, ref))``, so that the isolated run on the
  reference type takes exactly the trace duration and the other types keep the table's speedups;
* only ``total_steps``: ``W = total_steps``, ``s = 1`` (the table's rate);
* only ``duration``: ``W = duration * T(type, num_gpus, ref)``, ``s = 1``;
* neither: the row is refused.

**Model names to job types** (:func:`job_type_for`): a model that is itself a job type of the
table (Gavel traces: ``"ResNet-18 (batch size 64)"``, ``"A3C"``) is used as is; a model with
variants of its own name (``"resnet50 (batch size 64)"``: ElasticFlow's scaling profiles) takes
the variant of the nearest batch size, as below; otherwise the
lower-cased name, stripped of ``-`` and ``_``, is looked up in :data:`MODEL_FAMILIES` and the
family's variant with the batch size nearest (in log scale; ties to the smaller; the median
variant when the batch size is unknown) is taken; anything else is the generic type. The families
of models the table does not measure are *proxies* chosen by architecture class, stated here:

============== ==================== =====================================================
model          job type family      why
============== ==================== =====================================================
resnet18       ResNet-18            measured
resnet50       ResNet-50            measured
inception3     ResNet-50            CNN image classifier of similar FLOPs/parameters
vgg16, vgg19   ResNet-50            CNN image classifier (VGG is heavier; a proxy)
bert, gpt2     Transformer          attention-based language models
transformer    Transformer          measured
deepspeech2    LM                   recurrent (LSTM/GRU) sequence model
lm, lstm       LM                   measured
a3c            A3C                  measured
cyclegan       CycleGAN             measured
recommendation Recommendation       measured (NCF-like)
============== ==================== =====================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim.world.batch_schedule import (
    BatchSchedule,
    derive_schedule,
    phase_factor,
    phase_seconds,
)
from optsched.sim.world.cluster import ClusterSpec
from optsched.sim.world.throughputs import GENERIC, Throughputs, type_rank

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from optsched.interference import InterferenceTruth

__all__ = [
    "JOB_COLUMNS",
    "MODEL_FAMILIES",
    "WORLD_IO",
    "ColocationMode",
    "SimJob",
    "World",
    "canonical_cluster",
    "job_type_for",
    "jobs_from_frame",
    "read_job_csv",
]

#: The normalized job-table columns the simulator reads.
JOB_COLUMNS: tuple[str, ...] = (
    "job_id",
    "arrival",
    "num_gpus",
    "model",
    "total_steps",
    "duration",
    "batch_size",
    "weight",
    "deadline",
    "user",
)

#: Model name (lower case, no ``-``/``_``) -> job type family in Gavel's table.
MODEL_FAMILIES: dict[str, str] = {
    "resnet18": "ResNet-18",
    "resnet50": "ResNet-50",
    "inception3": "ResNet-50",
    "inceptionv3": "ResNet-50",
    "vgg16": "ResNet-50",
    "vgg19": "ResNet-50",
    "bert": "Transformer",
    "gpt2": "Transformer",
    "transformer": "Transformer",
    "deepspeech2": "LM",
    "lm": "LM",
    "lstm": "LM",
    "a3c": "A3C",
    "cyclegan": "CycleGAN",
    "recommendation": "Recommendation",
}

_VARIANT = re.compile(r"^(.*) \(batch size (\d+)\)$")


def job_type_for(model: str, batch_size: float, throughputs: Throughputs) -> str:
    """The table's job type for a trace ``model`` (see the module notes); ``""`` is generic."""
    if throughputs.knows(model) and model != GENERIC:
        return model
    # the model's own variants first (scaling profiles name them "<model> (batch size b)")
    types = throughputs.job_types
    own = [
        (int(m.group(2)), jt)
        for jt in types
        if (m := _VARIANT.match(jt)) is not None and m.group(1) == model
    ]
    family = MODEL_FAMILIES.get(model.lower().replace("-", "").replace("_", ""))
    if family is None and not own:
        return GENERIC
    variants: list[tuple[int, str]] = own
    for jt in types if not own else ():
        m = _VARIANT.match(jt)
        if m is not None and m.group(1) == family:
            variants.append((int(m.group(2)), jt))
        elif jt == family:
            return jt
    if not variants:
        return GENERIC
    variants.sort()
    if not (isinstance(batch_size, float | int) and math.isfinite(batch_size) and batch_size > 0):
        return variants[(len(variants) - 1) // 2][1]
    return min(variants, key=lambda v: (abs(math.log(v[0] / batch_size)), v[0]))[1]


@dataclass(frozen=True, slots=True)
class SimJob:
    """One job of the world.

    Attributes
    ----------
    index : int
        Position in :attr:`World.jobs` (0-based).
    job_id : str
    arrival : float
        Seconds.
    num_gpus : int
        Gang size.
    job_type : str
        Throughput-table job type (``""`` generic).
    work : float
        Steps to run.
    scale : float
        Multiplier of the table's rates for this job (see the module notes).
    weight : float
    deadline : float
        Absolute seconds (NaN: none).
    model, user : str
        As in the trace.
    min_gpus, max_gpus : int
        The gang sizes a policy may grant (``Grant.num_gpus``); both default to ``num_gpus``
        (a rigid gang). :meth:`World.elastic` widens them for elastic policies (Optimus,
        ANDREAS). On ``n`` GPUs the job's rate is ``scale * T(type, n, g)`` and its work is
        unchanged.
    batch_schedule : BatchSchedule or None
        The batch-size phases of a dynamic job (Shockwave's ``accordion``/``gns`` modes, see
        :mod:`optsched.sim.world.batch_schedule`): its rate changes at each phase boundary of its
        progress. ``None`` (the default): one batch size throughout.
    """

    index: int
    job_id: str
    arrival: float
    num_gpus: int
    job_type: str
    work: float
    scale: float
    weight: float
    deadline: float
    model: str
    user: str
    min_gpus: int = -1
    max_gpus: int = -1
    batch_schedule: BatchSchedule | None = None

    def __post_init__(self) -> None:
        # one NaN object for "no deadline": containers compare identical elements as equal, so
        # jobs (and worlds) built apart from the same data compare equal although NaN != NaN
        if self.deadline != self.deadline:
            object.__setattr__(self, "deadline", math.nan)
        # -1 (the default) means the rigid gang: both bounds are the requested size
        if self.min_gpus == -1:
            object.__setattr__(self, "min_gpus", self.num_gpus)
        if self.max_gpus == -1:
            object.__setattr__(self, "max_gpus", self.num_gpus)
        if not (1 <= self.min_gpus <= self.num_gpus <= self.max_gpus):
            raise InvalidInstanceError(
                "min_gpus",
                f"job {self.job_id!r}: needs 1 <= min_gpus <= num_gpus <= max_gpus, got "
                f"{self.min_gpus}, {self.num_gpus}, {self.max_gpus}",
            )

    @property
    def elastic(self) -> bool:
        """Whether a policy may grant it another gang size than ``num_gpus``."""
        return self.min_gpus != self.max_gpus


#: The world document's readers and writers (:mod:`optsched.sim.world.file`), by name:
#: ``record`` (World -> WorldFile), ``load`` (path -> World), ``from_dict`` (data -> World) and
#: ``schema`` (-> JSON Schema). Filled by the package (``optsched/sim/world/__init__.py``, which
#: runs before this module is usable), so that this module, which the file format reads, does
#: not import it back; :meth:`World.save`, :meth:`World.load`, ... go through it.
WORLD_IO: dict[str, Callable[..., Any]] = {}


def _world_io(name: str) -> Callable[..., Any]:
    return WORLD_IO[name]


@runtime_checkable
class ColocationMode(Protocol):
    """What a world and its readers use of its colocation mode (``World.colocation``).

    :class:`optsched.sim.world.colocation.Colocation` is the implementation (its notes give
    the meaning of every member); the world names only this interface, so that the
    colocation module, which builds worlds, is imported by its users and never by the world.
    """

    @property
    def truth(self) -> InterferenceTruth: ...
    @property
    def job_types(self) -> Mapping[str, int]: ...
    @property
    def ps(self) -> Mapping[str, int]: ...
    @property
    def cpus_per_server(self) -> float: ...
    @property
    def worker_cpus(self) -> float: ...
    @property
    def ps_cpus(self) -> float: ...
    @property
    def spread_penalty(self) -> float: ...
    @property
    def max_workers(self) -> int: ...
    @property
    def max_ps(self) -> int: ...
    @property
    def n_types(self) -> int: ...

    def check(self, world: World) -> None: ...
    def slowdown(self, job_type: int, counts: np.ndarray) -> float: ...
    def speed_factor(self, job_type: int, neighbours: Sequence[Sequence[int]]) -> float: ...
    def max_slowdown_factor(self, world: World) -> float: ...
    def cpu_use(
        self, servers: Sequence[tuple[int, int]], ps_servers: Sequence[int]
    ) -> dict[int, float]: ...


@dataclass(frozen=True)
class World:
    """Everything a simulation, an exact model and the validator need to agree on.

    Attributes
    ----------
    cluster : ClusterSpec
    throughputs : Throughputs
    jobs : tuple of SimJob
        In arrival order (ties by input order).
    restore_s : float
        Checkpoint/restore cost of a preemption: a job that resumes after having run before
        (after a pause, or in a different placement: another GPU type, other servers) makes no
        progress during the first ``restore_s`` of that run.
    restore_on_first_start : bool
        Charge ``restore_s`` on a job's first start too (the reference semantics of
        Gavel-derived simulators, which count a job's start-up like a restore); by default a
        job's first run starts progressing at once.
    colocation : ColocationMode or None
        The placement-aware mode (:mod:`optsched.sim.world.colocation`): parameter servers, CPUs
        and rates that depend on the jobs sharing a server. ``None`` (the default): rates
        depend on the GPU type and packing pair only.

    **Canonical type order.** The cluster's GPU types are put in one canonical order, whatever
    order they were given in: the throughput table's reference type first, then by decreasing
    generic speed (:attr:`Throughputs.generic_speed`), ties in Gavel's order ``v100, p100,
    k80`` (other types after), then by name (:func:`~optsched.sim.world.throughputs.type_rank`).
    Every tie a policy breaks by type order, and the heterogeneity-agnostic policies' one speed
    per job (the rate on the first type), then read the same order, so a permuted
    ``--cluster`` string gives the same simulation.

    Raises
    ------
    InvalidInstanceError
        ``restore_s`` negative or not finite; a cluster type missing from the table; a
        duplicate job id; a job that can run on no GPU type of the cluster (rate 0 or missing
        wherever its gang fits; the field ``jobs[k].job_type`` and the types are named).
    """

    cluster: ClusterSpec
    throughputs: Throughputs
    jobs: tuple[SimJob, ...]
    restore_s: float = 0.0
    restore_on_first_start: bool = False
    colocation: ColocationMode | None = None

    def __post_init__(self) -> None:
        limits.check_range("restore_s", self.restore_s, "restore_s")
        if not isinstance(self.restore_on_first_start, bool):
            raise InvalidInstanceError(
                "restore_on_first_start", f"must be a bool, got {self.restore_on_first_start!r}"
            )
        _check_types(self.cluster, self.throughputs)
        canonical = canonical_cluster(self.cluster, self.throughputs)
        if canonical.names != self.cluster.names:
            object.__setattr__(self, "cluster", canonical)
        seen: set[str] = set()
        for k, j in enumerate(self.jobs):
            if j.job_id in seen:
                raise InvalidInstanceError("job_id", f"duplicate job id {j.job_id!r}")
            seen.add(j.job_id)
            self._check_runnable(k, j)
        if self.colocation is not None:
            if not isinstance(self.colocation, ColocationMode):
                raise InvalidInstanceError(
                    "colocation", f"must be a Colocation, got {type(self.colocation).__name__}"
                )
            self.colocation.check(self)

    def _check_runnable(self, k: int, job: SimJob) -> None:
        """Refuse a job no GPU type of the cluster can run (it would wait forever)."""
        for t in self.cluster.gpu_types:
            if t.count >= job.num_gpus and self.rate(job, t.name) > 0:
                return
        rates = ", ".join(
            f"{t.name}: {self.rate(job, t.name):g} steps/s on {job.num_gpus} of {t.count} GPUs"
            for t in self.cluster.gpu_types
        )
        raise InvalidInstanceError(
            f"jobs[{k}].job_type",
            f"job {job.job_id!r} (job type {job.job_type or 'generic'!r}, {job.num_gpus} GPUs) "
            f"can run on no GPU type of the cluster ({rates})",
        )

    @property
    def origin(self) -> float:
        """The first arrival (s; 0 without jobs): where spans such as the makespan start.

        Every span-type figure (the ``makespan`` metric and objective, its certified bound and
        its exact optimum) is measured from here, so that it does not depend on where the
        trace's clock started.
        """
        return min((j.arrival for j in self.jobs), default=0.0)

    def rebased(self) -> World:
        """The same world with its clock started at the first arrival (arrivals, deadlines moved).

        A round-based run decides at the times ``k L`` of the world's clock; a trace's clock
        starts anywhere (ElasticFlow's ``cluster10`` at its first arrival 2,266,647 s), so the
        rounds would fall at another phase of the arrivals for the same jobs shifted in time.
        Rebased, the first round starts with the first job, and every result is the same
        whatever the trace's time origin (up to the rounding of ``arrival - origin``). A world
        whose first arrival is already 0 is returned as is.
        """
        import dataclasses

        shift = self.origin
        if shift == 0.0:
            return self
        jobs = tuple(
            dataclasses.replace(j, arrival=j.arrival - shift, deadline=j.deadline - shift)
            for j in self.jobs
        )
        return dataclasses.replace(self, jobs=jobs)

    def runnable_types(self, job: SimJob, num_gpus: int | None = None) -> tuple[str, ...]:
        """The GPU types (canonical order) with room for the gang and a positive rate for it."""
        n = job.num_gpus if num_gpus is None else num_gpus
        return tuple(
            t.name
            for t in self.cluster.gpu_types
            if t.count >= n and self.rate(job, t.name, num_gpus=n) > 0
        )

    def rate(
        self,
        job: SimJob,
        gpu_type: str,
        consolidated: bool = True,
        partner: SimJob | None = None,
        num_gpus: int | None = None,
        phase: int | None = None,
    ) -> float:
        """Steps/s of ``job`` on a gang of ``num_gpus`` GPUs of ``gpu_type`` (default its own).

        With ``partner`` (sharing the same GPUs) the measured pair rate, 0.0 when the pair
        cannot share. With ``phase`` (a job with a ``batch_schedule``) the rate in that phase,
        in base steps/s: the base rate times
        :func:`~optsched.sim.world.batch_schedule.phase_factor`; without it, or for a job without a
        schedule, the base rate (the initial batch size).
        """
        n = job.num_gpus if num_gpus is None else num_gpus
        if partner is None:
            base = job.scale * self.throughputs.rate(job.job_type, n, gpu_type, consolidated)
        else:
            pair = self.throughputs.pair_rates(
                job.job_type, partner.job_type, n, gpu_type, consolidated
            )
            base = 0.0 if pair is None else job.scale * pair[0]
        if phase is None or job.batch_schedule is None or base <= 0:
            return base
        return base * phase_factor(
            self.throughputs, job.batch_schedule, phase, gpu_type, n, consolidated
        )

    def work_seconds(self, job: SimJob, gpu_type: str, consolidated: bool = True) -> float:
        """Seconds to do ``job``'s whole work alone at its ``num_gpus`` on ``gpu_type``.

        ``work / rate`` for a job without a schedule; the sum over its phases of the phase's
        work over the phase's rate otherwise (``inf`` when a rate is 0).
        """
        if job.batch_schedule is None:
            r = self.rate(job, gpu_type, consolidated)
            return math.inf if r <= 0 else job.work / r
        return phase_seconds(
            job.batch_schedule, lambda k: self.rate(job, gpu_type, consolidated, phase=k)
        )

    def isolated_seconds(self, job: SimJob, gpu_type: str | None = None) -> float:
        """Seconds to finish alone, consolidated, on ``gpu_type`` (default: the fastest type)."""
        types = self.cluster.names if gpu_type is None else (gpu_type,)
        if job.batch_schedule is not None:
            return min(self.work_seconds(job, t) for t in types)
        best = max(self.rate(job, t) for t in types)
        return math.inf if best <= 0 else job.work / best

    def elastic(
        self, *, min_gpus: int = 1, max_gpus: int | None = None, max_factor: float = 1.0
    ) -> World:
        """The same world with elastic gangs.

        Each job may then be granted any gang size from ``min(min_gpus, num_gpus)`` up to
        ``max(num_gpus, min(max_gpus, floor(max_factor * num_gpus)))``, capped by the largest
        GPU type's count (``max_gpus`` defaults to that count). The defaults shrink jobs down
        to one GPU but never grow them beyond their request.

        Raises
        ------
        InvalidInstanceError
            ``min_gpus < 1``, ``max_gpus < 1`` or ``max_factor < 1`` (naming the argument).
        """
        import dataclasses

        if isinstance(min_gpus, bool) or not isinstance(min_gpus, int) or min_gpus < 1:
            raise InvalidInstanceError("min_gpus", f"must be an integer >= 1, got {min_gpus!r}")
        largest = max(t.count for t in self.cluster.gpu_types)
        cap = largest if max_gpus is None else max_gpus
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise InvalidInstanceError("max_gpus", f"must be an integer >= 1, got {max_gpus!r}")
        if not (isinstance(max_factor, int | float) and math.isfinite(max_factor)) or (
            max_factor < 1
        ):
            raise InvalidInstanceError("max_factor", f"must be >= 1, got {max_factor!r}")
        cap = min(cap, largest)

        def ceiling(num_gpus: int) -> int:
            # compare before flooring: a huge finite factor overflows to inf in the product
            # (math.floor(inf) raises OverflowError), and any product >= cap grants cap anyway
            grown = max_factor * num_gpus
            return cap if grown >= cap else math.floor(grown)

        jobs = tuple(
            dataclasses.replace(
                j,
                min_gpus=min(min_gpus, j.num_gpus),
                max_gpus=max(j.num_gpus, ceiling(j.num_gpus)),
            )
            for j in self.jobs
        )
        return dataclasses.replace(self, jobs=jobs)

    def job(self, job_id: str) -> SimJob:
        """The job with id ``job_id``."""
        index = self._index.get(job_id)
        if index is None:
            raise InvalidInstanceError("job_id", f"unknown job id {job_id!r}")
        return self.jobs[index]

    @property
    def _index(self) -> dict[str, int]:
        cached: dict[str, int] | None = self.__dict__.get("_index_cache")
        if cached is None:
            cached = {j.job_id: i for i, j in enumerate(self.jobs)}
            object.__setattr__(self, "_index_cache", cached)
        return cached

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        cluster: ClusterSpec,
        throughputs: Throughputs | None = None,
        *,
        restore_s: float = 0.0,
        restore_on_first_start: bool = False,
        file: str | None = None,
        first_row: int = 1,
        batch_modes: bool = True,
    ) -> World:
        """Build the world from a normalized job table (see the module notes).

        Without ``throughputs`` every job is generic on a uniform table
        (:meth:`Throughputs.uniform`: every GPU type equally fast). ``batch_modes``: see
        :func:`jobs_from_frame` (a ``batch_mode`` column gives dynamic jobs their schedules).
        """
        tp = throughputs if throughputs is not None else Throughputs.uniform(cluster.names)
        _check_types(cluster, tp)
        return cls(
            cluster=cluster,
            throughputs=tp,
            jobs=jobs_from_frame(
                frame, cluster, tp, file=file, first_row=first_row, batch_modes=batch_modes
            ),
            restore_s=restore_s,
            restore_on_first_start=restore_on_first_start,
        )

    # -- file format (optsched.sim.world.file) ---------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The world document as plain JSON-ready data (what :meth:`save` writes)."""
        data: dict[str, Any] = _world_io("record")(self).to_dict()
        return data

    def save(self, path: str | Path) -> None:
        """Write the world document (JSON, or TOML for a ``.toml`` path).

        The document holds the cluster, the restore cost, the throughput table itself and every
        job field (see :mod:`optsched.sim.world.file`); ``World.load(path) == world``.
        """
        _world_io("record")(self).save(path)

    @classmethod
    def load(cls, path: str | Path) -> World:
        """Read a world document through the guarded loader.

        Raises
        ------
        InvalidInstanceError
            The file is refused, has more jobs than the budget ``max_trace_rows`` (refused
            before any is built) or a field is invalid (file and field named).
        """
        world: World = _world_io("load")(path)
        return world

    @classmethod
    def from_dict(cls, data: Any) -> World:
        """Validate a parsed world document (see :meth:`load`)."""
        world: World = _world_io("from_dict")(data)
        return world

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The JSON Schema of the world document."""
        schema: dict[str, Any] = _world_io("schema")()
        return schema

    def __repr__(self) -> str:
        return f"World({len(self.jobs)} jobs, cluster={self.cluster}, restore_s={self.restore_s:g})"


def read_job_csv(path: str | Path) -> pd.DataFrame:
    """Read a normalized job table from a CSV file with a header line (the columns above).

    The file goes through :func:`optsched._io.open_text` (regular file, size budget, UTF-8);
    every cell is read as text and converted by :func:`jobs_from_frame`, whose errors then name
    the file, the line and the column.

    Raises
    ------
    InvalidInstanceError
        A refused or malformed file, or a missing column.
    """
    import pandas as pd

    from optsched._io import open_text

    with open_text(path) as fh:
        try:
            frame = pd.read_csv(fh, dtype=str, keep_default_na=False, na_filter=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InvalidInstanceError(
                "<file>", f"{path}: not a CSV job table: {exc}", file=str(path)
            ) from None
    for c in JOB_COLUMNS:
        if c not in frame.columns:
            raise InvalidInstanceError(
                c, f"missing column; the job table needs {', '.join(JOB_COLUMNS)}", file=str(path)
            )
    limits.check_size("jobs", len(frame), "max_trace_rows", "jobs")
    return frame


def canonical_cluster(cluster: ClusterSpec, throughputs: Throughputs) -> ClusterSpec:
    """``cluster`` with its GPU types in the canonical order (see :class:`World`)."""
    speed = throughputs.generic_speed
    ref = throughputs.reference
    ordered = sorted(cluster.gpu_types, key=lambda t: (t.name != ref, *type_rank(t.name, speed)))
    return ClusterSpec(gpu_types=tuple(ordered))


def _check_types(cluster: ClusterSpec, throughputs: Throughputs) -> None:
    for t in cluster.names:
        if t not in throughputs.gpu_types:
            raise InvalidInstanceError(
                "cluster",
                f"GPU type {t!r} is not in the throughput table "
                f"({', '.join(throughputs.gpu_types)})",
            )


def _column(frame: pd.DataFrame, name: str, file: str | None) -> Sequence[object]:
    if name not in frame.columns:
        raise InvalidInstanceError(
            name, f"missing column; the job table needs {', '.join(JOB_COLUMNS)}", file=file
        )
    values: list[object] = frame[name].tolist()
    return values


def _float(value: object, name: str, row: int, file: str | None, *, nan_ok: bool) -> float:
    if isinstance(value, str) and value.strip().lower() in ("", "nan"):
        value = math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InvalidInstanceError(
                name, f"must be a number, got {value!r}", file=file, row=row
            ) from None
    v = float(value)
    if math.isnan(v):
        if nan_ok:
            return v
        raise InvalidInstanceError(name, "must not be empty/NaN", file=file, row=row)
    if not math.isfinite(v):
        raise InvalidInstanceError(name, f"must be finite, got {v}", file=file, row=row)
    return v


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def jobs_from_frame(
    frame: pd.DataFrame,
    cluster: ClusterSpec,
    throughputs: Throughputs,
    *,
    file: str | None = None,
    first_row: int = 1,
    batch_modes: bool = True,
) -> tuple[SimJob, ...]:
    """Validate a normalized job table and turn it into :class:`SimJob` records.

    Rows are numbered from ``first_row`` in errors (2 for a CSV file with a header line, so
    that the row is the file's line number). A table with the extra column ``batch_mode``
    (Shockwave's 12-field traces) gives its ``accordion``/``gns`` jobs a ``batch_schedule``
    (:func:`~optsched.sim.world.batch_schedule.derive_schedule`, from the mode, the job type, the
    initial batch size and the work), unless ``batch_modes`` is false (every job static).

    Raises
    ------
    InvalidInstanceError
        Naming the column and row: missing column, duplicate id, arrival negative or not
        sorted, ``num_gpus`` not an integer >= 1 or above every GPU type's count, weight not
        > 0, neither ``total_steps`` nor ``duration``, a job that cannot run on any type.
    """
    n = len(frame)
    limits.check_size("jobs", n, "max_trace_rows", "jobs")
    cols = {c: _column(frame, c, file) for c in JOB_COLUMNS}
    modes: Sequence[object] | None = None
    if batch_modes and "batch_mode" in frame.columns:
        modes = frame["batch_mode"].tolist()
    largest = max(t.count for t in cluster.gpu_types)
    jobs: list[SimJob] = []
    seen: set[str] = set()
    last = 0.0
    for i in range(n):
        row = i + first_row
        jid = _row_job_id(cols["job_id"][i], seen, file, row)
        arrival = last = _row_arrival(cols["arrival"][i], last, file, row)
        gpus = _row_gang(cols["num_gpus"][i], largest, file, row)
        weight, deadline, steps, duration, batch = _row_numbers(cols, i, file, row)
        model = _text(cols["model"][i])
        job_type, work, scale = _row_work(
            model, batch, steps, duration, gpus, throughputs, file, row
        )
        _check_row_runs(jid, job_type, gpus, cluster, throughputs, file, row)
        schedule = None
        if modes is not None:
            schedule = _row_schedule(modes[i], job_type, batch, work, throughputs, file, row)
        jobs.append(
            SimJob(
                index=i,
                job_id=jid,
                arrival=arrival,
                num_gpus=gpus,
                job_type=job_type,
                work=work,
                scale=scale,
                weight=weight,
                deadline=deadline,
                model=model,
                user=_text(cols["user"][i]),
                batch_schedule=schedule,
            )
        )
    return tuple(jobs)


# -- the steps of one row of jobs_from_frame, in the order its checks run -----------------------


def _row_job_id(value: object, seen: set[str], file: str | None, row: int) -> str:
    """The row's job id: not empty, not seen before (added to ``seen``)."""
    jid = _text(value)
    if not jid:
        raise InvalidInstanceError("job_id", "must not be empty", file=file, row=row)
    if jid in seen:
        raise InvalidInstanceError("job_id", f"duplicate job id {jid!r}", file=file, row=row)
    seen.add(jid)
    return jid


def _row_arrival(value: object, last: float, file: str | None, row: int) -> float:
    """The row's arrival: a number >= 0, not before the previous row's ``last``."""
    arrival = _float(value, "arrival", row, file, nan_ok=False)
    if arrival < 0:
        raise InvalidInstanceError("arrival", f"must be >= 0, got {arrival}", file=file, row=row)
    if arrival < last:
        raise InvalidInstanceError(
            "arrival",
            f"rows must be sorted by arrival ({arrival} < {last})",
            file=file,
            row=row,
        )
    return arrival


def _row_gang(value: object, largest: int, file: str | None, row: int) -> int:
    """The row's ``num_gpus``: an integer >= 1, at most the ``largest`` GPU type's count."""
    g = _float(value, "num_gpus", row, file, nan_ok=False)
    if g != int(g) or g < 1:
        raise InvalidInstanceError(
            "num_gpus", f"must be an integer >= 1, got {g}", file=file, row=row
        )
    gpus = int(g)
    if gpus > largest:
        raise InvalidInstanceError(
            "num_gpus",
            f"{gpus} GPUs exceed every GPU type of the cluster (largest: {largest})",
            file=file,
            row=row,
        )
    return gpus


def _row_numbers(
    cols: dict[str, Sequence[object]], i: int, file: str | None, row: int
) -> tuple[float, float, float, float, float]:
    """The row's weight (> 0), deadline, total steps, duration and batch size (NaN: unknown).

    ``total_steps`` and ``duration``, when known, must be > 0.
    """
    weight = _float(cols["weight"][i], "weight", row, file, nan_ok=False)
    if weight <= 0:
        raise InvalidInstanceError("weight", f"must be > 0, got {weight}", file=file, row=row)
    deadline = _float(cols["deadline"][i], "deadline", row, file, nan_ok=True)
    steps = _float(cols["total_steps"][i], "total_steps", row, file, nan_ok=True)
    duration = _float(cols["duration"][i], "duration", row, file, nan_ok=True)
    batch = _float(cols["batch_size"][i], "batch_size", row, file, nan_ok=True)
    for name, v in (("total_steps", steps), ("duration", duration)):
        if not math.isnan(v) and v <= 0:
            raise InvalidInstanceError(name, f"must be > 0, got {v}", file=file, row=row)
    return weight, deadline, steps, duration, batch


def _row_work(
    model: str,
    batch: float,
    steps: float,
    duration: float,
    gpus: int,
    throughputs: Throughputs,
    file: str | None,
    row: int,
) -> tuple[str, float, float]:
    """The row's job type, work and per-job scale (the module notes' *work and rates*).

    A type with no rate on the reference type at ``gpus`` falls back to the generic one.
    """
    ref = throughputs.reference
    job_type = job_type_for(model, batch, throughputs)
    ref_rate = throughputs.rate(job_type, gpus, ref)
    if ref_rate <= 0:
        job_type = GENERIC
        ref_rate = throughputs.rate(GENERIC, gpus, ref)
    if math.isnan(steps) and math.isnan(duration):
        raise InvalidInstanceError(
            "total_steps", "neither total_steps nor duration is known", file=file, row=row
        )
    if math.isnan(steps):
        work, scale = duration * ref_rate, 1.0
    elif math.isnan(duration):
        work, scale = steps, 1.0
    else:
        work, scale = steps, steps / (duration * ref_rate)
    if not (math.isfinite(work) and work > 0 and math.isfinite(scale) and scale > 0):
        raise InvalidInstanceError(
            "duration", f"gives no positive finite work ({work})", file=file, row=row
        )
    return job_type, work, scale


def _check_row_runs(
    jid: str,
    job_type: str,
    gpus: int,
    cluster: ClusterSpec,
    throughputs: Throughputs,
    file: str | None,
    row: int,
) -> None:
    """Refuse a row no GPU type of the cluster can run (rate 0, missing, or too few GPUs)."""
    if not any(
        throughputs.rate(job_type, gpus, t.name) > 0 and t.count >= gpus for t in cluster.gpu_types
    ):
        raise InvalidInstanceError(
            "model",
            f"job {jid!r}: job type {job_type or 'generic'!r} on {gpus} GPUs runs on no "
            f"GPU type of the cluster ({', '.join(cluster.names)}: rate 0, missing, or too "
            "few GPUs)",
            file=file,
            row=row,
        )


def _row_schedule(
    mode: object,
    job_type: str,
    batch: float,
    work: float,
    throughputs: Throughputs,
    file: str | None,
    row: int,
) -> BatchSchedule | None:
    """The row's batch-size schedule from its ``batch_mode`` (:func:`derive_schedule`)."""
    try:
        return derive_schedule(_text(mode).strip(), job_type, batch, work, throughputs)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(exc.field, exc.message, file=file, row=row) from None
