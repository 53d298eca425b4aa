r"""Every policy on the same world, side by side, and (on small traces) their gap to the optimum.

:func:`compare` runs each named policy on one world, checks every record with the independent
validator, and tabulates the run metrics (:func:`~optsched.sim.run_metrics`). With
``exact=True`` it also solves the exact model of the round-based world
(:mod:`optsched.sim.optimum.exact`) for each objective asked and reports every policy's gap to it:

* ``gap_weighted-jct`` and ``gap_makespan``: relative, :math:`(v - v^*) / v^*`, ``v`` the
  policy's total weighted JCT :math:`\sum_j w_j (C_j - a_j)` (resp. its makespan
  :math:`\max_j C_j - \min_j a_j`, counted from the first arrival like the ``makespan`` column)
  and :math:`v^*` the optimum's;
* ``gap_deadlines``: in jobs, :math:`v^* - v` (deadlines the policy misses that the optimum meets).

**Like for like, or no gap.** Asking for the optimum never changes the policies' runs: every
policy runs with the round length it would have without ``exact`` (``round_seconds`` when given,
else its own), so its row is the same with and without the optimum. The exact model runs on the
policies' grid: ``round_seconds`` when given, else the round length most of the round-based
policies ran with, as long as the model's size (jobs x
:func:`~optsched.sim.optimum.exact.default_rounds`)
is within :attr:`~optsched.limits.Budget.max_exact_job_rounds`. Otherwise (every policy
event-driven, or too many rounds) it is solved on :func:`auto_round_seconds`, and
:attr:`Comparison.exact_grid` says it is the *optimum of another world*. A row gets a gap to the
optimum only when it ran in the model's very world (``like_for_like``): on its grid, with no
decision point inside a round (``wakeups``), no GPU shared (``shared``) and every gang at its
size (``resized``); any other row says why in ``outside`` and its ``gap_<objective>`` is NaN,
never a difference of worlds read as a gap. A like-for-like row below a proven optimum (beyond
:data:`~optsched.tolerances.SOLVER_AGREEMENT_TOL`) is a contradiction and raises
:class:`~optsched.errors.InconsistentResultError`; one within it shows a gap of 0.

With ``bound=True`` (any trace size) every row also gets ``bound_gap_<objective>``, its gap to
the certified bound of :mod:`optsched.sim.optimum.bounds`: at most how far the policy is from the
optimum of *every* schedule the simulator can carry out, event-driven, sharing or not, so never
negative; it is the gap of the rows outside the model's world.

**One clock.** A world built from a trace (:func:`world_from_trace`) starts its clock at the
first arrival (:meth:`World.rebased <optsched.sim.World.rebased>`), and the makespan, its bound
and its optimum are all counted from the first arrival, so a trace shifted in time gives the
same rows, bounds, optima and gaps. The weighted JCT and the deadlines met never depended on the
clock (:math:`C_j - a_j`; deadlines move with their jobs).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched import limits
from optsched.errors import InconsistentResultError, InvalidInstanceError, NotOptimalError
from optsched.results import ExactResult
from optsched.sim.measure.record import SimResult
from optsched.sim.optimum.bounds import Bound, certified_gap
from optsched.sim.world.jobs import World
from optsched.tolerances import SOLVER_AGREEMENT_TOL

if TYPE_CHECKING:
    import pandas as pd

    from optsched.sim.engine.policy import Policy
    from optsched.sim.world.cluster import ClusterSpec
    from optsched.sim.world.throughputs import Throughputs

__all__ = [
    "METRIC_COLUMNS",
    "START_CANDIDATES",
    "Comparison",
    "arrival_knob_notes",
    "auto_round_seconds",
    "compare",
    "exact_starts",
    "labelled_policies",
    "study_frame",
    "world_from_trace",
]

#: The deadline counts under admission control, in a row when the trace has deadlines.
ADMISSION_COLUMNS: tuple[str, ...] = (
    "deadlines_met_admitted",
    "deadlines_declined",
    "deadlines_late",
)
#: The run metrics of every row, in order.
METRIC_COLUMNS: tuple[str, ...] = (
    "jct_mean",
    "jct_median",
    "jct_p95",
    "jct_p99",
    "weighted_jct_mean",
    "makespan",
    "rho_max",
    "ftf_rho_max",
    "deadlines",
    "deadlines_met",
    "best_effort_jct_mean",
    "gpu_hours",
    "energy_kwh",
    "finished",
    "unfinished",
    "spread_gang_seconds_with_room",
)

#: Rounds the automatic round length aims at for the exact model.
AUTO_ROUNDS = 24


def auto_round_seconds(world: World, target_rounds: int = AUTO_ROUNDS) -> float:
    """A round length giving the exact model about ``target_rounds`` rounds (whole minutes).

    ``L = 60 ceil(S / (60 R))`` with ``S`` the last arrival plus every job alone on its slowest
    type, one after another (the serial schedule that
    :func:`~optsched.sim.optimum.exact.default_rounds`
    counts), and ``R = target_rounds``; at least 60 s.
    """
    if not world.jobs:
        return 60.0
    serial = max(j.arrival for j in world.jobs)
    for j in world.jobs:
        rates = [
            world.rate(j, t.name, True)
            for t in world.cluster.gpu_types
            if t.count >= j.num_gpus and world.rate(j, t.name, True) > 0
        ]
        serial += j.work / min(rates)
    return 60.0 * max(1, math.ceil(serial / (60.0 * max(1, target_rounds))))


def world_from_trace(
    trace: Any,
    cluster: ClusterSpec | str,
    throughputs: Throughputs | str | Path | None = None,
    *,
    restore_s: float = 0.0,
    reference: str = "v100",
    cluster_field: str = "cluster",
    throughputs_field: str = "throughputs",
    batch_modes: bool = True,
    rebase: bool = True,
    seed: int = 0,
    load: float = 1.0,
) -> World:
    """A world from a :class:`~optsched.traces.Trace` (its ``jobs`` table), a job table or a path.

    Every entry point builds its worlds here (:func:`compare`, ``optsched sim run | compare``,
    :func:`~optsched.runs.sim_sweep.sweep` and experiment files for each of their runs), so
    that one study means one world whichever runs it. ``seed`` and ``load`` are the study's
    two arrival knobs, applied to the job table by :func:`study_frame` before the world is
    built (seed 0 and load 1: the trace as it is).

    The world's clock starts at the trace's first arrival (``rebase``, :meth:`World.rebased`):
    rounds then fall at the same phase of the arrivals wherever the trace's clock started, and
    every result (makespan, bounds, optimum, gaps) is the same for a trace shifted in time.
    ``rebase=False`` keeps the trace's clock.

    ``cluster`` is a :class:`~optsched.sim.ClusterSpec` or its text (``"v100=4,k80=4"``);
    ``throughputs`` anything :func:`~optsched.sim.world.sources.resolve_throughputs` takes.
    By default a trace of Gavel's jobs (read from Gavel's format, or a table whose every job has
    a step count and names a Gavel job type, as ``trace convert`` writes one) runs on Gavel's
    measured table, any other on uniform speeds (the table's ``source`` says which;
    :func:`~optsched.sim.world.sources.default_table_name`). ``batch_modes``: see
    :func:`~optsched.sim.jobs_from_frame` (batch-size schedules of the ``accordion``/``gns`` jobs
    of Shockwave's traces; false: every job static).
    """
    from optsched.sim.world.cluster import ClusterSpec as _Spec
    from optsched.sim.world.cluster import parse_cluster
    from optsched.sim.world.sources import resolve_throughputs

    if isinstance(trace, str | Path):
        from optsched.traces import read_trace

        trace = read_trace(trace)
    if isinstance(cluster, str):
        cluster = parse_cluster(cluster, field=cluster_field)
    elif not isinstance(cluster, _Spec):
        raise InvalidInstanceError(
            cluster_field,
            f"must be a ClusterSpec or its text ('v100=4,k80=4'), got {type(cluster).__name__}",
        )
    frame = study_frame(getattr(trace, "jobs", trace), seed=seed, load=load)
    file = getattr(trace, "path", None)
    table = resolve_throughputs(
        throughputs,
        cluster,
        trace_format=getattr(trace, "format", None),
        reference=reference,
        field=throughputs_field,
        jobs=frame,
    )
    world = World.from_frame(
        frame,
        cluster,
        table,
        restore_s=restore_s,
        file=None if file is None else str(file),
        batch_modes=batch_modes,
    )
    return world.rebased() if rebase else world


def study_frame(frame: pd.DataFrame, *, seed: int = 0, load: float = 1.0) -> pd.DataFrame:
    r"""The job table of one (seed, load) point of a study: the arrivals resampled and rescaled.

    * ``seed``: 0 keeps the arrivals as they are; ``s > 0`` permutes the inter-arrival gaps
      with ``numpy.random.default_rng(s)`` (job sizes, order and first arrival kept), a
      resampling of the same workload. It changes nothing else: a policy's own random stream
      (``gavel-fifo``, ``gavel-gandiva``, ``andreas``, ``random-placement``) has its own
      ``seed`` option, which this seed does not set.
    * ``load``: every arrival divided by ``load`` (2: twice the arrival rate), each deadline
      keeping its slack :math:`d_j - a_j`.

    Both act on the gaps between arrivals only, so they change nothing when every arrival is
    the same (after the world's clock starts at the first arrival, every job arrives at 0),
    and the seed changes nothing when the gaps are all equal (:func:`arrival_knob_notes`
    says so for a study). The table given is never modified (a copy is returned when
    anything changes). :math:`O(n)`.

    Raises
    ------
    InvalidInstanceError
        ``seed`` not an integer >= 0, ``load`` outside ``RANGES["load"]``, or a last arrival
        beyond the largest a trace may have (naming ``seed`` / ``load``).
    """
    import numpy as np

    from optsched.limits import RANGES, check_range

    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidInstanceError("seed", f"must be an integer >= 0, got {seed!r}")
    if seed > 0 and len(frame) > 1:
        frame = frame.copy()
        arrivals = frame["arrival"].to_numpy(dtype=float)
        gaps = np.diff(arrivals)
        np.random.default_rng(int(seed)).shuffle(gaps)
        frame["arrival"] = np.concatenate([[arrivals[0]], arrivals[0] + np.cumsum(gaps)])
    if load != 1.0:
        check_range("load", load, "load")
        frame = frame.copy()
        before = frame["arrival"].astype(float)
        frame["arrival"] = before / load
        top = RANGES["arrival"].high
        if len(frame) and float(frame["arrival"].max()) > top:
            raise InvalidInstanceError(
                "load", f"{load:g} would move the last arrival beyond {top:g} s (a trace's largest)"
            )
        if "deadline" in frame:
            frame["deadline"] = frame["deadline"].astype(float) - before + frame["arrival"]
    return frame


def arrival_knob_notes(
    frame: pd.DataFrame, *, seeds: Sequence[int], loads: Sequence[float], name: str = "the trace"
) -> list[str]:
    """Which of a study's seeds and loads change nothing on this job table, in words.

    A load divides the times between arrivals and a seed permutes the gaps between them
    (:func:`study_frame`): when every job arrives at the same time, every load and every seed
    gives the same world (a sweep's rows are then identical, which would otherwise look like
    a result); when the gaps are all equal, every seed does. A knob is noted only when the
    study varies it (more than one value, or a value other than seed 0 / load 1). Empty when
    every knob the study varies changes the world. :math:`O(n)`.
    """
    import numpy as np

    arrivals = np.asarray(frame["arrival"], dtype=float)
    gaps = np.diff(arrivals)
    notes: list[str] = []
    same_time = len(arrivals) <= 1 or bool((gaps == 0).all())
    when = "" if not len(arrivals) else f" ({arrivals[0]:g} s)"
    varies_load = len(loads) > 1 or any(float(v) != 1.0 for v in loads)
    varies_seed = len(seeds) > 1 or any(int(v) != 0 for v in seeds)
    if same_time and varies_load:
        shown = ", ".join(f"{float(v):g}" for v in loads)
        notes.append(
            f"{name}: every job arrives at the same time{when}, so the loads ({shown}) give "
            "identical runs: a load divides the gaps between arrivals, and there are none"
        )
    if varies_seed and (same_time or bool((gaps == gaps[0]).all())):
        shown = ", ".join(str(int(v)) for v in seeds)
        why = (
            f"every job arrives at the same time{when}"
            if same_time
            else f"the gaps between arrivals are all {gaps[0]:g} s"
        )
        notes.append(
            f"{name}: {why}, so the seeds ({shown}) give identical runs: a seed permutes the "
            "gaps between arrivals and sets no policy's random stream"
        )
    return notes


def labelled_policies(
    policies: str | Policy | Iterable[str | Policy], *, field: str = "policies"
) -> list[tuple[Policy, str]]:
    """The policies a study names, each with its *spec*: the text that named it.

    As :func:`~optsched.sim.policies.as_policies` (names, ``module:attr`` factories, Policy
    objects, a comma string, ``"all"``), and every table labels a policy by its ``name``
    attribute (``mypol:SmallestGangFastest`` is shown as the name its class gives). Only a
    policy made from a spec whose class gives no name of its own (the base class's
    ``"policy"``) is named by its spec. The spec of an object given as is is its class's
    ``module:qualname``. Two policies with one name are refused, naming it: rows, run keys
    and stores tell policies apart by name.

    Raises
    ------
    InvalidInstanceError
        Naming ``field``: as ``as_policies``, and a name shared by two policies.
    """
    from optsched.sim.engine.policy import Policy as _Policy
    from optsched.sim.policies import all_policy_names, as_policies, make_policy

    items: list[Any] | None = None
    if isinstance(policies, _Policy):
        items = [policies]
    elif isinstance(policies, str):
        text = policies.strip()
        items = list(all_policy_names()) if text == "all" else [t.strip() for t in text.split(",")]
    else:
        try:
            items = list(policies)  # any iterable of names and objects (a generator too)
        except TypeError:
            items = None
    if not items or any(not (isinstance(i, _Policy) or (isinstance(i, str) and i)) for i in items):
        # raises, naming the field (a string as given: its message quotes it)
        as_policies(items if items is not None and not isinstance(policies, str) else policies,
                    field=field)  # fmt: skip
        raise InvalidInstanceError(field, "must name at least one policy")
    made: list[tuple[_Policy, str]] = []
    for item in items:
        policy = make_policy(item, field=field)
        if isinstance(item, str):
            spec = item
            if policy.name == _Policy.name:
                policy.name = item  # the class gives no name: its spec is the label
        else:
            spec = f"{type(item).__module__}:{type(item).__qualname__}"
        made.append((policy, spec))
    names = [p.name for p, _ in made]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        specs = "; ".join(f"{n}: " + ", ".join(s for p, s in made if p.name == n) for n in twice)
        raise InvalidInstanceError(
            field,
            f"a policy is named twice ({specs}); policies are told apart by their name "
            "attribute: give each its own",
        )
    return made


@dataclass(frozen=True)
class Comparison:
    """Policies side by side on one world.

    Attributes
    ----------
    world : World
    round_seconds : float, "policy" or None
        The round length every policy ran with (``"policy"``: each policy's own; ``None``:
        event-driven).
    runs : dict of str to SimResult
        Per policy, its validated record.
    metrics : dict of str to dict
        Per policy, its run metrics plus ``valid``, ``wakeups``, ``shared`` and the objectives.
    exact : dict of str to ExactResult
        Per objective solved, the exact result (its solution is the optimum's record).
    exact_round_seconds : float or None
        The round length of the exact model's grid (``None`` without ``exact``).
    exact_grid : str
        Where that grid comes from: ``"given"`` (``round_seconds``), ``"policies"`` (the
        policies' own round length), or ``"another world: <why>"`` (a coarser grid no policy
        ran on: no row outside the optimum's own gets a gap); ``""`` without ``exact``.
    window : (int, int or None) or None
        The steady-state window of arrival indices the metrics count (``None``: every job).
    bounds : dict of str to Bound
        Per objective, the certified bound on the world's optimum
        (:func:`optsched.sim.optimum.bounds.bounds`; empty unless asked for). Every row then has
        ``bound_gap_<objective>``: at most how far it is from optimal, whatever the policy's
        rounds (relative; in jobs for ``deadlines``).
    policy_specs : dict of str to str
        Per policy (its ``name``, the rows' label), the text that named it: a registry name,
        ``module:attr``, or the class of an object given (:func:`labelled_policies`).
    """

    world: World
    round_seconds: float | str | None
    runs: dict[str, SimResult]
    metrics: dict[str, dict[str, Any]]
    exact: dict[str, ExactResult[SimResult]] = field(default_factory=dict)
    exact_round_seconds: float | None = None
    window: tuple[int, int | None] | None = None
    bounds: dict[str, Bound] = field(default_factory=dict)
    exact_starts: dict[str, dict[str, Any]] = field(default_factory=dict)
    exact_grid: str = ""
    policy_specs: dict[str, str] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per policy (then one per exact optimum): metrics, objectives and gaps.

        With exact optima: ``same_grid``, ``like_for_like``, ``outside`` (why a row is not in
        the optimum's world, ``""`` when it is; an optimum of another world says so on its own
        row) and ``gap_<objective>`` (NaN outside the optimum's world).
        """
        import pandas as pd

        rows = [dict(m) for m in self.metrics.values()]
        for objective, res in self.exact.items():
            if res.solution is None:
                continue
            row = _row(self.world, res.solution, f"exact-{objective}", self.window)
            row["exact_status"] = res.status.value
            row["round_seconds"] = self.exact_round_seconds
            rows.append(row)
        for row in rows:
            if self.exact:
                grid = self.exact_round_seconds
                rs = row.get("round_seconds")
                row["same_grid"] = bool(rs is not None and grid is not None and rs == grid)
                mine = str(row["policy"]).startswith("exact-")
                why = outside_reasons(row, grid)
                if mine:
                    other = self.exact_grid.startswith("another world")
                    why = ["optimum of another world"] if other else []
                row["outside"] = ", ".join(why)
                row["like_for_like"] = mine or not why
            for objective, res in self.exact.items():
                gap = _gap(objective, row[f"obj_{objective}"], res.objective)
                if not row["like_for_like"]:
                    gap = math.nan  # another world: a difference of worlds, not a gap
                elif res.optimal and -SOLVER_AGREEMENT_TOL <= gap < 0:
                    gap = 0.0  # equal to the proven optimum within the solve's tolerance
                row[f"gap_{objective}"] = gap
            for objective, b in self.bounds.items():
                row[f"bound_gap_{objective}"] = certified_gap(
                    objective, row[f"obj_{objective}"], b.value
                )
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the table's rows and each exact result's summary."""
        frame = self.to_frame()
        records = [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict(orient="records")
        ]
        return {
            "round_seconds": self.round_seconds,
            "throughputs": self.throughputs,
            "exact_round_seconds": self.exact_round_seconds,
            "exact_grid": self.exact_grid,
            "window": None if self.window is None else list(self.window),
            "policies": records,
            "exact": {k: v.summary() for k, v in self.exact.items()},
            "bounds": {k: b.to_dict() for k, b in self.bounds.items()},
            "exact_starts": self.exact_starts,
            "policy_specs": self.policy_specs,
        }

    @property
    def throughputs(self) -> str:
        """The source of the throughput table every policy ran on (``"gavel"``, a path, ...)."""
        return self.world.throughputs.source or "custom"

    def __repr__(self) -> str:
        return (
            f"Comparison({len(self.runs)} policies on {len(self.world.jobs)} jobs, "
            f"throughputs={self.throughputs}, exact={sorted(self.exact)})"
        )

    def _repr_html_(self) -> str:
        # the summary line (policies, jobs, throughput table) above the table of every row
        table = self.to_frame().to_html(escape=True, index=False)
        return f"<p>{html.escape(repr(self))}</p>\n{table}"


def outside_reasons(row: Mapping[str, Any], grid: float | None) -> list[str]:
    """Why a comparison row is outside the exact model's world on ``grid`` (empty: it is in).

    The model decides only at round starts ``k L`` (no ``wakeups``), never pairs jobs
    (``shared``), runs every gang at its own size (``resized``) and is the optsched engine's
    round world (a row run by another ``mechanism`` is outside it).
    """
    why = []
    rs = row.get("round_seconds")
    if rs is None or (isinstance(rs, float) and math.isnan(rs)):
        why.append("event-driven")
    elif grid is None or rs != grid:
        why.append(f"own grid ({rs:g} s)")
    if row.get("wakeups"):
        why.append("wakes mid-round")
    if row.get("shared"):
        why.append("shares GPUs")
    if row.get("resized"):
        why.append("resizes gangs")
    if row.get("mechanism", "optsched") != "optsched":
        why.append(f"{row['mechanism']} mechanism")
    return why


def _gap(objective: str, value: float, best: float | None) -> float:
    if best is None or math.isnan(value):
        return math.nan
    if objective == "deadlines":
        return best - value
    return (value - best) / best if best > 0 else value - best


def _row(
    world: World, record: SimResult, name: str, window: tuple[int, int | None] | None = None
) -> dict[str, Any]:
    from optsched.sim.measure.metrics import job_metrics, run_metrics
    from optsched.sim.measure.validate import validate
    from optsched.sim.optimum.exact import OBJECTIVES, objective_value

    metrics = run_metrics(record, job_metrics(record), window=window)
    # the record's world: a mechanism may widen the jobs' gang bounds (ElasticFlow's)
    report = validate(record.world, record)
    intervals = record.intervals_frame()
    row: dict[str, Any] = {"policy": name}
    row.update({c: metrics[c] for c in METRIC_COLUMNS})
    # deadline traces: ElasticFlow's count beside optsched's (declined = missed)
    for c in ADMISSION_COLUMNS:
        if c in metrics:
            row[c] = metrics[c]
    declined = set(record.extra.get("declined_jobs", ()))
    if declined:
        # declined by an admission control: never run by design, not an unfinished run
        row["declined_unfinished"] = sum(
            1
            for j, done in zip(record.world.jobs, record.finished, strict=True)
            if not done and j.job_id in declined
        )
    row["valid"] = report.ok
    row["violation"] = str(report.violations[0]) if report.violations else ""
    row["status"] = record.status
    row["wakeups"] = int(record.extra.get("wakeups", 0))
    row["round_seconds"] = record.round_seconds
    row["shared"] = bool(len(intervals) and intervals["shared_with"].astype(bool).any())
    row["resized"] = _resized(world, intervals)
    for objective in OBJECTIVES:
        row[f"obj_{objective}"] = (
            objective_value(world, record, objective) if record.all_finished else math.nan
        )
    return row


def _resized(world: World, intervals: pd.DataFrame) -> bool:
    """Whether some stretch of a job held another number of GPUs than its gang size."""
    if not len(intervals):
        return False
    held = intervals.groupby(["job_id", "start"])["gpus"].sum()
    size = {j.job_id: j.num_gpus for j in world.jobs}
    return any(int(g) != size[jid] for (jid, _), g in held.items())


def _world_for(world: Any, cluster: Any, throughputs: Any, restore_s: float | None) -> World:
    """The World ``compare`` runs on: built from a trace, or the World given.

    A ``cluster`` or ``throughputs`` given beside a World is refused rather than ignored.
    """
    if not isinstance(world, World):
        if cluster is None:
            raise InvalidInstanceError("cluster", "a trace needs a cluster to simulate on")
        world = world_from_trace(world, cluster, throughputs, restore_s=restore_s or 0.0)
    elif throughputs is not None or cluster is not None:
        # a World carries its own cluster and table: a second one would be silently ignored
        raise InvalidInstanceError(
            "throughputs" if throughputs is not None else "cluster",
            "a World already holds its cluster and throughput table; pass a trace (or job "
            "table, or path) to build the world with these, or build the World with them",
        )
    elif restore_s is not None:
        import dataclasses

        if not (isinstance(restore_s, int | float) and math.isfinite(restore_s) and restore_s >= 0):
            raise InvalidInstanceError(
                "restore_s", f"must be a finite number >= 0, got {restore_s}"
            )
        world = dataclasses.replace(world, restore_s=float(restore_s))
    return world


def compare(
    world: Any,
    policies: str | Policy | Sequence[str | Policy],
    *,
    cluster: ClusterSpec | str | None = None,
    throughputs: Throughputs | str | Path | None = None,
    exact: bool = False,
    objectives: Sequence[str] = ("weighted-jct", "makespan", "deadlines"),
    round_seconds: float | str | None = "policy",
    restore_s: float | None = None,
    rounds: int | None = None,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    window: tuple[int, int | None] | None = None,
    mechanism: Any = "optsched",
    bound: bool = False,
    bound_time_limit: float | None = None,
    warm_start: bool = True,
) -> Comparison:
    """Run every policy in ``policies`` on ``world`` and, with ``exact``, the exact optima.

    Parameters
    ----------
    world : World, Trace, DataFrame or path
        A trace, job table or trace file needs ``cluster`` (text or
        :class:`~optsched.sim.ClusterSpec`) and optionally ``throughputs`` (``"gavel"``,
        ``"uniform"``, a path or a table; default: Gavel's for a Gavel-format trace, else uniform;
        see :mod:`optsched.sim.world.sources`). A World holds its own (giving either is refused).
    policies : sequence of str or Policy, str, or Policy
        Registered names (:func:`optsched.sim.policies.policy_names`, plug-ins included)
        and/or Policy objects, or one comma-separated string (``"fifo,srtf"``, ``"all"``).
    exact : bool, default False
        Also solve :func:`optsched.sim.optimum.exact.solve` for each of ``objectives``.
    round_seconds : float, "policy" or None, default "policy"
        As in :func:`~optsched.sim.simulate`: a round length for every policy (and for the exact
        model), ``"policy"`` for each policy's own, ``None`` for event-driven runs. The exact
        model runs on ``round_seconds`` when it is a number, else on the grid of
        :func:`exact_grid`; the policies' runs never depend on ``exact``.
    restore_s : float, optional
        Checkpoint/restore cost of each preemption or migration (s); default the world's own
        (0 for a trace).
    rounds, solver, time_limit, mip_gap, threads, accept_feasible
        For the exact solves (``time_limit`` per solve).
    bound : bool, default False
        Also compute the certified bounds (:func:`optsched.sim.optimum.bounds.bounds`) on the
        optimum for each of ``objectives`` and every row's gap to them (``bound_gap_<objective>``);
        computed after the policies and before the exact solves, so a solve stopped short keeps
        them.
    bound_time_limit : float, optional
        Seconds for the bounds (default ``time_limit``); under a command's deadline, what is left
        of it. The closed-form bounds always come back; the LPs that do not finish in time are
        left out (``Bound.complete`` is then false).
    warm_start : bool, default True
        With ``exact``: hand each solve the best policy's run on the exact grid as its MIP
        start (:func:`exact_starts`); ``Comparison.exact_starts`` says which run, or why none.
    window : (int, int or None), optional
        The steady-state window: the metrics count only the jobs of arrival index
        ``start <= k < end`` (:func:`~optsched.sim.measure.metrics.run_metrics`). The objectives
        and gaps stay over every job (the exact model optimizes the whole trace).
    mechanism : {"optsched", "gavel"} or GavelMechanism, default "optsched"
        How every policy's rounds are carried out (:func:`optsched.sim.simulate`).

    Returns
    -------
    Comparison

    Raises
    ------
    InvalidInstanceError
        No policy, an unknown policy or objective, a trace without ``cluster``, a world
        outside the exact model.
    NotOptimalError
        An exact solve stopped short and ``accept_feasible`` is false; ``error.comparison`` is
        the :class:`Comparison` computed until then (every policy's row, the exact results
        finished before).
    """
    world = _compare_world(world, cluster, throughputs, restore_s, round_seconds, exact, bound)
    labelled = labelled_policies(policies, field="policies")
    made = [p for p, _ in labelled]
    window = _checked_window_and_objectives(world, window, objectives)
    # the policies run first: cheap, and kept when an exact solve stops short
    runs, metrics = _run_policies(world, made, round_seconds, mechanism, window)
    specs = {p.name: spec for p, spec in labelled}
    done = Comparison(world, round_seconds, runs, metrics, window=window, policy_specs=specs)
    if exact or bound:
        solve = {"rounds": rounds, "solver": solver, "time_limit": time_limit, "mip_gap": mip_gap}
        solve.update(threads=threads, accept_feasible=accept_feasible)
        done = _with_optimum(
            done, made, objectives, exact, bound, bound_time_limit, warm_start, solve
        )
    _check_like_for_like(done)
    return done


def _compare_world(
    world: Any,
    cluster: Any,
    throughputs: Any,
    restore_s: float | None,
    round_seconds: float | str | None,
    exact: bool,
    bound: bool,
) -> World:
    """:func:`compare`'s world, once its round length and the world's mode are checked."""
    if isinstance(round_seconds, str) and round_seconds != "policy":
        raise InvalidInstanceError(
            "round_seconds",
            f"must be a number of seconds, 'policy' or None, got {round_seconds!r}",
        )
    world = _world_for(world, cluster, throughputs, restore_s)
    if world.colocation is not None and (exact or bound):
        # the exact model and the bounds know GPU types and pairs, not neighbours on a server
        raise InvalidInstanceError(
            "exact" if exact else "bound", "not available for a world in the colocation mode"
        )
    return world


def _checked_window_and_objectives(
    world: World, window: tuple[int, int | None] | None, objectives: Sequence[str]
) -> tuple[int, int | None] | None:
    """:func:`compare`'s steady-state window (checked) once every objective is known."""
    from optsched.sim.optimum.exact import OBJECTIVES

    if window is not None:
        from optsched.sim.measure.metrics import check_window

        window = check_window(window, len_jobs=len(world.jobs))
    for o in objectives:
        if o not in OBJECTIVES:
            raise InvalidInstanceError(
                "objectives", f"unknown objective {o!r}; known: {', '.join(OBJECTIVES)}"
            )
    return window


def _run_policies(
    world: World,
    made: Sequence[Policy],
    round_seconds: float | str | None,
    mechanism: Any,
    window: tuple[int, int | None] | None,
) -> tuple[dict[str, SimResult], dict[str, dict[str, Any]]]:
    """Every policy's record and metrics row (:func:`compare`'s first step), in order."""
    from optsched.sim.engine.core import simulate
    from optsched.solvers.deadline import suspended

    runs: dict[str, SimResult] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for policy in made:
        kwargs: dict[str, Any] = {"round_seconds": round_seconds}
        seed = getattr(mechanism, "seed", None)
        if seed is not None and hasattr(policy, "seed"):
            policy.seed = seed  # a seeded Gavel policy draws with Gavel's --seed
        # a policy's own LPs are not the exact solve the time limit bounds
        with suspended():
            record = simulate(world, policy, mechanism=mechanism, **kwargs)
        runs[policy.name] = record
        metrics[policy.name] = _row(world, record, policy.name, window)
        if not (isinstance(mechanism, str) and mechanism == "optsched"):
            # the exact model is the optsched engine's round world, not another mechanism's
            metrics[policy.name]["mechanism"] = (
                mechanism if isinstance(mechanism, str) else type(mechanism).__name__
            )
    return runs, metrics


def _with_optimum(
    done: Comparison,
    made: Sequence[Policy],
    objectives: Sequence[str],
    exact: bool,
    bound: bool,
    bound_time_limit: float | None,
    warm_start: bool,
    solve: dict[str, Any],
) -> Comparison:
    """``done`` (the policies' table) with the bounds and the exact optima :func:`compare` asks.

    The exact model's grid is the policies' (:func:`exact_grid`); the bounds come before the
    exact solves, and each solve is warm-started by the best run (:func:`exact_starts`).
    ``solve``: the solver's keywords (``rounds``, ``solver``, ``time_limit``, ``mip_gap``,
    ``threads``, ``accept_feasible``). A solve stopped short raises its
    :class:`NotOptimalError` with ``comparison``: the table computed until then.
    """
    import dataclasses

    from optsched.sim.optimum.exact import solve as solve_exact
    from optsched.solvers.deadline import suspended

    world, runs = done.world, done.runs
    # the optimum on the policies' grid (their round length never depends on ``exact``)
    grid, source = exact_grid(world, done.round_seconds, runs) if exact else (None, "")
    found: dict[str, Bound] = {}
    if bound:
        found = _bounds(world, objectives, bound_time_limit, solve["time_limit"], solve["solver"])
    done = dataclasses.replace(done, exact_round_seconds=grid, bounds=found, exact_grid=source)
    if grid is None:
        return done
    results: dict[str, ExactResult[SimResult]] = {}
    starts: dict[str, dict[str, Any]] = {}
    chosen: dict[str, Any] = {}
    if warm_start:
        with suspended():
            chosen, starts = exact_starts(
                world, made, runs, done.metrics, grid, objectives, solve["rounds"]
            )
    for o in objectives:
        try:
            results[o] = solve_exact(world, grid, o, **solve, warm_start=chosen.get(o))
        except NotOptimalError as exc:
            # a solve stopped short never takes the policies' table with it
            exc.comparison = dataclasses.replace(  # type: ignore[attr-defined]
                done, exact=results, exact_starts=starts
            )
            raise
    return dataclasses.replace(done, exact=results, exact_starts=starts)


def exact_grid(
    world: World, round_seconds: float | str | None, runs: Mapping[str, SimResult]
) -> tuple[float, str]:
    """The exact model's round length and where it comes from (:attr:`Comparison.exact_grid`).

    ``round_seconds`` when it is a number (every policy ran there); else the round length most
    round-based runs used (ties: the shortest) when jobs x
    :func:`~optsched.sim.optimum.exact.default_rounds` on it is within
    :attr:`~optsched.limits.Budget.max_exact_job_rounds`; else :func:`auto_round_seconds`, the
    optimum of another world.
    """
    from optsched.sim.optimum.exact import default_rounds

    if isinstance(round_seconds, int | float) and not isinstance(round_seconds, bool):
        return float(round_seconds), "given"
    lengths = [r.round_seconds for r in runs.values() if r.round_seconds is not None]
    if lengths:
        common = min(set(lengths), key=lambda v: (-lengths.count(v), v))
        size = len(world.jobs) * default_rounds(world, common)
        budget = limits.current().max_exact_job_rounds
        if size <= budget:
            return float(common), "policies"
        why = (
            f"the policies' rounds of {common:g} s make {size:,} job-rounds, more than "
            f"max_exact_job_rounds ({budget:,})"
        )
    else:
        why = "every policy is event-driven"
    auto = auto_round_seconds(world)
    return auto, f"another world: rounds of {auto:g} s ({why})"


def _check_like_for_like(comparison: Comparison) -> None:
    """A like-for-like row below a proven optimum is a contradiction: raise, never show it."""
    if not comparison.exact:
        return
    frame = comparison.to_frame()
    for objective, res in comparison.exact.items():
        if not res.optimal or res.objective is None:
            continue
        raw = [
            (str(r["policy"]), _gap(objective, r[f"obj_{objective}"], res.objective))
            for _, r in frame.iterrows()
            if r["like_for_like"]
        ]
        below = [(p, g) for p, g in raw if g < -SOLVER_AGREEMENT_TOL]
        if below:
            policy, gap = below[0]
            raise InconsistentResultError(
                f"{policy} runs in the exact model's world ({comparison.exact_round_seconds:g} s "
                f"rounds) yet beats its proven {objective} optimum by {-gap:.3g} (relative)"
            )


#: How many of the best-ranked policies ``compare`` tries as the exact model's MIP start.
START_CANDIDATES = 3


def exact_starts(
    world: World,
    policies: Sequence[Policy],
    runs: Mapping[str, SimResult],
    metrics: Mapping[str, Mapping[str, Any]],
    grid: float,
    objectives: Sequence[str],
    rounds: int | None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Per objective, the best policy's run on the exact grid as a MIP start, or why none.

    The :data:`START_CANDIDATES` policies best on the objective are tried; a run not on the
    exact grid is run again on it (a policy's runs never change). Each run goes through
    :func:`optsched.sim.optimum.exact.start_from_record`; the best start that maps is taken.

    Returns
    -------
    (dict, dict)
        Per objective the :class:`~optsched.sim.optimum.exact.MipStart` (absent when none maps), and
        per objective ``{"policy": name or None, "value": ..., "refused": {policy: reason}}``.
    """
    from optsched.sim.engine.core import simulate
    from optsched.sim.optimum.exact import OBJECTIVES, MipStart, start_from_record

    by_name = {p.name: p for p in policies}
    on_grid: dict[str, SimResult] = {}
    chosen: dict[str, MipStart] = {}
    said: dict[str, dict[str, Any]] = {}
    for o in objectives:
        sign = 1.0 if OBJECTIVES[o] == "min" else -1.0
        ranked = sorted(
            (n for n in runs if not math.isnan(metrics[n][f"obj_{o}"])),
            key=lambda n: sign * metrics[n][f"obj_{o}"],
        )[:START_CANDIDATES]
        refused: dict[str, str] = {}
        best: MipStart | None = None
        for name in ranked:
            record = runs[name]
            if record.round_seconds != grid:
                if name not in on_grid:
                    on_grid[name] = simulate(world, by_name[name], round_seconds=grid)
                record = on_grid[name]
            try:
                start = start_from_record(world, record, grid, o, rounds=rounds)
            except InvalidInstanceError as exc:
                refused[name] = exc.message
                continue
            if best is None or sign * (start.value - best.value) < 0:
                best = start
        if best is not None:
            chosen[o] = best
        said[o] = {
            "policy": None if best is None else best.policy,
            "value": None if best is None else best.value,
            "refused": refused,
        }
    return chosen, said


def _bounds(
    world: World,
    objectives: Sequence[str],
    bound_time_limit: float | None,
    time_limit: float | None,
    solver: str,
) -> dict[str, Bound]:
    from optsched.sim.optimum.bounds import bounds
    from optsched.solvers.deadline import clip

    limit = clip(bound_time_limit if bound_time_limit is not None else time_limit)
    if limit is not None:
        # nothing left: the closed forms still come back, the LPs are skipped
        limit = max(limit, 1e-9)
    return bounds(world, objectives, time_limit=limit, solver=solver)
