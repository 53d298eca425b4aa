r"""Experiment files: one TOML file that names a whole simulator study, and its results.

An experiment file names the traces, clusters, throughput table, policies (with their options),
seeds, loads, round length and outputs of a sweep of the simulator; ``optsched sim sweep
EXPERIMENT.toml`` (or ``run`` / ``compare``) runs it. Every combination
(trace x cluster x cluster scale x seed x load x policy) is one run, executed and stored like
the runs of :func:`optsched.runs.sim_sweep.sweep` (same seeds and loads semantics), in a
:class:`~optsched.runs.store.RunStore` of kind ``"sim-experiment"``.

Reproducibility: the store's config holds the SHA-256 of the file's exact text and the
validated experiment, and the store's metadata holds the text itself (``experiment.toml``) and
the SHA-256 of every input file it names; a run is redone from its record by writing the stored
text back to a file. Resuming a store with another file (even one differing only in a comment)
is refused naming ``config.experiment_sha256``.

Each run's record has the run metrics of :func:`optsched.sim.measure.metrics.run_metrics`, the
validator's verdict, the sorted JCTs and finish-time fairness values :math:`\rho` of the
finished jobs (for CDFs), and the *isolated bound* of the mean JCT,

.. math::

    \underline{J} = \frac{1}{N} \sum_j \frac{W_j}{\max_g r_j(g)},

each job's work over its best consolidated rate alone (``isolated_jct`` of
:func:`~optsched.sim.measure.metrics.job_metrics`): no policy running the requested gangs finishes a
job sooner, so :math:`\bar J \ge \underline{J}` when every job finishes and the gap
:math:`\bar J / \underline{J} - 1 \ge 0` says how far a policy is from that bound.

Examples
--------
.. code-block:: toml

    name = "fifo-vs-las"
    traces = ["synthetic:40"]
    clusters = ["v100=4,p100=4"]
    policies = ["fifo", { name = "las", label = "las" }]
    seeds = [0, 1, 2]
    loads = [1.0, 2.0]
    round_seconds = 360.0

    [outputs]
    store = "runs/fifo-vs-las.sqlite"
    report = "runs/fifo-vs-las-report"
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, field_validator, model_validator

from optsched._io import _parse_toml, check_tree, read_text
from optsched._validation import Frozen, parse
from optsched.errors import InvalidInstanceError
from optsched.runs.driver import SweepTask, progress_bar, run_sweep
from optsched.runs.experiment_policies import (
    PolicySpec,
    _no_factory,
    experiment_labels,
    make_experiment_policy,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_THROUGHPUTS_RULE",
    "KIND",
    "SUMMARY_METRICS",
    "Experiment",
    "ExperimentFile",
    "ExperimentResult",
    "Outputs",
    "PolicySpec",
    "experiment_labels",
    "experiment_schema",
    "load_experiment",
    "make_experiment_policy",
    "run_experiment",
    "summarize",
]

#: The RunStore kind of experiment sweeps.
KIND = "sim-experiment"

#: The parameters that name one run (the store key), in column order.
KEY_FIELDS: tuple[str, ...] = ("trace", "cluster", "cluster_scale", "seed", "load", "policy")

#: Where a table groups runs that differ only by seed (one summary row per group and policy).
GROUP_FIELDS: tuple[str, ...] = ("trace", "cluster", "cluster_scale", "load")

#: Run metrics summarized across seeds (mean and 95% confidence interval).
SUMMARY_METRICS: tuple[str, ...] = (
    "jct_mean",
    "jct_p95",
    "makespan",
    "rho_max",
    "rho_mean",
    "utilization_mean",
    "unfinished",
    "jct_bound",
    "gap_jct_bound",
    "gap_weighted-jct",
    "gap_makespan",
)

#: Confidence level of the intervals across seeds.
CONFIDENCE = 0.95

_SYNTHETIC = "synthetic:"


class Outputs(Frozen):
    """Where an experiment writes (paths relative to the experiment file)."""

    store: str | None = Field(
        default=None, description="Run store (SQLite file or directory); resumable."
    )
    report: str | None = Field(default=None, description="Directory for report.html and report.md.")
    csv: str | None = Field(default=None, description="CSV of every run's metrics.")

    @field_validator("store", "report", "csv")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from pathlib import PurePath

        path = PurePath(value)
        if not value or path.is_absolute() or ".." in path.parts or value.startswith("~"):
            raise ValueError(
                f"must be a relative path inside the experiment's folder, got {value[:80]!r}; "
                "write elsewhere with --store / --report / --csv on the command line"
            )
        return value


class SteadyState(Frozen):
    """A steady-state window: metrics over the jobs of arrival index ``[start, end)``.

    As Gavel's ``-s/-e`` and ``optsched sim sweep --window``: every job runs and contends, the
    job-level metrics (and the CDFs and the bound of a report) count the window's jobs only
    (:func:`optsched.sim.measure.metrics.run_metrics`).
    """

    start: int = Field(default=0, ge=0, description="First arrival index counted.")
    end: int | None = Field(
        default=None, ge=1, description="Arrival index past the last counted (default: all)."
    )

    @model_validator(mode="after")
    def _ordered(self) -> SteadyState:
        from optsched.sim.measure.metrics import check_window

        check_window((self.start, self.end), len_jobs=None, field="end")
        return self

    @property
    def window(self) -> tuple[int, int | None]:
        """``(start, end)`` as :func:`~optsched.sim.measure.metrics.run_metrics` takes it."""
        return self.start, self.end


_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Experiment(Frozen):
    """An experiment file: a sweep of the simulator, declared whole (module notes)."""

    name: str = Field(min_length=1, description="The experiment's name (report title).")
    description: str = Field(default="", description="Free text shown in the report.")
    traces: list[str] = Field(
        min_length=1, description="Trace files (relative to this file) or synthetic:N."
    )
    clusters: list[str] = Field(
        min_length=1, description="Clusters, each v100=8,p100=16[:GPUS/SERVER]."
    )
    cluster_scales: list[_Positive] = Field(
        default_factory=lambda: [1.0], min_length=1, description="Cluster size factors."
    )
    throughputs: str | None = Field(
        default=None,
        description=(
            "Throughput table: 'gavel', 'elasticflow', 'uniform' or a Gavel throughput JSON "
            "(relative to this file), as --throughputs; default: the trace's own (Gavel's for a "
            "trace of Gavel's jobs, whatever its file format; ElasticFlow's A100 profiles for a "
            "trace of ElasticFlow's profiled models; uniform speeds otherwise)."
        ),
    )
    reference: str = Field(
        default="v100", description="GPU type on which trace durations were measured."
    )
    policies: list[str | PolicySpec] = Field(min_length=1, description="Policies compared.")
    plugins: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Python modules (names, or .py files relative to this file) that register "
        "policies when imported. Importing a module RUNS ITS CODE: nothing here is imported "
        "unless the command line says --allow-plugins (allow_plugins=True in Python); without "
        "it a file naming plug-ins is refused. No other key of the file names code.",
    )
    seeds: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: [0], min_length=1, description="Seeds (see `sim sweep`)."
    )
    loads: list[_Positive] = Field(
        default_factory=lambda: [1.0], min_length=1, description="Arrival-rate factors."
    )
    round_seconds: _Positive | None = Field(
        default=None, description="Round length for every policy (default: each policy's own)."
    )
    restore_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        default=0.0, description="Checkpoint/restore cost of each preemption (s)."
    )
    steady_state: SteadyState | None = Field(
        default=None,
        description="Metrics over the jobs of arrival index [start, end) only (default: all).",
    )
    bounds: bool = Field(
        default=False,
        description="Also compute certified lower bounds on the total weighted JCT and the "
        "makespan (optsched.sim.optimum.bounds) and every run's gap to them.",
    )
    outputs: Outputs = Field(default_factory=Outputs)

    @field_validator("traces", "clusters", "seeds", "loads", "cluster_scales", "plugins")
    @classmethod
    def _distinct(cls, values: list[Any]) -> list[Any]:
        if len(set(map(str, values))) != len(values):
            raise ValueError("a value is repeated")
        return values

    @model_validator(mode="after")
    def _ranges(self) -> Experiment:
        from optsched.limits import check_range

        for i, load in enumerate(self.loads):
            check_range(f"loads[{i}]", load, "load")
        if self.round_seconds is not None:
            check_range("round_seconds", self.round_seconds, "round_seconds")
        check_range("restore_s", self.restore_s, "restore_s")
        return self

    @field_validator("clusters")
    @classmethod
    def _clusters(cls, values: list[str]) -> list[str]:
        from optsched.sim.world.cluster import parse_cluster

        for i, text in enumerate(values):
            try:
                parse_cluster(text)
            except InvalidInstanceError as exc:
                raise ValueError(f"[{i}] {exc.message}") from None
        return values

    @model_validator(mode="after")
    def _policies(self) -> Experiment:
        if self.bounds and self.steady_state is not None:
            raise InvalidInstanceError(
                "bounds",
                "the certified bounds are on the whole trace's optimum, not on a steady-state "
                "window's metrics; drop one of the two",
            )
        for i, (given, spec) in enumerate(zip(self.policies, self.policy_specs, strict=True)):
            _no_factory(spec.name, f"policies[{i}]" + ("" if isinstance(given, str) else ".name"))
        # the same policy twice, or one label given twice; labels that only the made
        # policies' names make equal are refused when they are made (experiment_labels)
        labels = [p.label for p in self.policy_specs if p.label]
        plain = [(p.name, repr(p.options)) for p in self.policy_specs if not p.label]
        if len(set(labels)) != len(labels) or len(set(plain)) != len(plain):
            raise InvalidInstanceError(
                "policies", "two policies share a label; give each a distinct `label`"
            )
        return self

    @property
    def policy_specs(self) -> list[PolicySpec]:
        """Every policy as a :class:`PolicySpec` (a bare name has no options)."""
        return [PolicySpec(name=p) if isinstance(p, str) else p for p in self.policies]


def experiment_schema() -> dict[str, Any]:
    """The JSON Schema of experiment files (``optsched schema sim-experiment``)."""
    return Experiment.schema()


@dataclass(frozen=True)
class ExperimentFile:
    """A validated experiment with its file: path, exact text and the text's SHA-256."""

    experiment: Experiment
    path: Path
    text: str
    sha256: str

    @property
    def base(self) -> Path:
        """The directory relative paths in the file are resolved against."""
        return self.path.parent

    @classmethod
    def from_experiment(cls, experiment: Experiment, base: str | Path = ".") -> ExperimentFile:
        """An experiment built in code, as the file :meth:`Experiment.save` would write.

        Relative paths resolve against ``base``; the text (and so the SHA-256) is its TOML.
        """
        import tomli_w

        text = tomli_w.dumps(experiment.to_dict())
        path = Path(base) / f"{experiment.name}.toml"
        return cls(experiment=experiment, path=path, text=text, sha256=_sha256(text))

    def resolve(self, name: str) -> str:
        """A path named in the file, resolved against its directory (``synthetic:N`` as is)."""
        if name.startswith(_SYNTHETIC) or Path(name).is_absolute():
            return name
        return str(self.base / name)


