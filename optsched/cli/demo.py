"""``optsched demo``: the main job on an embedded default instance.

It first compares the survey's schedulers on a slice of a public trace (Gavel's
``small_test.trace``, shipped with its license) with Gavel's measured throughputs on a
heterogeneous v100/p100/k80 cluster, every policy in Gavel's rounds of 360 s, beside the proven
optimum of that same round-based world and the certified bound of every world: the comparison
table, the gap table and a JCT CDF figure. It then generates a seeded OASiS
instance and solves its offline optimum with HiGHS; runs the online algorithm and the baselines
on a moderate instance against the optimum (or its bounds, with the OASiS dual certificate);
and compares the communication schedulers of one ResNet-50 iteration against their lower
bound. Every figure it prints was checked by the independent validators before it is shown.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    FiniteFloat,
    TextTable,
    emit,
    err_console,
    json_option,
    plain,
    print_json,
    results_on_stderr,
    wide_option,
)

__all__ = ["demo", "register"]

#: The embedded default: a small instance the exact ILP proves optimal in seconds.
DEFAULT = {"n_jobs": 12, "worker_servers": 3, "ps_servers": 3, "horizon": 12, "seed": 2026}
#: A moderate instance for OASiS and the baselines (the ILP gets a time limit here).
MODERATE = {"n_jobs": 30, "worker_servers": 10, "ps_servers": 10, "horizon": 50, "seed": 2026}
#: ``--quick``: a smaller moderate instance (used by the test suite).
QUICK = {"n_jobs": 10, "worker_servers": 3, "ps_servers": 3, "horizon": 12, "seed": 2026}
#: The simulator section: the shipped trace slice, the cluster, the survey's schedulers.
SIM_TRACE = "gavel_small_test_head8.trace"
SIM_CLUSTER = "v100=1:1,p100=1:1,k80=2:2"
SIM_POLICIES = (
    "fifo",
    "sjf",
    "srtf-perf",
    "tiresias-las",
    "gandiva",
    "max-min-perf",
    "ftf-perf",
    "themis",
    "optimus",
)
SIM_OBJECTIVES = ("weighted-jct", "makespan")
#: The policies' round length in the demo: Gavel's 360 s rounds (the exact model's grid too).
SIM_ROUND_SECONDS = 360.0
#: The PACE comparison: ResNet-50, 8 workers, 10 Gbit/s links, 10 us per hop.
PACE_MODEL, PACE_WORKERS, PACE_GBPS, PACE_LATENCY_US = "resnet50", 8, 10.0, 10.0


def sim_section(out_dir: Path, time_limit: float) -> dict[str, Any]:
    """The survey's schedulers on a public trace slice beside the proven optimum.

    Every policy runs in Gavel's rounds of :data:`SIM_ROUND_SECONDS`, and the exact model is
    solved on that same grid (:func:`optsched.sim.compare` with ``exact=True``): a policy in the
    model's world gets its gap to the proven optimum; one that reaches beyond it (Gandiva shares
    GPUs) only its certified gap (``bound=True``), valid for every world. Every record, the
    optimum's included, is checked by the independent validator. Writes ``sim_jct_cdf.png``
    (the JCT CDF of each policy and of the optimum of total weighted JCT) and
    ``sim_comparison.csv``.
    """
    from importlib import resources

    from optsched.cli.sim_table import has_deadlines, print_comparison
    from optsched.report.sim import plot_jct_cdf
    from optsched.sim import compare
    from optsched.sim.comparison import world_from_trace

    with resources.as_file(resources.files("optsched.sim").joinpath("data", SIM_TRACE)) as trace:
        with err_console.status("simulating the schedulers and solving the exact optimum ..."):
            world = world_from_trace(trace, SIM_CLUSTER)
            # every policy on the policies' grid, the optimum on that same grid
            result = compare(
                world,
                list(SIM_POLICIES),
                round_seconds=SIM_ROUND_SECONDS,
                exact=True,
                bound=True,
                objectives=SIM_OBJECTIVES,
                time_limit=time_limit,
            )
    frame = result.to_frame()
    frame.to_csv(out_dir / "sim_comparison.csv", index=False)
    rows = frame.to_dict(orient="records")
    world = result.world
    title = (
        f"{len(world.jobs)} jobs of Gavel's small_test trace on {SIM_CLUSTER}, "
        f"throughputs: {result.throughputs}, rounds of {result.round_seconds:g} s"
    )
    print_comparison(
        [{k: v for k, v in r.items() if "gap_" not in k} for r in rows],
        [],
        title=title,
        deadlines=has_deadlines(world),
    )
    # the gap table: each policy against each proven optimum of its own world, and against
    # the certified bound of every world, in percent
    from optsched.cli.sim_table import GAP_CAPTION, objective_text, table_time_unit

    unit = table_time_unit(rows)
    notes = GAP_CAPTION.splitlines()
    for o, b in result.bounds.items():
        notes.append(
            f"certified bound {o}: optimum >= {objective_text(o, b.value, unit)} ({b.method})"
        )
    for o, res in result.exact.items():
        notes.append(
            f"optimum {o}: {res.status.value}, objective {objective_text(o, res.objective, unit)}"
        )
    gaps = TextTable("gap to the optimum (%)", notes=notes)
    gaps.add_column("policy", justify="left", wrap=True)
    for o in SIM_OBJECTIVES:
        gaps.add_column(f"gap {o} (%)")
    for o in SIM_OBJECTIVES:
        gaps.add_column(f"certified gap {o} (%)")
    gaps.add_column("outside the optimum's world", justify="left", wrap=True)
    for r in rows:
        if str(r["policy"]).startswith("exact-"):
            continue
        cells = [_percent(r[f"gap_{o}"]) for o in SIM_OBJECTIVES]
        cells += [_percent(r[f"bound_gap_{o}"]) for o in SIM_OBJECTIVES]
        gaps.add_row(str(r["policy"]), *cells, str(r.get("outside") or ""))
    emit(gaps)
    runs = dict(result.runs)
    best = result.exact["weighted-jct"].solution
    if best is not None:
        runs["exact (weighted JCT)"] = best
    # policies with the same JCT of every job share one line (labelled "a = b"): none hidden
    fig = plot_jct_cdf(
        runs,
        unit="min",
        log=False,
        title=f"JCT of {len(world.jobs)} jobs of Gavel's small_test trace, "
        f"{result.round_seconds:g} s rounds",
    )
    figure = out_dir / "sim_jct_cdf.png"
    fig.savefig(figure, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    err_console.print(f"figure: {figure}", highlight=False, markup=False)
    return {"trace": SIM_TRACE, "cluster": SIM_CLUSTER, "figure": str(figure), **result.to_dict()}


def _percent(value: Any) -> str:
    """A gap in percent, ``-`` when there is none (NaN: not measured against that optimum)."""
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return f"{100 * value:+.1f}"


def offline_section(
    out_dir: Path, seed: int, time_limit: float, accept_feasible: bool = False
) -> dict[str, Any]:
    """Generate the default instance, solve it exactly, validate and print the schedule.

    Raises
    ------
    NotOptimalError
        The ILP stopped short of a proven optimum and ``accept_feasible`` is false (the
        command then exits 3, the incumbent in its JSON).
    """
    from optsched.online.oasis import generate_instance, solve, validate
    from optsched.report.oasis import plot_schedule

    params = dict(DEFAULT, seed=seed)
    inst = generate_instance(
        params["n_jobs"],
        params["worker_servers"],
        params["ps_servers"],
        params["horizon"],
        seed=params["seed"],
    )
    inst.save(out_dir / "instance.json")
    with err_console.status("solving the exact offline ILP with HiGHS ..."):
        res = solve(inst, time_limit=time_limit, accept_feasible=accept_feasible)
    schedule = res.solution
    assert schedule is not None  # solve() raised otherwise
    report = validate(inst, schedule)
    report.raise_if_invalid()
    schedule.save(out_dir / "offline_schedule.json")
    plot_schedule(inst, schedule).savefig(out_dir / "offline_schedule.png", dpi=120)
    table = TextTable(
        f"Exact offline optimum ({res.status.value}; {len(inst.jobs)} jobs, "
        f"{len(inst.worker_servers)} worker servers, {len(inst.ps_servers)} parameter servers, "
        f"{inst.horizon} time slots)",
        notes=[
            f"total utility {res.objective:.3f} (bound {res.bound:.3f}, relative gap "
            f"{100 * (res.gap or 0):.4f}%); validator recomputes {report.objective:.3f}; "
            f"model built in {res.build_seconds:.2f} s, solved in {res.solve_seconds:.2f} s",
            "workers/slot: the job's workers in each slot it runs",
        ],
    )
    for col in ("job", "arrival", "admitted", "completion", "utility", "workers/slot"):
        text = col in ("job", "workers/slot")
        table.add_column(col, justify="left" if text else "right", wrap=text)
    for i, js in enumerate(schedule.jobs):
        per_slot: dict[int, int] = {}
        for t, _, n in js.workers:
            per_slot[t] = per_slot.get(t, 0) + n
        table.add_row(
            js.job,
            str(inst.jobs[i].arrival),
            "yes" if js.admitted else "no",
            str(js.completion or "-"),
            f"{js.utility:.2f}",
            " ".join(f"{per_slot[t]}" for t in sorted(per_slot)) or "-",
        )
    emit(table)
    return {
        "instance": params,
        "status": res.status.value,
        "objective": res.objective,
        "bound": res.bound,
        "gap": res.gap,
        "validated_utility": report.objective,
        "build_seconds": res.build_seconds,
        "solve_seconds": res.solve_seconds,
    }


def online_section(
    out_dir: Path, seed: int, time_limit: float, quick: bool = False
) -> dict[str, Any]:
    """OASiS and the baselines against the offline optimum (or its bounds) on one instance."""
    from optsched.online.oasis import generate_instance
    from optsched.online.oasis.competitive import compare_algorithms
    from optsched.report.oasis import comparison_table, plot_comparison

    params = dict(QUICK if quick else MODERATE, seed=seed)
    inst = generate_instance(
        params["n_jobs"],
        params["worker_servers"],
        params["ps_servers"],
        params["horizon"],
        seed=params["seed"],
    )
    inst.save(out_dir / "moderate_instance.json")
    with err_console.status("running OASiS and the baselines ...") as status:
        comparison = compare_algorithms(inst, time_limit=time_limit, progress=status.update)
    table = comparison_table(comparison)
    off = comparison.offline
    if off.optimum is None:
        table.add_note(
            f"the ILP stopped at its {time_limit:g} s limit ({off.status}); OPT lies in "
            f"[{plain(comparison.lower)}, {plain(comparison.upper)}] (the upper end is the best "
            "of the ILP bound and the OASiS dual certificate), so ratios shown are upper bounds"
        )
    emit(table)
    plot = out_dir / "oasis_vs_baselines.png"
    plot_comparison(comparison).savefig(plot, dpi=120)
    err_console.print(f"plot: {plot}", highlight=False, markup=False)
    return {"instance": params, **comparison.to_dict()}


def pace_section() -> dict[str, Any]:
    """Communication schedulers of one ResNet-50 iteration, against the lower bound."""
    from optsched.comm.pace import compare

    with err_console.status("scheduling one ResNet-50 iteration ..."):
        cmp = compare(PACE_MODEL, PACE_WORKERS, PACE_GBPS, PACE_LATENCY_US)
    times = cmp.iteration_times
    table = TextTable(
        f"{cmp.display_name}: iteration time, {PACE_WORKERS} workers, "
        f"{PACE_GBPS:g} Gbit/s (lower bound {cmp.lower_bound:.2f} ms)"
    )
    for col in ("policy", "iteration (ms)", "vs PACE", "above lower bound"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for name, value in sorted(times.items(), key=lambda kv: kv[1]):
        table.add_row(
            name,
            f"{value:.2f}",
            f"{value / times['pace']:.3f}x",
            f"{100 * (value / cmp.lower_bound - 1):.1f}%",
        )
    emit(table)
    return cmp.to_dict(schedule=False)


@click.command("demo")
@click.option("--seed", type=click.IntRange(min=0), default=DEFAULT["seed"], show_default=True)
@click.option(
    "--time-limit",
    type=FiniteFloat(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds for each exact solve.",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("optsched-demo"),
    show_default=True,
    help="Where the instance, schedules and plots are written.",
)
@click.option("--quick", is_flag=True, help="A smaller online instance (seconds, not a minute).")
@click.option(
    "--accept-feasible",
    is_flag=True,
    help="Go on with the exact part's incumbent if its ILP stops short (else exit 3).",
)
@json_option
@wide_option
def demo(
    seed: int,
    time_limit: float,
    output_dir: Path,
    quick: bool,
    accept_feasible: bool,
    as_json: bool,
) -> None:
    """Run the main job on an embedded default instance and print what it finds.

    Exits 3 when the exact offline solve stops short of a proven optimum (unless
    --accept-feasible); the online comparison reports bounds when its ILP stops short.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    if as_json:
        # stdout carries the one JSON object: the tables are shown on stderr meanwhile
        results_on_stderr()
    start = time.perf_counter()
    err_console.rule("[bold]The survey's schedulers on a public trace, beside the optimum")
    summary: dict[str, Any] = {"sim": sim_section(output_dir, time_limit)}
    err_console.rule("[bold]OASiS: exact offline optimum")
    summary["offline"] = offline_section(output_dir, seed, time_limit, accept_feasible)
    err_console.rule("[bold]OASiS online vs the baselines vs the optimum")
    summary["online"] = online_section(output_dir, seed, time_limit, quick)
    err_console.rule("[bold]PACE: communication scheduling of one training iteration")
    summary["pace"] = pace_section()
    summary["seconds"] = time.perf_counter() - start
    summary["output_dir"] = str(output_dir)
    err_console.print(f"files written to {output_dir}/")
    if as_json:
        print_json({**summary, "units": demo_units(summary)})


def demo_units(summary: dict[str, Any]) -> dict[str, Any]:
    """The demo's ``units``: one map per section, from that section's family table.

    The sections hold fields of the same name in different units (an OASiS ``objective`` is a
    utility, the simulator's a time), so each section's numbers are named in its own map:
    ``units["sim"]["jct_mean"]``, ``units["offline"]["objective"]``.
    """
    from optsched.cli.common import units_map
    from optsched.cli.json_units import OASIS_UNITS, PACE_UNITS
    from optsched.cli.sim_table import SIM_UNITS

    tables = {"sim": SIM_UNITS, "offline": OASIS_UNITS, "online": OASIS_UNITS, "pace": PACE_UNITS}
    units: dict[str, Any] = {
        name: units_map(summary[name], table) for name, table in tables.items() if name in summary
    }
    units["seconds"] = "s (wall clock)"
    return units


def register(group: click.Group) -> None:
    """Add ``demo`` to the root command."""
    group.add_command(demo)
