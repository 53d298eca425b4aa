"""``optsched sim compare`` and ``optsched sim sweep``, added to the ``sim`` group.

Subcommands
-----------
``compare TRACE --cluster v100=8,p100=16 --policies fifo,srtf,... [--exact] [--json]``
    Every policy on the same world, with its run metrics (the ``unfinished`` jobs of each
    policy among them); with ``--exact`` the exact optimum of the round-based world on the
    policies' grid for each objective and the gap to it of every policy in that world (none for
    the others, nor to an optimum of another world; exit 3 if a solve stops short, unless
    ``--accept-feasible``). Exit 1 when the validator rejects a policy's record (each named
    with its first violation), 3 when a policy left jobs unfinished (each named with its count).
``sweep TRACE... --cluster ... --policies ... [--scales] [--seeds] [--loads] --store DIR``
    Policies x traces x cluster scales x seeds x loads, resumable, on joblib, Dask or Ray.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from optsched.cli.common import (
    EXIT_NOT_OPTIMAL,
    NumberList,
    SolverOptions,
    err_console,
    json_option,
    output_option,
    print_json,
    print_written,
    solver_options,
    wide_option,
)
from optsched.errors import InvalidInstanceError, NotOptimalError

#: Exit code when a policy left jobs unfinished (valid records; as ``sim run``).
EXIT_UNFINISHED = 3

__all__ = ["register"]


def _policies(text: str) -> list[str]:
    from optsched.sim.policies import all_policy_names

    return list(all_policy_names()) if text.strip() == "all" else _names("--policies", text)


def _import_plugins(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple:
    from optsched.sim.policies import import_plugin

    for module in value:
        import_plugin(module, field="--plugin")
    return value


#: ``--plugin MODULE`` (repeatable): import MODULE first, so the policies it registers are known.
PLUGIN_OPTION = click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE|FILE.py",
    is_eager=True,
    expose_value=False,
    callback=_import_plugins,
    help="Import MODULE (a module name, or a .py file) before anything else (repeatable): "
    "the policies it registers with "
    "optsched.sim.policies.register_policy become known by name. Installed distributions "
    "register theirs through the entry-point group optsched.policies without this.",
)


def _names(flag: str, text: str) -> list[str]:
    names = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise InvalidInstanceError(flag, f"expected comma-separated names, got {text!r}")
    return names


#: Help of ``--throughputs`` (``sim run``, ``compare``, ``sweep``).
THROUGHPUTS_HELP = (
    "Throughput table: 'gavel' (Gavel's measured table, shipped), 'elasticflow' "
    "(ElasticFlow's A100 profiles, shipped), 'uniform' (every job "
    "generic, every GPU type equally fast), Gavel's simulation_throughputs.json format, or a "
    "directory of ElasticFlow profile CSVs (one per model) whose name ends in _<GPU type>, "
    "e.g. throughputs_A100 for the type a100 (then the reference type). Default: 'gavel' for "
    "a trace of Gavel's jobs (a Gavel .trace, or a CSV whose every job has total_steps and a "
    "Gavel job type, as trace convert writes it), 'elasticflow' for a trace whose every job "
    "has total_steps, a batch size and a model ElasticFlow profiled (its 8-column traces), "
    "'uniform' for the others; the table used is printed."
)


def profile_gpu_type(directory: Path) -> str:
    """GPU type of an ElasticFlow profile directory: its name after the last ``_``, lower-cased.

    ElasticFlow names its folders ``throughputs_A100`` and ``throughputs_T4`` (types ``a100``
    and ``t4``).
    """
    return directory.resolve().name.rsplit("_", 1)[-1].lower()


def _table(spec: Any, throughputs: Any, reference: str, trace: Any = None) -> Any:
    """The table ``--throughputs`` names (``None``: the trace's default), errors naming flags.

    ``trace`` (the :class:`~optsched.traces.Trace` read) selects the default from its content
    (:func:`~optsched.sim.world.sources.default_table_name`).
    """
    from optsched.sim.world.sources import TABLE_NAMES, resolve_throughputs

    value = throughputs if throughputs is None or throughputs in TABLE_NAMES else Path(throughputs)
    return resolve_throughputs(
        value,
        spec,
        trace_format=getattr(trace, "format", None),
        reference=reference,
        field="--throughputs",
        jobs=trace,
    )


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.5g}"
    return str(value)


def _exact_line(
    objective: str, res: Any, start: dict[str, Any] | None, unit: tuple[float, str] = (1.0, "s")
) -> str:
    """One exact solve: [bound, incumbent], gap and status, its grid, and its MIP start.

    The objective's values are in the table's time ``unit`` (jobs for ``deadlines``).
    """
    from optsched.cli.sim_table import objective_text

    def num(value: Any) -> str:
        return "-" if value is None else objective_text(objective, value, unit)

    side = "optimum >=" if res.sense == "min" else "optimum <="
    gap = "-" if res.gap is None else f"{res.gap:.3%}"
    head = (
        f"exact {objective}: {res.status.value}, [bound {num(res.bound)}, incumbent "
        f"{num(res.objective)}], gap {gap} (solver bound: {side} bound)"
    )
    if res.extra.get("rounds") is not None:
        head += f", {res.extra['rounds']} rounds of {_fmt(res.extra.get('round_seconds'))} s"
    used = res.extra.get("warm_start") or (start if start and start.get("policy") else None)
    if used:
        value = used.get("value")
        head += f"; MIP start: {used['policy']} ({'-' if value is None else num(value)})"
        if used.get("notes"):
            head += f", {'; '.join(used['notes'])}"
    elif start is not None:
        why = "; ".join(f"{p}: {m}" for p, m in start.get("refused", {}).items()) or "no run"
        head += f"; no MIP start ({why})"
    return head


def compare_command(
    trace: Path,
    cluster: str | None,
    policies: str,
    exact: bool,
    objectives: str,
    round_seconds: float | None,
    rounds: int | None,
    restore_s: float,
    throughputs: str | None,
    reference: str,
    elastic: float | None,
    output: Path | None,
    as_json: bool,
    solver_opts: SolverOptions,
    window: str | None = None,
    mechanism: str = "optsched",
    reset_interval: float | None = None,
    mechanism_seed: int | None = None,
    bound: bool = False,
    offered_load: float | None = None,
    load: float = 1.0,
    harmony_model: Path | None = None,
    warm_start: bool = True,
    seeds: str | None = None,
) -> None:
    """Compare policies on TRACE (and, with --exact, their gap to the optimum)."""
    from optsched.cli.sim_goodput import compare_if_pollux

    if compare_if_pollux(dict(locals())):  # a Pollux workload: the goodput world's loop
        return
    if seeds is not None:
        raise InvalidInstanceError(
            "--seeds", "applies to a Pollux workload's randomized policies only"
        )
    from optsched.cli._mechanism import mechanism_from
    from optsched.cli.sim_colocation import colocation_setup, needs_colocation
    from optsched.limits import check_range
    from optsched.sim import parse_cluster
    from optsched.sim.comparison import compare

    names: list[Any] = _policies(policies)
    wanted = _names("--objectives", objectives)
    steady = window_arg(window)
    check_range("--restore-seconds", restore_s, "restore_s")
    how = mechanism_from(mechanism, reset_interval, mechanism_seed)
    coloc_info: dict[str, Any] | None = None
    if needs_colocation(names):
        # placement policies: the trace as a colocation world, every policy event-driven
        world, names, coloc_info = colocation_setup(
            read_jobs(trace),
            cluster,
            names,
            harmony_model,
            refused={
                "--exact": exact,
                "--bound": bound,
                "--round-seconds": round_seconds is not None,
                "--elastic": elastic is not None,
                "--mechanism": how != "optsched",
                "--throughputs": throughputs is not None,
                "--restore-seconds": restore_s != 0,
            },
        )
        world = scaled_arrivals(world, load, offered_load)
        spec = world.cluster
    else:
        if cluster is None:
            raise InvalidInstanceError(
                "--cluster",
                "a cluster to simulate on is required (unless --policies names "
                "only placement policies and others that run on a colocation world)",
            )
        spec = parse_cluster(cluster, field="--cluster")
        read = read_jobs(trace)
        table = _table(spec, throughputs, reference, read)
        world = study_world(read, spec, table, restore_s=restore_s, load=load)
        world = scaled_arrivals(world, 1.0, offered_load)
        from optsched.cli._mechanism import clock_from_trace

        how = clock_from_trace(how, read)
        if elastic is not None:
            world = elastic_world(world, elastic)
    left_out: dict[str, str] = {}
    if policies.strip() == "all":
        # "every policy" means every policy whose model admits this world; the others are
        # listed with their reason rather than failing the whole comparison
        from optsched.cli._mechanism import refuses
        from optsched.sim.policies import make_policy

        for name in names:
            made = make_policy(name)
            reason = made.refuses(world)
            if reason is None:
                reason = refuses(made, how)
            if reason is not None:
                left_out[name] = reason
        names = [n for n in names if n not in left_out]
    elif how != "optsched":
        from optsched.cli._mechanism import refuse_unsupported
        from optsched.sim.policies import make_policy

        for name in names:
            refuse_unsupported(make_policy(name, field="--policies"), how)
    stopped: NotOptimalError | None = None
    try:
        result = compare(
            world,
            names,
            exact=exact,
            objectives=wanted,
            round_seconds=(
                None
                if coloc_info is not None
                else "policy"
                if round_seconds is None
                else round_seconds
            ),
            rounds=rounds,
            window=steady,
            mechanism=how,
            bound=bound,
            warm_start=warm_start,
            **solver_opts.kwargs(),
        )
    except NotOptimalError as exc:
        kept = getattr(exc, "comparison", None)
        if kept is None:
            raise  # stopped before any row was computed: exit 3 with the solve's figures
        # an exact solve stopped short: the policies' table is still shown, then exit 3
        stopped, result = exc, kept
    except InvalidInstanceError as exc:
        flag = {
            "policies": "--policies",
            "objectives": "--objectives",
            "round_seconds": "--round-seconds",
            "rounds": "--rounds",
            "min_gpus": "--elastic",
            "window": "--window",
        }.get(exc.field)
        if flag is not None:
            raise InvalidInstanceError(flag, exc.message) from None
        raise
    frame = result.to_frame()
    if output is not None:
        frame.to_csv(output, index=False)
    payload = {"trace": str(trace), "cluster": str(spec), **result.to_dict()}
    if coloc_info is not None:
        payload["colocation"] = coloc_info
    if stopped is not None:
        # the contract's error fields, beside the rows that were computed
        payload["error"], payload["message"] = "NotOptimalError", str(stopped)
        summary = getattr(stopped.result, "summary", None)
        payload["stopped"] = summary() if callable(summary) else None
    if left_out:
        payload["left_out"] = left_out
        for name, reason in left_out.items():
            click.echo(f"left out {name}: {reason}", err=True)
    if as_json:
        from optsched.cli.sim_table import with_units

        print_json(with_units(payload))
    else:
        _print_compare(result, frame, world, spec, stopped)
    if stopped is not None:
        err_console.print(f"[yellow]not optimal[/yellow] {escape(str(stopped))}", highlight=False)
        raise click.exceptions.Exit(EXIT_NOT_OPTIMAL)
    invalid = {p: m for p, m in result.metrics.items() if not m["valid"]}
    if invalid:
        # never exit 1 without saying why: each rejected record with its first violation
        for policy, m in invalid.items():
            err_console.print(
                f"[red]{escape(policy)}: record rejected by the validator: "
                f"{escape(m['violation'])}[/red]",
                highlight=False,
            )
        raise click.exceptions.Exit(1)
    short = {
        p: m["unfinished"] - m.get("declined_unfinished", 0)
        for p, m in result.metrics.items()
        if m["unfinished"] > m.get("declined_unfinished", 0)
    }
    if short:
        listed = escape(", ".join(f"{p}: {n}" for p, n in short.items()))
        err_console.print(
            f"[yellow]jobs left unfinished ({listed}); their JCT means are over the finished "
            "jobs only[/yellow]",
            highlight=False,
        )
        raise click.exceptions.Exit(EXIT_UNFINISHED)


def _print_compare(result: Any, frame: Any, world: Any, spec: Any, stopped: Any) -> None:
    """The comparison's table on stdout; bounds, exact solves and skipped work in its notes."""
    from optsched.cli.sim_table import (
        has_deadlines,
        objective_text,
        print_comparison,
        table_time_unit,
    )

    rows = frame.to_dict(orient="records")
    unit = table_time_unit(rows)
    notes: list[str] = []
    for o, b in result.bounds.items():
        side = ">=" if b.side == "lower" else "<="
        weaker = "" if b.complete else "; out of time: a weaker relaxation, gaps over-estimated"
        notes.append(
            f"certified bound {o}: optimum {side} {objective_text(o, b.value, unit)} "
            f"({b.method}, {b.seconds:.1f} s{weaker})"
        )
        # work the time limit left undone: said under the table, not only in the JSON
        notes.extend(
            f"skipped for {o}: {n}" for n in b.notes if "no time left" in n or "skipped" in n
        )
    if result.exact_round_seconds is not None:
        # like for like: the policies' grid, or an optimum of another world (no gap)
        notes.append(
            f"exact model's grid: rounds of {result.exact_round_seconds:g} s ({result.exact_grid})"
        )
    for o, res in result.exact.items():
        notes.append(_exact_line(o, res, result.exact_starts.get(o), unit))
    short_of = getattr(stopped, "result", None)
    if short_of is not None and hasattr(short_of, "objective_name"):
        # the solve that stopped short: its [bound, incumbent] and gap all the same
        o = short_of.objective_name
        notes.append(_exact_line(o, short_of, result.exact_starts.get(o), unit))
    print_comparison(
        rows,
        list(result.exact),
        title=f"{len(world.jobs)} jobs on {spec}, throughputs: {result.throughputs}",
        deadlines=has_deadlines(world),
        bounded=list(result.bounds),
        notes=notes,
    )


def sweep_command(
    traces: tuple[Path, ...],
    cluster: str | None,
    policies: str,
    scales: tuple[float, ...],
    seeds: tuple[int, ...],
    loads: tuple[float, ...],
    store: Path | None,
    round_seconds: float | None,
    restore_s: float,
    throughputs: str | None,
    reference: str,
    backend: str,
    n_jobs: int | None,
    address: str | None,
    output: Path | None,
    as_json: bool,
    window: str | None = None,
    bound: bool = False,
) -> None:
    """Sweep policies x TRACES x cluster scales x seeds x loads (resumable with --store)."""
    from optsched.runs.sim_sweep import sweep
    from optsched.sim import parse_cluster

    if cluster is None:
        # optional in the help only because an experiment file names its own (`clusters`)
        raise InvalidInstanceError(
            "--cluster",
            "a cluster to simulate on is required for trace files (e.g. --cluster "
            "v100=8,p100=16); an experiment file (sim sweep EXPERIMENT.toml) names its own "
            "under `clusters`",
        )
    spec = parse_cluster(cluster, field="--cluster")
    names = _policies(policies)
    steady = window_arg(window)
    for trace in traces:
        # an empty trace file is refused before any run (as in ``run`` and ``compare``);
        # ``synthetic:N`` names a generated table, checked by the sweep itself; so is a
        # throughput table that cannot serve this trace on this cluster
        if not str(trace).startswith("synthetic:"):
            _table(spec, throughputs, reference, read_jobs(trace))
    try:
        frame = sweep(
            [str(t) for t in traces],
            cluster,
            names,
            store=store,
            cluster_scales=scales,
            seeds=seeds,
            loads=loads,
            round_seconds="policy" if round_seconds is None else round_seconds,
            restore_s=restore_s,
            throughputs=throughputs,
            reference=reference,
            backend=backend,
            n_jobs=n_jobs,
            address=address,
            progress=not as_json,
            window=steady,
            bound=bound,
        )
    except InvalidInstanceError as exc:
        flag = {
            "policies": "--policies",
            "traces": "TRACES",
            "cluster_scales": "--scales",
            "seeds": "--seeds",
            "loads": "--loads",
            "backend": "--backend",
            "n_jobs": "--n-jobs",
            "round_seconds": "--round-seconds",
            "restore_s": "--restore-seconds",
            "throughputs": "--throughputs",
            "reference": "--reference",
            "window": "--window",
        }.get(exc.field)
        if flag is not None:
            raise InvalidInstanceError(flag, exc.message) from None
        raise
    if output is not None:
        frame.to_csv(output, index=False)
    notes = list(frame.attrs.get("notes", []))
    if as_json and output is not None:
        # the rows are in the file: one line naming it, not the rows again
        headline = {
            "runs": len(frame),
            "policies": sorted({str(p) for p in frame["policy"]}) if len(frame) else [],
            "valid": bool(frame["valid"].all()) if len(frame) else True,
            "unfinished": int(frame["unfinished"].sum()) if len(frame) else 0,
        }
        print_written(output, "csv", headline)
    elif as_json:
        from optsched.cli.sim_table import with_units

        print_json(
            with_units(
                {
                    "runs": len(frame),
                    "rows": frame.to_dict(orient="records"),
                    "notes": notes,
                    "policy_specs": frame.attrs.get("policy_specs", {}),
                }
            )
        )
    else:
        _print_sweep(frame)
    for note in notes:
        # a knob that changes nothing (every arrival at one time): said on stderr beside the
        # table, and in the JSON
        err_console.print(f"note: {note}", highlight=False, markup=False)
    if len(frame) and not bool(frame["valid"].all()):
        bad = frame[~frame["valid"].astype(bool)]
        listed = ", ".join(f"{r['policy']} on {r['trace']}" for _, r in bad.head(10).iterrows())
        err_console.print(
            f"[red]{len(bad)} run(s) rejected by the validator: {escape(listed)}[/red]",
            highlight=False,
        )
        raise click.exceptions.Exit(1)


def _print_sweep(frame: Any) -> None:
    """The sweep's table on stdout: JCT and makespan in one unit, the certified gaps in %."""
    from optsched.cli.common import TextTable, emit, say
    from optsched.cli.sim_table import UNIT_WORDS, time_unit
    from optsched.report._text import fixed, fixed_decimals

    if not len(frame):
        say("no runs")
        return
    scale, unit = time_unit([*frame["jct_mean"].tolist(), *frame["makespan"].tolist()])
    notes = [f"JCT mean and makespan in {UNIT_WORDS[unit]} ({unit})"]
    columns: list[tuple[str, list[str]]] = []
    # a column every row shares is one line of the notes instead (a trace's path, the table)
    for key, title in (("trace", "trace"), ("throughputs", "throughputs")):
        values = [str(v) for v in frame[key]]
        if len(set(values)) == 1:
            notes.append(f"{title}: {values[0]}")
        else:
            columns.append((title, values))
    columns += [
        ("scale", [f"{v:g}" for v in frame["cluster_scale"]]),
        ("seed", [str(v) for v in frame["seed"]]),
        ("load", [f"{v:g}" for v in frame["load"]]),
        ("policy", [str(v) for v in frame["policy"]]),
    ]
    # the row's name: its trace and throughputs when they vary, scale, seed, load, policy
    table = TextTable(f"{len(frame)} runs", key=len(columns))
    for key, title in (("jct_mean", "JCT mean"), ("makespan", "makespan")):
        values = (frame[key] / scale).tolist()
        decimals = fixed_decimals(values)
        columns.append((f"{title} ({unit})", [fixed(v, decimals) for v in values]))
    short = False
    for objective in ("weighted-jct", "makespan"):
        key = f"bound_gap_{objective}"
        if key in frame:
            complete = frame.get(f"bound_complete_{objective}", [True] * len(frame))
            cells = [_gap_cell(g, c) for g, c in zip(frame[key], complete, strict=True)]
            columns.append((f"certified gap {objective} (%)", cells))
            short = short or not all(complete)
    columns.append(("unfinished", [str(v) for v in frame["unfinished"]]))
    columns.append(("valid", ["yes" if bool(v) else "NO" for v in frame["valid"]]))
    if short:
        notes.append(
            "* the bound's LP ran out of its time limit: a weaker relaxation gave it (still "
            "valid; the gap is an over-estimate). bound_method_* names it."
        )
    for header, _ in columns:
        text = header in ("trace", "policy", "throughputs")
        table.add_column(header, justify="left" if text else "right", wrap=text)
    for row in zip(*(cells for _, cells in columns), strict=True):
        table.add_row(*row)
    table.notes = notes
    emit(table)


def _gap_cell(gap: float, complete: Any) -> str:
    """A certified gap in percent, starred when its bound is not every relaxation's."""
    return f"{100 * gap:.1f}" + ("" if bool(complete) else "*")


_trace_arg = click.Path(dir_okay=False, path_type=Path)


#: ``--load F``: one arrival-rate factor (``sweep`` takes several, ``--loads``).
LOAD_OPTION = click.option(
    "--load",
    type=float,
    default=1.0,
    show_default=True,
    metavar="F",
    help="Arrival-rate factor: every arrival time divided by F (deadlines keep their slack), "
    "as one value of `sim sweep --loads`.",
)

#: ``--offered-load LOAD``: arrivals scaled to a target offered load.
OFFERED_LOAD_OPTION = click.option(
    "--offered-load",
    type=float,
    default=None,
    metavar="LOAD",
    help="Scale the inter-arrival times so that the offered load (GPU-time asked on the "
    "fastest type over GPU-time offered while jobs arrive) is LOAD, e.g. 0.8.",
)


def study_world(trace: Any, spec: Any, table: Any, **options: Any) -> Any:
    """The world of every entry point (:func:`~optsched.sim.comparison.world_from_trace`).

    Its errors name the flags (``--load``).
    """
    from optsched.sim.comparison import world_from_trace

    try:
        return world_from_trace(trace, spec, table, **options)
    except InvalidInstanceError as exc:
        if exc.field == "load":
            raise InvalidInstanceError("--load", exc.message) from None
        raise


def scaled_arrivals(world: Any, load: float, offered_load: float | None) -> Any:
    """``--load`` then ``--offered-load`` applied to the world (errors naming the flag)."""
    from optsched.sim.world.load import at_arrival_rate, at_offered_load

    try:
        if load != 1.0:
            world = at_arrival_rate(world, load)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError("--load", exc.message) from None
    try:
        if offered_load is not None:
            world = at_offered_load(world, offered_load)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError("--offered-load", exc.message) from None
    return world


#: ``--window START:END``: the steady-state window of arrival indices (Gavel's ``-s/-e``).
WINDOW_OPTION = click.option(
    "--window",
    default=None,
    metavar="START:END",
    help="Steady-state window: the metrics count only the jobs of arrival index START <= k < "
    "END (0-based; either side may be empty), as Gavel's -s/-e job-id window. Every job is "
    "still simulated.",
)


def window_arg(window: str | None) -> tuple[int, int | None] | None:
    """``--window`` parsed (errors naming ``--window``), or None."""
    from optsched.sim.measure.metrics import parse_window

    return None if window is None else parse_window(window, field="--window")


#: ``--elastic FACTOR``: elastic gangs for the policies that size them (optimus, andreas,
#: elasticflow, the ``-elastic`` order policies).
ELASTIC_OPTION = click.option(
    "--elastic",
    type=float,
    default=None,
    metavar="FACTOR",
    help="Elastic gangs: every job may run on 1 up to FACTOR x its requested GPUs (capped by "
    "the largest GPU type); policies that size gangs (optimus, andreas, elasticflow and the "
    "order policies' -elastic variants, e.g. edf-elastic) use it, the others run the requested "
    "size. Default: rigid gangs.",
)


#: ``--restore-seconds`` (``sim run``, ``compare``, ``sweep``).
RESTORE_OPTION = click.option(
    "--restore-seconds",
    "restore_s",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Checkpoint/restore cost of each preemption or migration (s).",
)


def read_jobs(trace: Path) -> Any:
    """Read TRACE (any format :func:`optsched.traces.read_trace` knows), refusing an empty one.

    Notes the reader left in ``meta["notes"]`` (columns a hand-written CSV left out, at their
    defaults) are printed to stderr. A trace with no job (a header-only file, or one whose
    every row the reader skips, e.g. a Gavel trace whose scale factors are all 0) has no
    schedule to simulate and no metric to report (a mean JCT over zero jobs is undefined), so
    it is refused as bad input naming the file (exit 2) rather than reported as an empty
    result that would look like a run.
    """
    from optsched.traces import read_trace

    read = read_trace(trace)
    if len(read.jobs) == 0:
        skipped = read.meta.get("skipped") if isinstance(read.meta, dict) else None
        why = f" (rows skipped: {skipped})" if skipped else ""
        raise InvalidInstanceError(
            "<file>",
            f"{trace}: the trace has no job to simulate{why}",
            file=str(trace),
        )
    notes = read.meta.get("notes") if isinstance(read.meta, dict) else None
    for note in notes or ():
        # columns a hand-written CSV left out, at their defaults: said before any result
        err_console.print(f"note: {trace}: {note}", highlight=False, markup=False)
    return read


def elastic_world(world: Any, factor: float) -> Any:
    """``world.elastic(max_factor=factor)``, its errors naming ``--elastic``.

    A factor above the cluster's GPU count :math:`G` is clamped to :math:`G`, with a note on
    stderr: every job requests at least one GPU and no gang can exceed the cluster, so such a
    factor means nothing a factor of :math:`G` does not (the guide's ``--elastic 64`` then runs
    on a 16-GPU cluster as ``--elastic 16``). A factor below 1 or not finite is refused.
    """
    total = sum(t.count for t in world.cluster.gpu_types)
    if not (math.isfinite(factor) and factor >= 1):
        raise InvalidInstanceError(
            "--elastic", f"must be a finite number >= 1 (a gang-size factor), got {factor}"
        )
    if factor > total:
        err_console.print(
            f"note: --elastic {factor:g} exceeds the cluster's {total} GPUs; clamped to {total} "
            "(no gang can exceed the cluster)",
            highlight=False,
            markup=False,
        )
        factor = float(total)
    return world.elastic(max_factor=factor)


def _mechanism_options() -> list[Any]:
    from optsched.cli._mechanism import mechanism_options

    return mechanism_options()


def register(group: click.Group) -> None:
    """Add ``compare`` and ``sweep`` to the ``sim`` group."""
    sim = group.commands["sim"]
    assert isinstance(sim, click.Group)
    common = _common_options()
    _add_compare(sim, common)
    _add_sweep(sim, common)


def _common_options() -> list[Any]:
    """The options ``compare`` and ``sweep`` share (``--cluster`` first)."""
    return [
        click.option("--cluster", required=True, help="GPU types: v100=8,p100=16[:GPUS/SERVER]."),
        click.option(
            "--policies",
            default="all",
            show_default=True,
            help="Comma-separated policy names (see `sim policies`), or all of them.",
        ),
        click.option("--throughputs", default=None, help=THROUGHPUTS_HELP),
        click.option(
            "--reference",
            default="v100",
            show_default=True,
            help="GPU type on which trace durations were measured (Gavel tables).",
        ),
        click.option(
            "--round-seconds",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            help="Round length for every policy and the exact model (default: each policy's "
            "own; the exact model then uses a length giving about 24 rounds).",
        ),
        WINDOW_OPTION,
    ]


def _add_compare(sim: click.Group, common: list[Any]) -> None:
    """``sim compare`` with its options (``--cluster`` optional: placement policies)."""
    from optsched.cli.sim_colocation import HARMONY_MODEL_OPTION

    cmp: Any = compare_command
    compare_common = [
        click.option(
            "--cluster",
            default=None,
            help="GPU types: v100=8,p100=16[:GPUS/SERVER]. Required, except with placement "
            "policies (harmony, first-fit, ...: a colocation world, by default Harmony's 6 "
            "servers of 4 GPUs; one type, e.g. gpu=24:4, sets its servers).",
        ),
        *common[1:],
    ]
    for deco in (
        solver_options(imports=("optsched.sim.comparison",)),  # first: its wrapper keeps the rest
        HARMONY_MODEL_OPTION,
        json_option,
        wide_option,
        output_option((".csv",), help="Write the comparison table"),
        click.option(
            "--rounds",
            type=click.IntRange(min=1),
            default=None,
            help="Rounds of the exact model (default: enough for every job alone in turn).",
        ),
        click.option(
            "--objectives",
            default="weighted-jct,makespan,deadlines",
            show_default=True,
            help="Exact objectives to solve.",
        ),
        click.option(
            "--exact",
            is_flag=True,
            help="Also solve the exact optimum, on the policies' round length (or "
            "--round-seconds), and show each policy's gap to it when the policy ran in its "
            "world; a policy beyond it (event-driven, own grid, sharing GPUs, waking mid-round) "
            "shows no gap (use --bound). Too large a model is solved on a coarser grid and "
            "shown as the optimum of another world, with no gap.",
        ),
        click.option(
            "--warm-start/--no-warm-start",
            default=True,
            show_default=True,
            help="With --exact: start each solve from the best policy's run on the exact grid "
            "(a MIP start); stopped by --time-limit it shows [bound, incumbent, gap].",
        ),
        click.option(
            "--bound",
            is_flag=True,
            help="Also compute certified bounds on the optimum (any trace size) and show every "
            "policy's certified gap: at most how far it is from optimal. Honours --time-limit.",
        ),
        click.option(
            "--seeds",
            default=None,
            metavar="SEEDS",
            help="Pollux workloads: run each randomized policy (Pollux's genetic search) once "
            "per seed, e.g. 0-3 or 0,5,7, a row each and a row of their mean.",
        ),
        OFFERED_LOAD_OPTION,
        LOAD_OPTION,
        RESTORE_OPTION,
        *_mechanism_options(),
        ELASTIC_OPTION,
        PLUGIN_OPTION,
        *reversed(compare_common),
        click.argument("trace", type=_trace_arg),
    ):
        cmp = deco(cmp)
    sim.add_command(click.command("compare")(cmp))


def _add_sweep(sim: click.Group, common: list[Any]) -> None:
    """``sim sweep`` with its options (``--cluster`` optional: an experiment file has its own)."""
    swp: Any = sweep_command
    sweep_common = [
        click.option(
            "--cluster",
            default=None,
            help="GPU types: v100=8,p100=16[:GPUS/SERVER]. Required with trace files; an "
            "experiment file (sim sweep EXPERIMENT.toml) gives its own `clusters`.",
        ),
        *common[1:],
    ]
    for deco in (
        click.option(
            "--bound",
            is_flag=True,
            help="Also compute certified bounds on each world's optimum and every run's "
            "certified gap (bound_gap_* columns).",
        ),
        json_option,
        wide_option,
        output_option((".csv",), help="Write the sweep table"),
        click.option("--address", default=None, help="Dask scheduler or Ray cluster address."),
        click.option(
            "-j",
            "--n-jobs",
            type=int,
            default=None,
            help="joblib workers (default: one per core). Never more than the runs left; "
            "above 4 a core (optsched.limits.MAX_WORKERS_PER_CORE) refused before any run "
            "(exit 2).",
        ),
        click.option(
            "--backend",
            default="joblib",
            show_default=True,
            help="Where runs execute: joblib (local processes, also called loky), serial (this "
            "process), dask or ray (dask/ray need the optsched[dask] / optsched[ray] extras).",
        ),
        click.option(
            "--store",
            type=click.Path(path_type=Path),
            default=None,
            help="Resumable run store (SQLite file or directory); a rerun redoes only what is "
            "missing.",
        ),
        RESTORE_OPTION,
        click.option(
            "--loads",
            type=NumberList(float, min=0),
            default="1",
            show_default=True,
            help="Arrival-rate factors.",
        ),
        click.option(
            "--seeds", type=NumberList(int, min=0), default="0", show_default=True, help="Seeds."
        ),
        click.option(
            "--scales",
            type=NumberList(float, min=0),
            default="1",
            show_default=True,
            help="Cluster size factors.",
        ),
        PLUGIN_OPTION,
        *reversed(sweep_common),
        click.argument("traces", nargs=-1, required=True, type=_trace_arg),
    ):
        swp = deco(swp)
    sim.add_command(click.command("sweep")(swp))
