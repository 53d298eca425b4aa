"""``optsched demo``: the main job on an embedded default instance.

It generates a seeded OASiS instance and solves its offline optimum with HiGHS; runs the online
algorithm and the baselines on a moderate instance against the optimum (or its bounds, with the
OASiS dual certificate); and compares the communication schedulers of one ResNet-50 iteration
against their lower bound. Every figure it prints was checked by the
independent validators before it is shown.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import FiniteFloat, err_console, json_option, print_json

__all__ = ["demo", "register"]

#: The embedded default: a small instance the exact ILP proves optimal in seconds.
DEFAULT = {"n_jobs": 12, "worker_servers": 3, "ps_servers": 3, "horizon": 12, "seed": 2026}
#: A moderate instance for OASiS and the baselines (the ILP gets a time limit here).
MODERATE = {"n_jobs": 30, "worker_servers": 10, "ps_servers": 10, "horizon": 50, "seed": 2026}
#: ``--quick``: a smaller moderate instance (used by the test suite).
QUICK = {"n_jobs": 10, "worker_servers": 3, "ps_servers": 3, "horizon": 12, "seed": 2026}
#: The PACE comparison: ResNet-50, 8 workers, 10 Gbit/s links, 10 us per hop.
PACE_MODEL, PACE_WORKERS, PACE_GBPS, PACE_LATENCY_US = "resnet50", 8, 10.0, 10.0


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
    from rich.table import Table

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
    table = Table(
        title=f"Exact offline optimum ({res.status.value}; {len(inst.jobs)} jobs, "
        f"H = {len(inst.worker_servers)}, K = {len(inst.ps_servers)}, T = {inst.horizon})"
    )
    for col in ("job", "arrival", "admitted", "completion", "utility", "workers/slot"):
        table.add_column(col, justify="right" if col != "job" else "left")
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
    err_console.print(table)
    err_console.print(
        f"total utility {res.objective:.3f} (bound {res.bound:.3f}, gap {res.gap or 0:.2e}); "
        f"validator recomputes {report.objective:.3f}; model built in "
        f"{res.build_seconds:.2f}s, solved in {res.solve_seconds:.2f}s"
    )
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
    err_console.print(comparison_table(comparison))
    plot = out_dir / "oasis_vs_baselines.png"
    plot_comparison(comparison).savefig(plot, dpi=120)
    off = comparison.offline
    if off.optimum is None:
        err_console.print(
            f"the ILP stopped at its {time_limit:g}s limit ({off.status}); OPT lies in "
            f"[{comparison.lower:.4g}, {comparison.upper:.4g}] (the upper end is the best of the "
            "ILP bound and the OASiS dual certificate), so ratios shown are upper bounds"
        )
    err_console.print(f"plot: {plot}")
    return {"instance": params, **comparison.to_dict()}


def pace_section() -> dict[str, Any]:
    """Communication schedulers of one ResNet-50 iteration, against the lower bound."""
    from rich.table import Table

    from optsched.comm.pace import compare

    with err_console.status("scheduling one ResNet-50 iteration ..."):
        cmp = compare(PACE_MODEL, PACE_WORKERS, PACE_GBPS, PACE_LATENCY_US)
    times = cmp.iteration_times
    table = Table(
        title=f"{cmp.display_name}: iteration time, {PACE_WORKERS} workers, "
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
    err_console.print(table)
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
    start = time.perf_counter()
    err_console.rule("[bold]OASiS: exact offline optimum")
    summary: dict[str, Any] = {
        "offline": offline_section(output_dir, seed, time_limit, accept_feasible)
    }
    err_console.rule("[bold]OASiS online vs the baselines vs the optimum")
    summary["online"] = online_section(output_dir, seed, time_limit, quick)
    err_console.rule("[bold]PACE: communication scheduling of one training iteration")
    summary["pace"] = pace_section()
    summary["seconds"] = time.perf_counter() - start
    summary["output_dir"] = str(output_dir)
    err_console.print(f"files written to {output_dir}/")
    if as_json:
        print_json(summary)


def register(group: click.Group) -> None:
    """Add ``demo`` to the root command."""
    group.add_command(demo)