def resolve_output(loaded: ExperimentFile, name: str, field: str) -> str:
    """An output path the file names, resolved, refused unless inside the experiment's folder.

    The schema already refuses absolute paths and ``..``; this also catches a symbolic link
    inside the folder that points out of it.
    """
    base = loaded.base.resolve()
    target = (loaded.base / name).resolve()
    if not target.is_relative_to(base):
        raise InvalidInstanceError(
            field,
            f"{name!r} leads out of the experiment's folder ({target}); write elsewhere with "
            "--store / --report / --csv on the command line",
            file=str(loaded.path),
        )
    return str(target)


#: How an experiment without a ``throughputs`` key chooses its table (stored in its run store's
#: config, so that a store made under another rule is refused on resume, not silently mixed).
DEFAULT_THROUGHPUTS_RULE = (
    "by content: Gavel's table for Gavel job types with step counts; ElasticFlow's A100 "
    "profiles for ElasticFlow's profiled models with step counts and batch sizes"
)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_experiment(
    path: str | Path, *, allow_plugins: bool = False, plugin_timeout: float | None = None
) -> ExperimentFile:
    """Read and validate an experiment file (TOML) through the guarded loader.

    Every policy name and option is checked here, before any run. Reading a file imports
    nothing, unless it names ``plugins`` and ``allow_plugins`` is true: then each is imported
    once, guarded (:func:`optsched.sim.policies.import_plugin`: probed in a separate
    interpreter within ``plugin_timeout`` seconds first), before the policies are checked.

    Raises
    ------
    InvalidInstanceError
        The file is refused, or a key is unknown or invalid; the error names the file and the
        key (``outputs.stor``, ``policies[1].options.alpha`` ...): ``plugins`` without
        ``allow_plugins``, ``plugins[i]`` for a plug-in that fails, exits, aborts or hangs
        while importing, ``policies[i]`` for a ``module:attr`` name.
    """
    p = Path(path)
    text = read_text(p)
    data = _parse_toml(text, p)
    check_tree(data, file=str(p))
    try:
        experiment = parse(Experiment, data)
        loaded = ExperimentFile(experiment=experiment, path=p, text=text, sha256=_sha256(text))
        import_plugins(loaded, allow=allow_plugins, timeout=plugin_timeout)
        experiment_labels(experiment)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(exc.field, exc.message, exc.errors, file=str(p)) from None
    return loaded


