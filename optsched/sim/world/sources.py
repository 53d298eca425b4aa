r"""Which throughput table a run uses: by name, by path, as an object, or by the trace's default.

Every entry point of the simulator (:func:`~optsched.sim.simulate` through a trace,
:func:`~optsched.sim.compare`, :func:`~optsched.runs.sim_sweep.sweep`, ``optsched sim run |
compare | sweep``) takes its ``throughputs`` argument through :func:`resolve_throughputs`, so
that one spelling means one table everywhere:

* ``"gavel"``: Gavel's measured throughputs (Narayanan et al., OSDI 2020), shipped with
  optsched as package data (``optsched/sim/data/gavel_throughputs.json``, MIT license of its
  authors in ``LICENSE-gavel`` beside it; ``SOURCE.md`` there gives the commit): 26 job types x
  1/2/4/8 GPUs on ``v100``, ``p100`` and ``k80``, alone and co-located;
* ``"elasticflow"``: ElasticFlow's A100 profiles (Gu et al., ASPLOS 2023), the seven
  ``throughputs_A100/*.csv`` of its repository shipped unmodified as package data
  (``optsched/sim/data/elasticflow_a100/``, Apache-2.0 licence of its authors in
  ``LICENCE-elasticflow`` beside it, ``NOTICE-elasticflow`` naming the source and commit):
  iterations/s of bert, deepspeech2, gpt2, inception3, resnet50, resnet50_cifar10 and vgg16 per
  global batch size on 1-64 ``a100`` GPUs, interpolated concavely
  (:mod:`~optsched.sim.world.elasticflow_profiles`);
* ``"uniform"``: every job generic, every GPU type equally fast
  (:meth:`Throughputs.uniform <optsched.sim.world.throughputs.Throughputs.uniform>`);
* a path: Gavel's JSON format (:func:`~optsched.sim.world.throughputs.load_throughputs`), or a
  directory of ElasticFlow profile CSVs named ``..._<GPU type>``;
* a :class:`~optsched.sim.world.throughputs.Throughputs` object, used as is;
* ``None`` (the default): **the trace's own table**, chosen from the trace's content, not its
  file format (:func:`default_table_name`): Gavel's for a trace of Gavel's jobs -- one read from
  Gavel's format, or any table in which every job has a step count (``total_steps``) and names
  one of Gavel's job types (``model`` with its ``batch_size``: ``ResNet-18`` at 64 is
  ``"ResNet-18 (batch size 64)"``; ``A3C`` and ``CycleGAN`` without one), which is what the
  Gavel reader produces and what ``optsched trace convert`` keeps in the normalized CSV;
  ElasticFlow's A100 profiles for a trace of ElasticFlow's jobs -- one in which every job has a
  step count, a batch size and a model ElasticFlow profiled (:func:`names_elasticflow_jobs`),
  as the 8-column ElasticFlow traces (``cluster01..10.csv``, ``195job.csv``) and their
  converted CSVs are; uniform speeds for every other trace (the 4-column raw ElasticFlow
  traces among them), which names no measured job type. A trace and its converted CSV
  therefore run on the same table and give the same numbers. The table chosen is
  never silent: its
  :attr:`~optsched.sim.world.throughputs.Throughputs.source` is written into every run record,
  comparison and sweep row (a ``throughputs`` field), and printed by every command.

A Gavel trace on a cluster with a GPU type Gavel did not measure, or an ElasticFlow trace on a
cluster of another type than ``a100``, is refused naming ``throughputs`` rather than quietly
simulated at uniform speeds: uniform speeds are used on request only (``throughputs="uniform"``,
``--throughputs uniform``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.errors import InvalidInstanceError
from optsched.sim.world.throughputs import Throughputs, load_throughputs, throughputs_from_dict

if TYPE_CHECKING:
    from optsched.sim.world.cluster import ClusterSpec
    from optsched.sim.world.elasticflow_profiles import ScalingProfiles

__all__ = [
    "ELASTICFLOW",
    "ELASTICFLOW_GPU",
    "GAVEL",
    "GAVEL_FORMATS",
    "TABLE_NAMES",
    "UNIFORM",
    "default_table_name",
    "elasticflow_profiles",
    "elasticflow_throughputs",
    "gavel_throughputs",
    "names_elasticflow_jobs",
    "names_gavel_jobs",
    "resolve_throughputs",
    "throughputs_source",
]

#: Name of Gavel's measured table (shipped as package data).
GAVEL = "gavel"
#: Name of ElasticFlow's A100 profiles (shipped as package data).
ELASTICFLOW = "elasticflow"
#: The GPU type ElasticFlow's shipped profiles were measured on.
ELASTICFLOW_GPU = "a100"
#: Name of the uniform table (every GPU type equally fast, every job generic).
UNIFORM = "uniform"
#: The names :func:`resolve_throughputs` takes besides paths.
TABLE_NAMES: tuple[str, ...] = (GAVEL, ELASTICFLOW, UNIFORM)
#: Trace formats whose job types are those of Gavel's table (its default table).
GAVEL_FORMATS: frozenset[str] = frozenset({"gavel"})

_DATA_FILE = "gavel_throughputs.json"
_ELASTICFLOW_DIR = "elasticflow_a100"


@lru_cache(maxsize=4)
def gavel_throughputs(reference: str = "v100") -> Throughputs:
    """Gavel's measured throughput table, shipped with optsched (``source="gavel"``).

    Read once per ``reference`` and kept (the table is immutable; 1.2 MB of JSON).

    Raises
    ------
    InvalidInstanceError
        ``reference`` is not one of Gavel's GPU types (``k80``, ``p100``, ``v100``).
    """
    import json

    text = resources.files("optsched.sim").joinpath("data", _DATA_FILE).read_text(encoding="utf-8")
    table = throughputs_from_dict(json.loads(text), reference=reference)
    return replace(table, source=GAVEL)


@lru_cache(maxsize=1)
def elasticflow_profiles() -> ScalingProfiles:
    """ElasticFlow's A100 profiles, shipped with optsched (read once and kept).

    The seven CSVs of ``optsched/sim/data/elasticflow_a100/`` (ElasticFlow's
    ``scheduler/throughputs_A100/`` at commit 04a0109, unmodified), read by
    :func:`~optsched.sim.world.elasticflow_profiles.load_scaling_profiles` as GPU type
    ``"a100"``.
    """
    from optsched.sim.world.elasticflow_profiles import load_scaling_profiles

    folder = resources.files("optsched.sim").joinpath("data", _ELASTICFLOW_DIR)
    with resources.as_file(folder) as path:
        profiles = load_scaling_profiles(path, gpu_type=ELASTICFLOW_GPU)
    # the files' names, not where this installation keeps them, so that a record never
    # depends on the install location
    names = tuple(f"{_ELASTICFLOW_DIR}/{Path(f).name}" for f in profiles.files)
    return replace(profiles, files=names)


@lru_cache(maxsize=1)
def elasticflow_throughputs() -> Throughputs:
    """ElasticFlow's A100 profiles as a throughput table (``source="elasticflow"``).

    :meth:`Throughputs.from_scaling_profiles
    <optsched.sim.world.throughputs.Throughputs.from_scaling_profiles>` of
    :func:`elasticflow_profiles`: one GPU type, ``a100`` (also the reference type); the job
    type of model ``m`` at batch size ``b`` is ``"m (batch size b)"``.
    """
    table = Throughputs.from_scaling_profiles([elasticflow_profiles()], reference=ELASTICFLOW_GPU)
    return replace(table, source=ELASTICFLOW)


def default_table_name(trace_format: str | None, jobs: Any = None) -> str:
    """The table a trace uses by default: ``"gavel"``, ``"elasticflow"`` or ``"uniform"``.

    See the module notes: Gavel's for a trace of Gavel's jobs, ElasticFlow's A100 profiles for
    a trace of ElasticFlow's profiled models (:func:`names_elasticflow_jobs`), else uniform.

    Parameters
    ----------
    trace_format : str, optional
        The trace's format (:attr:`optsched.traces.Trace.format`): Gavel's selects Gavel's table.
    jobs : Trace or pandas.DataFrame, optional
        The job table: one of Gavel's jobs (:func:`names_gavel_jobs`) selects Gavel's table
        whatever the file format.

    Notes
    -----
    :math:`O(n)` over the table's rows, with the distinct (model, batch size) pairs looked up
    once each; the Gavel table is loaded only when every row has a step count and a model.
    """
    if trace_format in GAVEL_FORMATS:
        return GAVEL
    if jobs is None:
        return UNIFORM
    if names_gavel_jobs(jobs):
        return GAVEL
    return ELASTICFLOW if names_elasticflow_jobs(jobs) else UNIFORM


def names_elasticflow_jobs(jobs: Any) -> bool:
    """Whether every job of a non-empty table has a step count, a batch size and a profiled model.

    ``jobs`` is a :class:`~optsched.traces.Trace` or its ``jobs`` frame (columns ``model``,
    ``batch_size``, ``total_steps``). The model must be one ElasticFlow profiled on A100
    (the stem of one of the shipped files: ``bert``, ``deepspeech2``, ``gpt2``, ``inception3``,
    ``resnet50``, ``resnet50_cifar10``, ``vgg16``), written exactly so; any batch size > 0 is
    accepted, as a job takes the profile of the nearest profiled batch size
    (:func:`~optsched.sim.world.jobs.job_type_for`). The raw ElasticFlow traces (no model, no
    step count) do not qualify.

    Notes
    -----
    :math:`O(n)` over the rows; the shipped profiles are read only when the columns are there.
    """
    import numpy as np

    frame = getattr(jobs, "jobs", jobs)
    columns = getattr(frame, "columns", ())
    if not len(frame) or not {"model", "batch_size", "total_steps"} <= set(columns):
        return False
    for column in ("total_steps", "batch_size"):
        values = np.asarray(frame[column], dtype=float)
        if not (np.isfinite(values).all() and (values > 0).all()):
            return False
    models = {str(m) for m in frame["model"].unique()}
    return models <= set(elasticflow_profiles().models)


def names_gavel_jobs(jobs: Any) -> bool:
    """Whether every job of a non-empty table has a step count and names a Gavel job type.

    ``jobs`` is a :class:`~optsched.traces.Trace` or its ``jobs`` frame (columns ``model``,
    ``batch_size``, ``total_steps``). A job names the type ``"<model> (batch size <b>)"`` when
    its batch size ``b`` is known, else ``"<model>"``; the name must be one of the table's
    exactly (the Gavel reader splits Gavel's job types so, and ``trace convert`` keeps both
    columns).
    """
    import numpy as np

    frame = getattr(jobs, "jobs", jobs)
    columns = getattr(frame, "columns", ())
    if not len(frame) or not {"model", "batch_size", "total_steps"} <= set(columns):
        return False
    steps = np.asarray(frame["total_steps"], dtype=float)
    if not np.isfinite(steps).all():
        return False
    pairs = frame[["model", "batch_size"]].drop_duplicates()
    known = set(gavel_throughputs().job_types)
    for model, batch in pairs.itertuples(index=False, name=None):
        name = str(model)
        if not name:
            return False
        size = float(batch)
        if np.isfinite(size):
            if size != int(size):
                return False
            name = f"{name} (batch size {int(size)})"
        if name not in known:
            return False
    return True


def throughputs_source(table: Throughputs) -> str:
    """The source of ``table`` as stated in tables and records (``"custom"`` when unnamed)."""
    return table.source or "custom"


def resolve_throughputs(
    throughputs: Any,
    cluster: ClusterSpec,
    *,
    trace_format: str | None = None,
    reference: str = "v100",
    field: str = "throughputs",
    jobs: Any = None,
) -> Throughputs:
    """The table ``throughputs`` names for a run on ``cluster`` (see the module notes).

    Parameters
    ----------
    throughputs : None, str, Path or Throughputs
        ``None`` (the trace's default), ``"gavel"``, ``"elasticflow"``, ``"uniform"``, a file
        or profile directory, or a table.
    cluster : ClusterSpec
        The cluster the run simulates (its GPU types must be in the table).
    trace_format : str, optional
        The trace's format (:attr:`optsched.traces.Trace.format`), for the default.
    reference : str, default "v100"
        GPU type on which trace durations were measured (Gavel tables and files).
    field : str
        The argument name errors give (``"--throughputs"`` from the command line).
    jobs : Trace or pandas.DataFrame, optional
        The trace's job table, for the default: a table of Gavel's jobs selects Gavel's table
        whatever its format (:func:`default_table_name`).

    Raises
    ------
    InvalidInstanceError
        Naming ``field``: a value of another type, a path that does not exist, a name that
        is neither a table name nor a path, a profile directory for a GPU type the cluster
        lacks, the Gavel or ElasticFlow table (named or by default) on a cluster with a GPU
        type it does not measure; naming ``reference`` for a reference not in the table.
    """
    if isinstance(throughputs, Throughputs):
        return throughputs if throughputs.source else replace(throughputs, source="custom")
    if throughputs is None:
        name = default_table_name(trace_format, jobs)
        table = _named(name, cluster, reference, field)
        if name != UNIFORM:
            _check_covered(table, cluster, field, by_default=True)
        return table
    if not isinstance(throughputs, str | Path):
        raise InvalidInstanceError(
            field,
            "must be 'gavel', 'elasticflow', 'uniform', a path to a table, or a Throughputs "
            "object, got "
            f"{type(throughputs).__name__}",
        )
    text = str(throughputs)
    if isinstance(throughputs, str) and text in TABLE_NAMES:
        table = _named(text, cluster, reference, field)
        _check_covered(table, cluster, field, by_default=False)
        return table
    path = Path(text)
    if not path.exists():
        raise InvalidInstanceError(
            field,
            f"{text!r} is neither a table name ({', '.join(TABLE_NAMES)}) nor an existing "
            "file or profile directory",
        )
    if path.is_dir():
        return _profiles(path, cluster, field)
    try:
        return load_throughputs(path, reference=reference)
    except InvalidInstanceError as exc:
        if exc.field == "reference":
            raise InvalidInstanceError(
                "--reference" if field.startswith("--") else "reference", exc.message
            ) from None
        raise


def _named(name: str, cluster: ClusterSpec, reference: str, field: str) -> Throughputs:
    if name == UNIFORM:
        return Throughputs.uniform(cluster.names)
    if name == ELASTICFLOW:
        # measured on one type; ``reference`` (where trace durations were measured) matters only
        # for generic jobs, which this table does not have
        return elasticflow_throughputs()
    try:
        return gavel_throughputs(reference)
    except InvalidInstanceError as exc:
        if exc.field == "reference":
            raise InvalidInstanceError(
                "--reference" if field.startswith("--") else "reference", exc.message
            ) from None
        raise


def _check_covered(
    table: Throughputs, cluster: ClusterSpec, field: str, *, by_default: bool
) -> None:
    missing = [t for t in cluster.names if t not in table.gpu_types]
    if not missing:
        return
    what = (
        "ElasticFlow's A100 profiles"
        if table.source == ELASTICFLOW
        else "Gavel's measured throughputs"
    )
    jobs = "ElasticFlow's profiled models" if table.source == ELASTICFLOW else "Gavel's job types"
    why = (
        f"the trace's jobs are {jobs}, so {what} apply by default, but they do not cover"
        if by_default
        else f"{what} do not cover"
    )
    raise InvalidInstanceError(
        field,
        f"{why} the cluster's GPU type(s) {', '.join(missing)} (the table has "
        f"{', '.join(table.gpu_types)}); use a cluster of those types, a table covering "
        f"{', '.join(missing)}, or ask for uniform speeds explicitly "
        "(throughputs='uniform', --throughputs uniform)",
    )


def _profiles(directory: Path, cluster: ClusterSpec, field: str) -> Throughputs:
    """ElasticFlow profiles: one GPU type, named by the directory (the reference type)."""
    from optsched.sim.world.elasticflow_profiles import load_scaling_profiles

    gpu = directory.resolve().name.rsplit("_", 1)[-1].lower()
    if gpu not in cluster.names:
        raise InvalidInstanceError(
            field,
            f"the profile directory {directory.name!r} is for GPU type {gpu!r} "
            f"(its name after the last '_'), which the cluster ({', '.join(cluster.names)}) "
            "does not have",
        )
    profiles = load_scaling_profiles(directory, gpu_type=gpu)
    return Throughputs.from_scaling_profiles([profiles], reference=gpu)
