"""``optsched oasis online | check | ratio``: OASiS online, checked against the optimum."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    EXIT_NOT_OPTIMAL,
    FiniteFloat,
    SolverOptions,
    TextTable,
    emit,
    err_console,
    json_option,
    output_option,
    plain,
    print_json,
    say,
    solver_options,
    wide_option,
    with_units,
)
from optsched.cli.json_units import OASIS_UNITS

__all__ = ["ALGORITHMS", "make_algorithm", "register"]

#: Names accepted by ``--algorithm``.
ALGORITHMS = ("oasis", "fifo", "drf", "rrh", "dorm")

work_option = click.option(
    "--work",
    type=click.Choice(["chunks", "worker-slots"]),
    default="chunks",
    show_default=True,
    help="Progress accounting: the paper's chunk-epochs or the ILP's worker-slots.",
)


def make_algorithm(name: str, *, work: str = "chunks", seed: int = 0, **oasis: Any) -> Any:
    """An online algorithm by ``--algorithm`` name; ``oasis`` keywords go to OASiS only."""
    from optsched.online.oasis.baselines import DRF, FIFO, RRH, DormLike
    from optsched.online.oasis.online import OASiS

    if name == "oasis":
        return OASiS(work=work, **oasis)
    if name == "fifo":
        return FIFO(seed=seed, work=work)
    if name == "drf":
        return DRF(work=work)
    if name == "rrh":
        return RRH(seed=seed, work=work)
    if name == "dorm":
        return DormLike(work=work)
    raise click.BadParameter(f"unknown algorithm {name!r}; choose from {ALGORITHMS}")


def _prices(spec: str, history: Path | None, instance: Any) -> Any:
    from optsched.errors import InvalidInstanceError
    from optsched.online.oasis import OasisInstance, load_prices

    load: Callable[[], Any]
    if history is not None:
        if spec != "hindsight":
            raise click.UsageError("use either --history or --prices, not both")
        flag, load = "--history", lambda: OasisInstance.load(history)
    elif spec in ("hindsight", "warmup"):
        return spec
    else:
        flag, load = "--prices", lambda: load_prices(Path(spec), instance)
    try:
        return load()
    except InvalidInstanceError as exc:
        if exc.field == "<file>":  # the file itself is refused: name the option that gave it
            raise InvalidInstanceError(flag, exc.message, file=exc.file) from None
        raise


@click.command("online")
@wide_option
@click.argument("instance", type=click.Path(dir_okay=False, path_type=Path))
@work_option
@click.option(
    "--prices",
    "price_spec",
    default="hindsight",
    show_default=True,
    help="'hindsight' (U, L from the instance), 'warmup' (from the first --warmup jobs), or a "
    "price file (optsched schema oasis-prices).",
)
@click.option("--warmup", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--history",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Estimate U, L from the jobs of this instance file instead.",
)
@click.option(
    "--multiplier",
    type=FiniteFloat(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Scale U/L (the paper's Fig. 6 knob).",
)
@click.option(
    "--tighten/--no-tighten",
    default=True,
    show_default=True,
    help="Minimise the certificate over a price scale.",
)
@click.option("--with-prices", is_flag=True, help="Include the final price arrays in the JSON.")
@output_option((".json", ".toml"), help="Also write the schedule to this file")
@json_option
def online_cmd(
    instance: Path,
    work: str,
    price_spec: str,
    warmup: int,
    history: Path | None,
    multiplier: float,
    tighten: bool,
    with_prices: bool,
    output: Path | None,
    as_json: bool,
) -> None:
    """Schedule INSTANCE online with OASiS and certify a bound on the optimum."""
    from optsched.online.oasis import OASiS, OasisInstance
    from optsched.report._text import fixed, fixed_decimals

    inst = OasisInstance.load(instance)
    alg = OASiS(
        prices=_prices(price_spec, history, inst),
        warmup=warmup,
        multiplier=multiplier,
        work=work,
        tighten=tighten,
    )
    run = alg.run(inst)
    if output is not None:
        run.schedule.save(output)
    if as_json:
        print_json(with_units(run.to_dict(with_prices=with_prices), OASIS_UNITS))
        return
    cr = run.certified_ratio
    summary = (
        f"utility {plain(run.utility, 6)}, admitted {len(run.admitted)}/{inst.n_jobs}, "
        f"alpha {plain(run.alpha)} (proven ratio {plain(run.proven_bound)}), "
        f"certified OPT <= {plain(run.dual_bound, 6)} (D/ALG {plain(cr)})"
        if run.dual_bound is not None and cr is not None
        else f"utility {plain(run.utility, 6)}"
    )
    table = TextTable(f"OASiS on {instance.name}", notes=[summary])
    for col in ("job", "arrival", "payoff", "admitted", "completion", "utility"):
        table.add_column(col, justify="left" if col == "job" else "right", wrap=col == "job")
    pay = fixed_decimals(run.payoffs)
    util = fixed_decimals([js.utility for js in run.schedule.jobs])
    for i, js in enumerate(run.schedule.jobs):
        table.add_row(
            js.job,
            str(inst.jobs[i].arrival),
            fixed(run.payoffs[i], pay),
            "yes" if js.admitted else "no",
            str(js.completion or "-"),
            fixed(js.utility, util),
        )
    emit(table)


@click.command("check")
@wide_option
@click.argument("instance", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--algorithm",
    type=click.Choice(ALGORITHMS),
    default="oasis",
    show_default=True,
    help="The online algorithm to check.",
)
@work_option
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the baselines' fixed worker counts.",
)
@json_option
@solver_options(imports=("optsched.online.oasis",))  # innermost: it wraps the function
def check_cmd(
    instance: Path,
    algorithm: str,
    work: str,
    seed: int,
    as_json: bool,
    solver_opts: SolverOptions,
) -> None:
    """Run an online algorithm and the exact ILP on INSTANCE and compare them.

    Exits 3 when the ILP stops short of a proven optimum (--time-limit, --mip-gap) unless
    --accept-feasible: the figures are then bounds (printed, and in the JSON, all the same).
    Exits 1 if the online schedule is invalid or a guaranteed relation (ALG <= OPT,
    OPT <= D) fails; a ratio above the proven bound is reported (it can happen when the
    theorem's assumptions fail) but is not an error.
    """
    from optsched.online.oasis import OasisInstance
    from optsched.online.oasis.competitive import check_competitive

    inst = OasisInstance.load(instance)
    alg = make_algorithm(algorithm, work=work, seed=seed, tighten=True)
    with err_console.status(f"running {algorithm} and solving the offline ILP ..."):
        rep = check_competitive(
            inst,
            alg,
            solver=solver_opts.solver,
            time_limit=solver_opts.time_limit,
            mip_gap=solver_opts.mip_gap,
            threads=solver_opts.threads,
        )
    if as_json:
        print_json(with_units(rep.to_dict(), OASIS_UNITS))
    else:
        _print_check(algorithm, inst, rep)
    if not rep.valid or rep.holds["alg_le_opt"] is False or rep.holds["opt_le_dual"] is False:
        raise click.exceptions.Exit(1)
    if not rep.offline.proven and not solver_opts.accept_feasible:
        err_console.print(
            f"[yellow]not optimal[/yellow] the offline ILP stopped with status "
            f"{rep.offline.status!r}: OPT is only bracketed (--accept-feasible to exit 0)",
            highlight=False,
        )
        raise click.exceptions.Exit(EXIT_NOT_OPTIMAL)


def _print_check(algorithm: str, inst: Any, rep: Any) -> None:
    """The check's figures on stdout: ALG, OPT (or its bracket), the bounds, the relations."""
    off = rep.offline
    say(
        f"{algorithm}: ALG {plain(rep.alg, 6)} ({len(rep.run.admitted)}/{inst.n_jobs} admitted, "
        f"schedule {'valid' if rep.valid else 'INVALID'})"
    )
    if off.optimum is not None:
        say(f"offline optimum {plain(off.optimum, 6)}: OPT/ALG = {plain(rep.ratio)}")
    else:
        say(
            f"offline {off.status}: incumbent {plain(off.incumbent, 6)}, upper bound "
            f"{plain(rep.upper, 6)}, OPT/ALG <= {plain(rep.ratio_upper)}"
        )
    if rep.proven_bound is not None:
        say(f"proven bound 2 alpha = {plain(rep.proven_bound)}")
    if rep.run.dual_bound is not None:
        say(f"certificate D = {plain(rep.run.dual_bound, 6)}, D/ALG = {plain(rep.certified_ratio)}")
    for key, value in rep.holds.items():
        say(f"  {key}: {({True: 'holds', False: 'FAILS', None: 'undecided'})[value]}")
    if rep.theorem is not None:
        say(f"  theorem 4 applies: {rep.theorem['theorem_applies']}")
        for reason in rep.theorem["reasons"]:
            say(f"    - {reason}")


@click.command("ratio")
@click.option(
    "--instances",
    "n_instances",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Number of seeded instances.",
)
@click.option("--jobs", "n_jobs", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--worker-servers", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--ps-servers", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--horizon", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--scale",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.05,
    show_default=True,
    help="Job-size scale of the generator.",
)
@click.option(
    "--priority-low",
    type=FiniteFloat(min=0, max=100),
    default=1.0,
    show_default=True,
    help="Lower end of the priority range [low, 100] (Fig. 5).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Instance k uses seed + k (also the baselines' seed).",
)
@click.option("--algorithm", type=click.Choice(ALGORITHMS), default="oasis", show_default=True)
@work_option
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory for runs.sqlite, table.md and ratio.png (a rerun resumes).",
)
@click.option(
    "-j",
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Instances measured at once, each in its own process (at most one per instance left).",
)
@json_option
@solver_options(whole_command=False)  # per instance; innermost: it wraps the function
def ratio_cmd(
    n_instances: int,
    n_jobs: int,
    worker_servers: int,
    ps_servers: int,
    horizon: int,
    scale: float,
    priority_low: float,
    seed: int,
    algorithm: str,
    work: str,
    output: Path,
    workers: int,
    as_json: bool,
    solver_opts: SolverOptions,
) -> None:
    """Sweep seeded instances: empirical OPT/ALG against the proven bound (resumable).

    Every finished instance is stored at once in OUTPUT/runs.sqlite; a rerun with the same
    options skips it, a rerun with other options exits 2 naming the option. The ILP of each
    instance gets --time-limit seconds (60 when not given). Exits 3 when some ILP stopped
    short of a proven optimum (its ratio is then an upper bound) unless --accept-feasible.
    """
    from optsched.report.oasis import ratio_sweep, sweep_summary

    time_limit = 60.0 if solver_opts.time_limit is None else solver_opts.time_limit
    alg = make_algorithm(algorithm, work=work, seed=seed, tighten=True)
    from optsched.cli.oasis import generator_flags

    with err_console.status("sweeping ...") as status, generator_flags():
        records = ratio_sweep(
            n_instances,
            output,
            seed=seed,
            n_jobs=n_jobs,
            worker_servers=worker_servers,
            ps_servers=ps_servers,
            horizon=horizon,
            scale=scale,
            priority=(priority_low, 100.0),
            time_limit=time_limit,
            mip_gap=solver_opts.mip_gap,
            threads=solver_opts.threads,
            solver=solver_opts.solver,
            algorithm=alg,
            progress=status.update,
            backend="loky" if workers > 1 else "serial",
            workers=workers,
        )
    summary = sweep_summary(records)
    unproven = [r["seed"] for r in records if r["opt"] is None]
    if as_json:
        payload = {"summary": summary, "output": str(output), "records": records}
        print_json(with_units(payload, OASIS_UNITS))
    else:
        # The summary is the command's result, so it goes to stdout where it can be piped or
        # redirected; the progress display above and the note on written files stay on stderr.
        width = max(len(key) for key in summary)
        for key, value in summary.items():
            click.echo(f"{key:<{width}}  {value}")
        err_console.print(f"wrote {output / 'table.md'} and {output / 'ratio.png'}")
    if unproven and not solver_opts.accept_feasible:
        err_console.print(
            f"[yellow]not optimal[/yellow] OPT not proven for seeds {unproven}: their ratios are "
            "upper bounds (--accept-feasible to exit 0)",
            highlight=False,
        )
        raise click.exceptions.Exit(EXIT_NOT_OPTIMAL)


def register(group: click.Group) -> None:
    """Add ``online``, ``check`` and ``ratio`` to the ``oasis`` group."""
    oasis = group.commands["oasis"]
    assert isinstance(oasis, click.Group)
    oasis.add_command(online_cmd)
    oasis.add_command(check_cmd)
    oasis.add_command(ratio_cmd)