def import_plugins(
    loaded: ExperimentFile, *, allow: bool, timeout: float | None = None, probe: bool = True
) -> list[str]:
    """Import the ``plugins`` an experiment names, only if ``allow`` (the explicit opt-in).

    Returns the modules imported (``.py`` files resolved against the experiment's folder), which
    the runs import again in their workers.

    Raises
    ------
    InvalidInstanceError
        ``plugins`` named without ``allow``; ``plugins[i]`` for a plug-in refused by
        :func:`optsched.sim.policies.import_plugin`.
    """
    from optsched.sim.policies import import_plugin

    names = loaded.experiment.plugins
    if not names:
        return []
    if not allow:
        raise InvalidInstanceError(
            "plugins",
            f"the experiment names {len(names)} plug-in(s) ({', '.join(names)[:200]}); importing "
            "a module runs its code, so it is done only when asked: pass --allow-plugins "
            "(allow_plugins=True in Python) to import them",
        )
    # a module name with a file of that name beside the experiment (``my_policy`` for
    # ``my_policy.py``) loads that file: the experiment's folder need not be on PYTHONPATH
    modules = [
        loaded.resolve(n if n.endswith(".py") else f"{n}.py")
        if n.endswith(".py") or Path(loaded.resolve(f"{n}.py")).is_file()
        else n
        for n in names
    ]
    for i, module in enumerate(modules):
        import_plugin(module, field=f"plugins[{i}]", probe=probe, timeout=timeout)
    return modules


