"""``optsched tensorlights``: PS broadcasts sharing host NICs under fair sharing or priorities."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from optsched.cli.common import err_console, json_option, print_json
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.placement.tensorlights import SimulationResult, TensorLightsInstance

__all__ = ["register", "tensorlights"]

_POLICIES = ("fair", "priority", "rotate", "one-green")
_OBJECTIVES = ("mean-jct", "weighted-jct", "makespan")


@click.group("tensorlights")
def tensorlights() -> None:
    """Host-NIC contention among co-located parameter servers (TensorLights)."""


def _source_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """INSTANCE argument or --generate with the generator's options."""
    options = [
        click.argument("instance", type=click.Path(dir_okay=False, path_type=Path), required=False),
        click.option(
            "--generate", is_flag=True, help="Use a seeded synthetic instance instead of a file."
        ),
        click.option(
            "--hosts", "n_hosts", type=click.IntRange(min=1), default=2, show_default=True
        ),
        click.option("--jobs", "n_jobs", type=click.IntRange(min=1), default=4, show_default=True),
        click.option(
            "--iterations",
            type=(click.IntRange(min=1), click.IntRange(min=1)),
            default=(10, 30),
            show_default=True,
            help="Range of iterations per job.",
        ),
        click.option(
            "--workers",
            type=(click.IntRange(min=1), click.IntRange(min=1)),
            default=(2, 8),
            show_default=True,
            help="Range of workers per job (powers of two inside it).",
        ),
        click.option(
            "--max-shards",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="PS shards per job are 1..this, on distinct hosts.",
        ),
        click.option(
            "--bandwidth",
            type=click.FloatRange(min=0, min_open=True),
            default=1.25e9,
            show_default=True,
            help="NIC capacity in bytes/s (1.25e9 = 10 Gb/s).",
        ),
        click.option(
            "--seed", type=int, default=0, show_default=True, help="Seeds generator and jitter."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _load(
    instance: Path | None,
    generate: bool,
    n_hosts: int,
    n_jobs: int,
    iterations: tuple[int, int],
    workers: tuple[int, int],
    max_shards: int,
    bandwidth: float,
    seed: int,
) -> TensorLightsInstance:
    from optsched.placement.tensorlights import generate_instance, load_instance

    if (instance is None) == (not generate):
        raise click.UsageError("give an INSTANCE file or --generate (exactly one)")
    if instance is not None:
        return load_instance(instance)
    return generate_instance(
        n_hosts,
        n_jobs,
        iterations=iterations,
        workers=workers,
        max_shards=max_shards,
        bandwidth=bandwidth,
        seed=seed,
    )


def _parse_order(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InvalidInstanceError(
            "order", f"must be comma-separated job indices, got {text!r}"
        ) from None


def _job_table(title: str, res: SimulationResult) -> None:
    from rich.table import Table

    table = Table(title=title)
    for col in ("job", "JCT (s)", "iter (s)", "alone (s)", "slowdown", "iter std", "spread"):
        table.add_column(col, justify="right" if col != "job" else "left", no_wrap=col == "job")
    for row in res.job_rows():
        table.add_row(
            row["job"],
            f"{row['jct']:.3f}",
            f"{row['mean_iteration_time']:.3f}",
            f"{row['alone_iteration_time']:.3f}",
            f"{row['slowdown']:.2f}x",
            f"{row['iteration_time_std']:.3f}",
            f"{row['straggler_spread_mean']:.4f}",
        )
    err_console.print(table)
    util = ", ".join(
        f"{h}: {u:.0%}" for h, u in zip(res.host_names, res.nic_utilization, strict=True)
    )
    err_console.print(
        f"mean JCT {res.mean_jct:.3f} s, makespan {res.makespan:.3f} s, NIC utilisation {util}"
    )


@tensorlights.command("generate")
@_source_options
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write (.json or .toml).",
)
def generate_cmd(output: Path, **source: Any) -> None:
    """Write a seeded synthetic instance (models drawn from the shipped DNN profiles)."""
    source["generate"] = True
    inst = _load(**source)
    inst.save(output)
    err_console.print(f"wrote {output}: {inst.n_jobs} jobs on {inst.n_hosts} hosts")


@tensorlights.command("simulate")
@_source_options
@click.option(
    "--policy", type=click.Choice(_POLICIES), default="fair", show_default=True, help="NIC sharing."
)
@click.option("--order", default=None, help="Global job order, most urgent first, e.g. 2,0,1.")
@click.option(
    "--period",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Rotation period in seconds (default: median standalone iteration time).",
)
@click.option(
    "--jitter",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=0.0,
    show_default=True,
    help="Per-flow share weights drawn from U[1-j, 1+j] (worker stragglers).",
)
@click.option("--uncoordinated", is_flag=True, help="Hosts do not agree on the order/phase.")
@click.option(
    "--engine", type=click.Choice(["numba", "python"]), default="numba", show_default=True
)
@json_option
def simulate_cmd(
    policy: str,
    order: str | None,
    period: float | None,
    jitter: float,
    uncoordinated: bool,
    engine: str,
    as_json: bool,
    **source: Any,
) -> None:
    """Simulate every job to completion under one NIC-sharing policy."""
    from optsched.placement.tensorlights import simulate

    inst = _load(**source)
    res = simulate(
        inst,
        policy,  # type: ignore[arg-type]
        order=_parse_order(order),
        rotation_period=period,
        coordinated=not uncoordinated,
        jitter=jitter,
        seed=source["seed"],
        engine=engine,  # type: ignore[arg-type]
    )
    if as_json:
        print_json({"instance": {"jobs": inst.n_jobs, "hosts": inst.n_hosts}, **res.to_dict()})
        return
    _job_table(f"tensorlights simulate --policy {policy}", res)


@tensorlights.command("compare")
@_source_options
@click.option("--period", type=click.FloatRange(min=0, min_open=True), default=None)
@click.option(
    "--jitter",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=0.0,
    show_default=True,
)
@json_option
def compare_cmd(period: float | None, jitter: float, as_json: bool, **source: Any) -> None:
    """Run every policy on the same instance (priority uses the Smith order)."""
    from rich.table import Table

    from optsched.placement.tensorlights import compare_policies, simulate, smith_order

    inst = _load(**source)
    results = compare_policies(
        inst,
        ("fair", "rotate", "one-green"),
        rotation_period=period,
        jitter=jitter,
        seed=source["seed"],
    )
    results["priority"] = simulate(
        inst, "priority", order=smith_order(inst, "mean-jct"), jitter=jitter, seed=source["seed"]
    )
    if as_json:
        print_json(
            {
                "instance": {"jobs": inst.n_jobs, "hosts": inst.n_hosts},
                "policies": {name: r.to_dict() for name, r in results.items()},
            }
        )
        return
    table = Table(title="tensorlights compare")
    for col in ("policy", "mean JCT (s)", "makespan (s)", "mean spread (s)", "mean NIC util"):
        table.add_column(col, justify="right" if col != "policy" else "left")
    for name, r in results.items():
        table.add_row(
            name,
            f"{r.mean_jct:.3f}",
            f"{r.makespan:.3f}",
            f"{r.straggler_spread_mean.mean():.4f}",
            f"{r.nic_utilization.mean():.0%}",
        )
    err_console.print(table)


@tensorlights.command("best-order")
@_source_options
@click.option("--objective", type=click.Choice(_OBJECTIVES), default="mean-jct", show_default=True)
@click.option(
    "--max-jobs",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Refuse larger instances (the search simulates J! orders).",
)
@json_option
def best_order_cmd(objective: str, max_jobs: int, as_json: bool, **source: Any) -> None:
    """Exact best static priority order by brute force, beside Smith's rule."""
    from optsched.placement.tensorlights import best_static_order

    inst = _load(**source)
    with err_console.status(f"simulating all {inst.n_jobs}! orders ..."):
        search = best_static_order(inst, objective, max_jobs=max_jobs)  # type: ignore[arg-type]
    names = inst.job_names()
    data = search.to_dict()
    data["best_order_names"] = [names[j] for j in search.best_order]
    data["rule_order_names"] = [names[j] for j in search.rule_order]
    if as_json:
        print_json(data)
        return
    err_console.print(
        f"{objective}: best {search.best_value:.4f} with {' > '.join(data['best_order_names'])}\n"
        f"Smith's rule {search.rule_value:.4f} with {' > '.join(data['rule_order_names'])}"
        f" ({'proven optimal here' if search.rule_proven else 'not proven here'}; "
        f"gap {data['rule_gap']:.2%})\n"
        f"worst order {search.worst_value:.4f}; fair sharing {search.fair_value:.4f}; "
        f"{search.n_orders} orders"
    )


def register(group: click.Group) -> None:
    """Add the ``tensorlights`` group to the root command."""
    group.add_command(tensorlights)