def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_one(
    params: dict[str, Any], config: dict[str, Any], base: str, plugins: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One run of an experiment: its record (module notes).

    A module-level function of picklable arguments, so that every backend can ship it.
    ``plugins`` are the modules :func:`run_experiment` imported after the opt-in (a worker
    process imports them too; one already imported is not imported again).
    """
    import numpy as np

    from optsched.sim.policies import import_plugin

    for i, module in enumerate(plugins):
        # probed already, before any run, by the process that was given the opt-in
        import_plugin(module, field=f"plugins[{i}]", probe=False)

    from optsched.runs.sim_sweep import study_source
    from optsched.sim.comparison import world_from_trace
    from optsched.sim.engine.core import simulate
    from optsched.sim.measure.metrics import job_metrics, run_metrics
    from optsched.sim.measure.validate import validate
    from optsched.sim.world.cluster import parse_cluster
    from optsched.sim.world.sources import throughputs_source

    experiment = Experiment.from_dict(config["spec"])
    where = ExperimentFile(experiment, Path(base) / "experiment.toml", "", "")
    spec = parse_cluster(params["cluster"]).scaled(params["cluster_scale"])
    source, seed = study_source(where.resolve(params["trace"]), params["seed"])
    # the world every entry point builds (world_from_trace): one spelling, one table, as on
    # the command line (--throughputs; by default the trace's own, chosen from its content),
    # the clock at the first arrival, the seed and load applied as in `sim sweep`
    world = world_from_trace(
        source,
        spec,
        _table_value(experiment.throughputs, where),
        restore_s=experiment.restore_s,
        reference=experiment.reference,
        seed=seed,
        load=params["load"],
    )
    table = world.throughputs
    labels = experiment_labels(experiment)
    chosen = experiment.policy_specs[labels.index(params["policy"])]
    kwargs: dict[str, Any] = {}
    if experiment.round_seconds is not None:
        kwargs["round_seconds"] = experiment.round_seconds
    record = simulate(world, make_experiment_policy(chosen), **kwargs)
    report = validate(world, record)
    jobs = job_metrics(record)
    window = None if experiment.steady_state is None else experiment.steady_state.window
    try:
        metrics = run_metrics(record, jobs, window=window)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(f"steady_state.{exc.field}", exc.message) from None
    metrics.pop("policy", None)
    if window is not None:
        # the world's job list is in arrival order: the window is a slice of it
        jobs = jobs.iloc[window[0] : window[1]]
    done = jobs[jobs["finished"].astype(bool)]
    rho = done["rho"].to_numpy(dtype=float)
    bound = float(jobs["isolated_jct"].to_numpy(dtype=float).mean())
    jct_mean = metrics["jct_mean"]
    gap = (
        jct_mean / bound - 1.0
        if metrics["unfinished"] == 0 and bound > 0 and math.isfinite(bound)
        else math.nan
    )
    certified: dict[str, float] = {}
    if experiment.bounds:
        certified = _certified_gaps(world, done, metrics["unfinished"] == 0)
    return {
        **{k: params[k] for k in KEY_FIELDS},
        **metrics,
        **certified,
        "throughputs": throughputs_source(table),
        "valid": report.ok,
        "violations": len(report.violations),
        "events": record.events,
        "jct_bound": bound,
        "gap_jct_bound": gap,
        "jcts": np.sort(done["jct"].to_numpy(dtype=float)).tolist(),
        "rhos": np.sort(rho[np.isfinite(rho)]).tolist(),
    }


def _table_value(name: str | None, where: ExperimentFile) -> str | None:
    """What the file's ``throughputs`` names: a table name as is, a path resolved, or None."""
    from optsched.sim.world.sources import TABLE_NAMES

    if name is None or name in TABLE_NAMES:
        return name
    return where.resolve(name)


#: The closed-form relaxations of :func:`optsched.sim.optimum.bounds.bound` an experiment uses:
#: exact
#: arithmetic on the world alone, so a record never depends on a time limit or the machine.
BOUND_METHODS: dict[str, tuple[str, ...]] = {
    "weighted-jct": ("isolated", "mean-busy-time"),
    "makespan": ("isolated", "aggregated"),
}


def _certified_gaps(world: Any, done: pd.DataFrame, finished: bool) -> dict[str, float]:
    r"""The certified bounds and the run's gaps to them (NaN gaps when jobs did not finish).

    ``gap_weighted-jct`` is :math:`\sum_j w_j (C_j - a_j) / \underline{B} - 1` and
    ``gap_makespan`` is :math:`(\max_j C_j - \min_j a_j) / \underline{M} - 1` (the makespan and
    its bound both count from the first arrival), both :math:`\ge 0` for any schedule the
    simulator carries out.
    """
    from optsched.sim.optimum.bounds import bound, job_limits

    limits = job_limits(world)
    b_jct = bound(world, "weighted-jct", methods=BOUND_METHODS["weighted-jct"], limits=limits)
    b_span = bound(world, "makespan", methods=BOUND_METHODS["makespan"], limits=limits)
    total = float((done["weight"] * done["jct"]).sum())
    # the makespan from the first arrival, as its bound: the trace's clock cancels
    last = float(done["completion"].max()) - world.origin if len(done) else math.nan
    ok = finished and len(done) > 0
    return {
        "bound_weighted-jct": b_jct.value,
        "bound_makespan": b_span.value,
        "gap_weighted-jct": total / b_jct.value - 1.0 if ok and b_jct.value > 0 else math.nan,
        "gap_makespan": last / b_span.value - 1.0 if ok and b_span.value > 0 else math.nan,
    }


def _mean_ci(values: Any) -> tuple[float, float]:
    """Mean and the half-width of its Student-t confidence interval (NaN for one value)."""
    import numpy as np
    from scipy import stats

    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan
    sem = float(x.std(ddof=1)) / math.sqrt(len(x))
    return mean, float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(x) - 1)) * sem


def summarize(runs: pd.DataFrame, policies: list[str] | None = None) -> pd.DataFrame:
    r"""Per policy and group (trace, cluster, scale, load): each metric's mean and CI across seeds.

    The interval is Student's t at :data:`CONFIDENCE`: :math:`\bar x \pm t_{n-1}\, s/\sqrt n`
    over the :math:`n` seeds (columns ``<metric>_mean`` and ``<metric>_ci``, the half-width;
    ``NaN`` with a single seed). Non-finite values (a JCT over no finished job) are left out.

    Parameters
    ----------
    runs : DataFrame
        One row per run (:attr:`ExperimentResult.runs`).
    policies : list of str, optional
        Row order of the policies (default: sorted).
    """
    import pandas as pd

    if not len(runs) or "policy" not in runs.columns:
        # a store whose runs were all refused (or not yet run) has nothing to summarize
        return pd.DataFrame(columns=[*GROUP_FIELDS, "policy", "seeds", "valid"])
    groups = [c for c in GROUP_FIELDS if c in runs.columns]
    metrics = [m for m in SUMMARY_METRICS if m in runs.columns]
    order = policies or sorted(runs["policy"].unique())
    rank = {p: i for i, p in enumerate(order)}
    rows: list[dict[str, Any]] = []
    for key, part in runs.groupby([*groups, "policy"], sort=True):
        keys = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip([*groups, "policy"], keys, strict=True))
        row["seeds"] = len(part)
        row["valid"] = bool(part["valid"].astype(bool).all())
        for m in metrics:
            row[f"{m}_mean"], row[f"{m}_ci"] = _mean_ci(part[m].tolist())
        rows.append(row)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["_rank"] = frame["policy"].map(lambda p: rank.get(p, len(rank)))
        frame = frame.sort_values([*groups, "_rank"], kind="stable").drop(columns="_rank")
        frame = frame.reset_index(drop=True)
    return frame


#: Text fields of a stored run record; ``valid`` and ``truncated`` are booleans, ``jcts`` and
#: ``rhos`` lists of numbers, and every other field a number (``None`` for NaN, ``"inf"``).
_TEXT_FIELDS = frozenset({"trace", "cluster", "policy", "status", "throughputs"})
_BOOL_FIELDS = frozenset({"valid", "truncated"})
_LIST_FIELDS = frozenset({"jcts", "rhos"})
_INFINITE = frozenset({"inf", "-inf"})


def _is_number(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str) and value in _INFINITE)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


def _checked_record(record: dict[str, Any], key: str, file: str, kind: str) -> dict[str, Any]:
    """A stored run record checked against the schema of simulator records (field named).

    Whatever its checksum says (anyone editing the store can recompute it): the key fields
    present with their types, text where text belongs, numbers where numbers belong.

    Raises
    ------
    InvalidInstanceError
        Naming ``runs[<key>].<field>`` and the store.
    """
    where = f"runs[{key}]"
    # a `sim sweep` record takes its cluster from the store's config
    keys = KEY_FIELDS if kind == KIND else tuple(k for k in KEY_FIELDS if k != "cluster")
    required = [*keys, "valid"]
    for name in required:
        if name not in record:
            raise InvalidInstanceError(f"{where}.{name}", "is missing from the record", file=file)
    for name, value in record.items():
        if name in _TEXT_FIELDS:
            ok = isinstance(value, str)
            want = "text"
        elif name in _BOOL_FIELDS:
            ok = isinstance(value, bool)
            want = "true or false"
        elif name in _LIST_FIELDS:
            ok = isinstance(value, list) and all(_is_number(v) for v in value)
            want = "a list of numbers"
        elif name == "seed":
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            want = "an integer >= 0"
        else:
            ok = _is_number(value)
            want = "a number"
        if not ok:
            shown = (
                repr(value) if isinstance(value, str | int | float | bool) else type(value).__name__
            )
            raise InvalidInstanceError(
                f"{where}.{name}", f"must be {want}, got {shown[:60]}", file=file
            )
    return record


@dataclass
class ExperimentResult:
    r"""The runs of an experiment (or of a simulator sweep store), with the file that made them.

    Attributes
    ----------
    runs : DataFrame
        One row per run: the key fields and run metrics (the per-job lists are in
        :attr:`jcts` and :attr:`rhos`).
    jcts, rhos : dict
        Run key tuple (``KEY_FIELDS`` order) -> sorted JCTs / :math:`\rho` of finished jobs.
    name, text, sha256 : str
        The experiment's name, file text and the text's SHA-256 (empty for a plain sweep).
    policies : list of str
        Policy labels in the file's order.
    store : str, optional
        The store the runs were read from or written to.
    notes : list of str
        The seeds and loads that change nothing on a trace
        (:func:`~optsched.runs.sim_sweep.study_notes`; empty when read from a store).
    policy_specs : dict of str to str
        Per label, the registry name of the policy it labels.
    """

    runs: pd.DataFrame
    jcts: dict[tuple[Any, ...], list[float]] = field(default_factory=dict)
    rhos: dict[tuple[Any, ...], list[float]] = field(default_factory=dict)
    name: str = ""
    text: str = ""
    sha256: str = ""
    policies: list[str] = field(default_factory=list)
    store: str | None = None
    notes: list[str] = field(default_factory=list)
    policy_specs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], **info: Any) -> ExperimentResult:
        """Build from run records (as stored), splitting off the per-job lists."""
        import pandas as pd

        jcts: dict[tuple[Any, ...], list[float]] = {}
        rhos: dict[tuple[Any, ...], list[float]] = {}
        rows = []
        for rec in records:
            rec = dict(rec)
            key = tuple(rec.get(k) for k in KEY_FIELDS)
            if "jcts" in rec:
                jcts[key] = [float(v) for v in rec.pop("jcts")]
            if "rhos" in rec:
                rhos[key] = [float(v) for v in rec.pop("rhos")]
            rows.append(rec)
        frame = pd.DataFrame(rows)
        keys = [k for k in KEY_FIELDS if k in frame.columns]
        if len(frame):
            rest = sorted(c for c in frame.columns if c not in keys)
            frame = frame[[*keys, *rest]].sort_values(keys, kind="stable")
            frame = frame.reset_index(drop=True)
            for c in SUMMARY_METRICS:
                if c in frame.columns:
                    frame[c] = pd.to_numeric(frame[c], errors="coerce")
        return cls(runs=frame, jcts=jcts, rhos=rhos, **info)

    @classmethod
    def from_store(cls, path: str | Path) -> ExperimentResult:
        """Read an experiment store, or a ``sim sweep`` store (no per-job lists, no file).

        Raises
        ------
        InvalidInstanceError
            Not a store, a store of another kind, a corrupt record, or stored text whose
            SHA-256 differs from the one in the store's config.
        """
        from optsched.runs.sim_sweep import KIND as SWEEP_KIND
        from optsched.runs.store import RunStore

        with RunStore.open_existing(path) as store:
            if store.kind not in (KIND, SWEEP_KIND):
                raise InvalidInstanceError(
                    "kind",
                    f"{store.path} holds a {store.kind!r} sweep, not a simulator sweep",
                    file=str(store.path),
                )
            records = store.items()
            checked = [_checked_record(r, k, str(store.path), store.kind) for k, r in records]
            text = store.get_meta("experiment.toml") or ""
            config = store.config
            where = str(store.path)
        info: dict[str, Any] = {"store": where}
        if store.kind == KIND:
            if _sha256(text) != config.get("experiment_sha256"):
                raise InvalidInstanceError(
                    "experiment.toml",
                    "the stored experiment text does not match its SHA-256 in the config",
                    file=where,
                )
            spec = config.get("spec")
            try:
                experiment = parse(Experiment, spec, "config.spec")
            except InvalidInstanceError as exc:
                raise InvalidInstanceError(
                    exc.field, f"the stored experiment is not valid: {exc.message}", file=where
                ) from None
            info.update(
                name=experiment.name,
                text=text,
                sha256=config["experiment_sha256"],
                policies=config.get("labels") or [s.shown for s in experiment.policy_specs],
            )
        else:
            cluster = config.get("cluster")
            if not isinstance(cluster, str):
                raise InvalidInstanceError(
                    "config.cluster", "the stored sweep names no cluster", file=where
                )
            for rec in checked:
                rec.setdefault("cluster", cluster)
            info["name"] = Path(where).stem
        return cls.from_records(checked, **info)

    def to_frame(self) -> pd.DataFrame:
        """The per-policy summary (means and confidence intervals across seeds)."""
        return summarize(self.runs, self.policies or None)

    def _repr_html_(self) -> str:
        import html

        title = html.escape(self.name or "simulator sweep")
        head = f"<h4>{title}: {len(self.runs)} runs</h4>"
        table = self.to_frame().to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}")
        return head + table


def run_experiment(
    source: str | Path | ExperimentFile | Experiment,
    *,
    store: str | Path | None = None,
    backend: str = "joblib",
    n_jobs: int | None = None,
    client: Any = None,
    address: str | None = None,
    progress: bool = False,
    allow_plugins: bool = False,
    plugin_timeout: float | None = None,
) -> ExperimentResult:
    """Run every combination an experiment file names; resumable through its store.

    Parameters
    ----------
    source : str, Path, ExperimentFile or Experiment
        The experiment file (TOML), its loaded form, or an experiment built in code (its
        relative paths resolve against the working directory).
    store : str or Path, optional
        Run store (default: ``outputs.store`` of the file, relative to it; else none).
    backend, n_jobs, client, address, progress
        As in :func:`optsched.runs.sim_sweep.sweep`.
    allow_plugins : bool, default False
        Import the modules the experiment names under ``plugins`` (they run code); without it
        an experiment naming plug-ins is refused (field ``plugins``).
    plugin_timeout : float, optional
        Seconds each plug-in's import probe may take (default
        :data:`~optsched.sim.policies.registry.PLUGIN_PROBE_SECONDS`).

    Returns
    -------
    ExperimentResult
        Every run, stored before or now, with the file's text and SHA-256.

    Raises
    ------
    InvalidInstanceError
        A bad file (file and key named), a store of another experiment
        (``config.experiment_sha256``), a trace that fails to read.
    """
    from contextlib import ExitStack

    from optsched.runs.sim_sweep import BACKENDS
    from optsched.runs.store import RunStore, as_stored, run_key

    if isinstance(source, Experiment):
        loaded = ExperimentFile.from_experiment(source)
        import_plugins(loaded, allow=allow_plugins, timeout=plugin_timeout)
        experiment_labels(source)
    elif isinstance(source, ExperimentFile):
        loaded = source
    else:
        loaded = load_experiment(source, allow_plugins=allow_plugins, plugin_timeout=plugin_timeout)
    experiment = loaded.experiment
    # an ExperimentFile comes from load_experiment, which imported its plug-ins if allowed;
    # the opt-in is asked again here, and the workers import the same modules
    plugins = import_plugins(loaded, allow=allow_plugins, timeout=plugin_timeout)
    if backend not in BACKENDS:
        raise InvalidInstanceError("backend", f"unknown backend {backend!r}; known: {BACKENDS}")
    if store is None and experiment.outputs.store is not None:
        store = resolve_output(loaded, experiment.outputs.store, "outputs.store")
    labels = experiment_labels(experiment)
    params = [
        {
            "trace": t,
            "cluster": c,
            "cluster_scale": float(s),
            "seed": int(seed),
            "load": float(ld),
            "policy": p,
        }
        for t in experiment.traces
        for c in experiment.clusters
        for s in experiment.cluster_scales
        for seed in experiment.seeds
        for ld in experiment.loads
        for p in labels
    ]
    from optsched.sim.world.sources import TABLE_NAMES

    # a table name ("gavel", "uniform") is no file; a path is, and its bytes are recorded
    named = experiment.throughputs
    inputs = [named] if named and named not in TABLE_NAMES else []
    inputs += [t for t in experiment.traces if not t.startswith(_SYNTHETIC)]
    digests = {}
    for name in inputs:
        resolved = loaded.resolve(name)
        if not Path(resolved).is_file():
            key = "throughputs" if name == experiment.throughputs else "traces"
            raise InvalidInstanceError(
                key if key == "throughputs" else f"traces[{experiment.traces.index(name)}]",
                f"{resolved}: no such file",
                file=str(loaded.path),
            )
        digests[name] = _file_digest(resolved)
    if named:
        from optsched.sim.world.cluster import parse_cluster
        from optsched.sim.world.sources import resolve_throughputs

        # a table that cannot serve a cluster (a GPU type it does not measure, a bad
        # reference) is refused before any run, naming the key
        for cluster in experiment.clusters:
            resolve_throughputs(
                _table_value(named, loaded), parse_cluster(cluster), reference=experiment.reference
            )
    config: dict[str, Any] = {
        "experiment_sha256": loaded.sha256,
        "spec": experiment.to_dict(),
    }
    if not named:
        # the default table follows the traces' content (Gavel job types with step counts:
        # Gavel's table; ElasticFlow's profiled models: its A100 profiles), where stores made
        # before chose it by file format or without ElasticFlow's profiles: such a store is
        # refused on resume, naming this key, rather than mixing runs on two tables
        config["default_throughputs"] = DEFAULT_THROUGHPUTS_RULE
    if labels != [s.shown for s in experiment.policy_specs]:
        # a policy labelled by the name it gives itself, where stores made before labelled it
        # by its registry name: such a store is refused on resume, naming this key
        config["labels"] = labels
    tasks = [SweepTask(key=run_key(**r), params=r) for r in params]
    fn = partial(run_one, config=config, base=str(loaded.base.resolve()), plugins=tuple(plugins))
    with ExitStack() as stack:
        opened = None
        if store is not None:
            opened = stack.enter_context(RunStore(store, kind=KIND, config=config))
            opened.set_meta("experiment.toml", loaded.text)
            opened.set_meta("inputs.sha256", "\n".join(f"{v}  {k}" for k, v in digests.items()))
        bar = stack.enter_context(progress_bar(f"experiment {experiment.name}", show=progress))
        records = run_sweep(
            tasks,
            fn,
            store=opened,
            backend=backend,
            n_jobs=n_jobs,
            progress=bar,
            client=client,
            address=address,
        ).records
    from optsched.runs.sim_sweep import study_notes

    traces = experiment.traces
    notes = study_notes(
        [loaded.resolve(t) for t in traces], experiment.seeds, experiment.loads, names=traces
    )
    return ExperimentResult.from_records(
        [as_stored(r) for r in records],
        name=experiment.name,
        text=loaded.text,
        sha256=loaded.sha256,
        policies=labels,
        store=None if store is None else str(store),
        notes=notes,
        policy_specs={k: s.name for k, s in zip(labels, experiment.policy_specs, strict=True)},
    )
