"""``optsched tensorlights``: PS broadcasts sharing host NICs under fair sharing or priorities.

Units on the command line: seconds, and NIC bandwidth in Gbit/s (``--bandwidth 10`` is
10^9 / 8 * 10 bytes/s); instance files hold bytes and bytes per second.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from optsched.cli.common import (
    FiniteFloat,
    NumberList,
    TextTable,
    emit,
    err_console,
    json_option,
    output_option,
    print_json,
    say,
    wide_option,
    with_units,
)
from optsched.cli.json_units import TENSORLIGHTS_UNITS
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.comm.tensorlights import SimulationResult, TensorLightsInstance

__all__ = ["register", "tensorlights"]

_ALGORITHMS = ("fair", "priority", "rotate", "one-green", "smith")
_OBJECTIVES = ("mean-jct", "weighted-jct", "makespan")
#: Bytes per second in one Gbit/s (1 Gbit = 10^9 bits).
BYTES_PER_GBIT = 1e9 / 8

#: Library argument -> the flag a user typed, for errors raised inside the library.
_FLAGS = {
    "n_hosts": "--hosts",
    "n_jobs": "--jobs",
    "iterations": "--iterations",
    "workers": "--workers",
    "max_shards": "--max-shards",
    "bandwidth": "--bandwidth",
    "seed": "--seed",
    "order": "--order",
    "rotation_period": "--period",
    "jitter": "--jitter",
    "algorithm": "--algorithm",
    "objective": "--objective",
    "node_limit": "--node-limit",
    "time_limit": "--time-limit",
}


@contextlib.contextmanager
def _flag_names() -> Iterator[None]:
    """Re-raise the library's option errors naming the command-line flag."""
    try:
        yield
    except InvalidInstanceError as exc:
        if exc.field in _FLAGS and exc.file is None:
            raise InvalidInstanceError(_FLAGS[exc.field], exc.message) from None
        raise


#: Field of a generated instance -> the generator flags that set it. A generated instance is
#: refused on its own fields (``jobs[1].message_bytes`` when the horizon is too long), which
#: the user never wrote: the refusal names an option instead. Message sizes and compute times
#: come from the shipped profiles, so a broadcast's time answers to ``--bandwidth`` and the
#: horizon (every iteration's compute phase and broadcast) to ``--iterations`` as well.
_GENERATED_FIELDS: dict[str, tuple[str, ...]] = {
    "bandwidth_bytes_per_s": ("--bandwidth",),
    "message_bytes": ("--bandwidth", "--iterations"),
    "compute_time_s": ("--iterations", "--bandwidth"),
    "start_s": ("--iterations", "--bandwidth"),
    "iterations": ("--iterations",),
    "workers": ("--workers",),
    "ps_hosts": ("--max-shards", "--hosts"),
}
#: Generator flag -> the command's parameter name (to ask click where its value came from).
_FLAG_PARAMS = {flag: name for name, flag in _FLAGS.items()}


def _generated_flags(field: str) -> tuple[str, ...]:
    """The generator flags behind ``field`` of a generated instance, the user's own first.

    Of the candidates, a flag given on the command line comes before the defaults, so the
    refusal names what the user typed (``--bandwidth 1e9`` is named even when the horizon is
    set by the compute phases).
    """
    flags = _GENERATED_FIELDS.get(field.rsplit(".", 1)[-1], ("--generate",))
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return flags

    def given(flag: str) -> bool:
        name = _FLAG_PARAMS.get(flag)
        source = ctx.get_parameter_source(name) if name is not None else None
        return source in (
            click.core.ParameterSource.COMMANDLINE,
            click.core.ParameterSource.ENVIRONMENT,
        )

    return tuple(sorted(flags, key=lambda flag: not given(flag)))


@click.group("tensorlights")
def tensorlights() -> None:
    """Host-NIC contention among co-located parameter servers (TensorLights)."""


def _pair(ctx: click.Context, param: click.Parameter, value: tuple[int, ...]) -> tuple[int, int]:
    if len(value) == 1:
        return value[0], value[0]
    if len(value) != 2 or value[0] > value[1]:
        raise click.BadParameter(f"give LOW,HIGH with LOW <= HIGH, got {value}", ctx, param)
    return value[0], value[1]


def _jitter(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value >= 1.0:
        raise click.BadParameter(f"{value} must be < 1", ctx, param)
    return value


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
            type=NumberList(int, min=1, max=10_000_000),
            default="10,30",
            show_default=True,
            callback=_pair,
            help="Iterations per job: LOW,HIGH (or one value).",
        ),
        click.option(
            "--workers",
            type=NumberList(int, min=1, max=100_000),
            default="2,8",
            show_default=True,
            callback=_pair,
            help="Workers per job: LOW,HIGH (powers of two inside it).",
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
            type=FiniteFloat(min=0, min_open=True),
            default=10.0,
            show_default=True,
            help="NIC capacity of every generated host in Gbit/s.",
        ),
        click.option(
            "--seed",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Seeds the generator and the jitter.",
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
    from optsched.comm.tensorlights import TensorLightsInstance, generate_instance

    if (instance is None) == (not generate):
        raise click.UsageError("give an INSTANCE file or --generate (exactly one)")
    if instance is not None:
        return TensorLightsInstance.load(instance)
    with _flag_names():
        try:
            return generate_instance(
                n_hosts,
                n_jobs,
                iterations=iterations,
                workers=workers,
                max_shards=max_shards,
                bandwidth=bandwidth * BYTES_PER_GBIT,
                seed=seed,
            )
        except InvalidInstanceError as exc:
            if exc.field in _FLAGS or exc.file is not None:
                raise
            flags = _generated_flags(exc.field)
            raise InvalidInstanceError(
                flags[0],
                f"the generated instance is refused ({exc.field}: {exc.message}); "
                f"adjust {' or '.join(flags)}",
            ) from None


def _job_table(title: str, res: SimulationResult) -> None:
    """One simulation's jobs on stdout (times in s), the means and NIC use under the table."""
    util = ", ".join(
        f"{h}: {u:.0%}" for h, u in zip(res.host_names, res.nic_utilization, strict=True)
    )
    table = TextTable(
        title,
        notes=[
            "times in seconds (s); slowdown = iteration time / iteration time alone",
            f"mean JCT {res.mean_jct:.3f} s, makespan {res.makespan:.3f} s, NIC utilisation {util}",
        ],
    )
    for col in ("job", "JCT (s)", "iter (s)", "alone (s)", "slowdown", "iter std", "spread"):
        table.add_column(col, justify="right" if col != "job" else "left", wrap=col == "job")
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
    emit(table)


@tensorlights.command("generate")
@_source_options
@output_option((".json", ".toml"), required=True, help="Instance file to write")
@json_option
def generate_cmd(output: Path, as_json: bool, **source: Any) -> None:
    """Write a seeded synthetic instance (models drawn from the shipped DNN profiles)."""
    source["generate"] = True
    inst = _load(**source)
    inst.save(output)
    err_console.print(f"wrote {output}: {inst.n_jobs} jobs on {inst.n_hosts} hosts")
    if as_json:
        payload = {"output": str(output), "jobs": inst.n_jobs, "hosts": inst.n_hosts}
        print_json(with_units(payload, TENSORLIGHTS_UNITS))


_jitter_option = click.option(
    "--jitter",
    type=FiniteFloat(min=0),
    default=0.0,
    show_default=True,
    callback=_jitter,
    help="Per-flow share weights drawn from U[1-j, 1+j] (worker stragglers), j in [0, 1).",
)
_period_option = click.option(
    "--period",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Rotation period in seconds (default: median standalone iteration time).",
)


@tensorlights.command("simulate")
@wide_option
@_source_options
@click.option(
    "--algorithm",
    "--policy",
    "algorithm",
    type=click.Choice(_ALGORITHMS),
    default="fair",
    show_default=True,
    help="NIC sharing policy (smith: strict priority in Smith's order).",
)
@click.option(
    "--order",
    type=NumberList(int, min=0),
    default=None,
    help="Global job order, most urgent first, e.g. 2,0,1.",
)
@_period_option
@_jitter_option
@click.option("--uncoordinated", is_flag=True, help="Hosts do not agree on the order/phase.")
@click.option(
    "--engine", type=click.Choice(["numba", "python"]), default="numba", show_default=True
)
@json_option
def simulate_cmd(
    algorithm: str,
    order: tuple[int, ...] | None,
    period: float | None,
    jitter: float,
    uncoordinated: bool,
    engine: str,
    as_json: bool,
    **source: Any,
) -> None:
    """Simulate every job to completion under one NIC-sharing policy, and validate the run."""
    from optsched.comm.tensorlights import run, validate

    inst = _load(**source)
    options: dict[str, Any] = {"jitter": jitter, "seed": source["seed"], "engine": engine}
    if order is not None:
        options["order"] = list(order)
    if period is not None:
        options["period"] = period
    if uncoordinated:
        options["coordinated"] = False
    with _flag_names():
        for name in ("order", "period", "coordinated"):
            if name in options and algorithm in ("fair", "smith"):
                flag = {"coordinated": "--uncoordinated"}.get(name, f"--{name}")
                raise InvalidInstanceError(flag, f"does not apply to --algorithm {algorithm}")
        if "period" in options and algorithm == "priority":
            raise InvalidInstanceError("--period", "applies to rotate and one-green only")
        res = run(inst, algorithm, **options)
    report = validate(inst, res)
    report.raise_if_invalid()
    if as_json:
        print_json(
            with_units(
                {
                    "instance": {"jobs": inst.n_jobs, "hosts": inst.n_hosts},
                    "algorithm": algorithm,
                    **res.to_dict(),
                    "valid": report.ok,
                },
                TENSORLIGHTS_UNITS,
            )
        )
        return
    _job_table(f"tensorlights simulate --algorithm {algorithm}", res)


@tensorlights.command("compare")
@wide_option
@_source_options
@_period_option
@_jitter_option
@output_option((".png", ".svg", ".pdf"), help="Also write a JCT plot of the policies")
@json_option
def compare_cmd(
    period: float | None, jitter: float, output: Path | None, as_json: bool, **source: Any
) -> None:
    """Run every policy on the same instance (priority uses the Smith order)."""
    from optsched.comm.tensorlights import fair as fair_sharing
    from optsched.comm.tensorlights import one_green, rotate, smith

    inst = _load(**source)
    seed = source["seed"]
    with _flag_names():
        results = {
            "fair": fair_sharing(inst, jitter=jitter, seed=seed),
            "rotate": rotate(inst, period=period, jitter=jitter, seed=seed),
            "one-green": one_green(inst, period=period, jitter=jitter, seed=seed),
            "priority": smith(inst, objective="mean-jct", jitter=jitter, seed=seed),
        }
    if output is not None:
        from optsched.report.tensorlights import plot_jct

        plot_jct(results).savefig(output)
        err_console.print(f"wrote {output}")
    if as_json:
        print_json(
            with_units(
                {
                    "instance": {"jobs": inst.n_jobs, "hosts": inst.n_hosts},
                    "policies": {name: r.to_dict() for name, r in results.items()},
                },
                TENSORLIGHTS_UNITS,
            )
        )
        return
    table = TextTable(f"tensorlights compare: {inst.n_jobs} jobs on {inst.n_hosts} hosts")
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
    emit(table)


@tensorlights.command("best-order")
@wide_option
@_source_options
@click.option("--objective", type=click.Choice(_OBJECTIVES), default="mean-jct", show_default=True)
@click.option(
    "--node-limit",
    type=click.IntRange(min=1),
    default=None,
    help="Simulate at most this many orders; fewer than J! stops short (exit 3 unless "
    "--accept-feasible).",
)
@click.option(
    "--time-limit",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Seconds; past it the search stops short the same way.",
)
@click.option(
    "--accept-feasible",
    is_flag=True,
    help="Report the incumbent of a stopped search instead of failing (exit 0 instead of 3).",
)
@json_option
def best_order_cmd(
    objective: str,
    node_limit: int | None,
    time_limit: float | None,
    accept_feasible: bool,
    as_json: bool,
    **source: Any,
) -> None:
    """Exact best static priority order (every permutation simulated), beside Smith's rule."""
    from optsched.comm.tensorlights import solve

    inst = _load(**source)
    with err_console.status(f"simulating up to {inst.n_jobs}! orders ..."), _flag_names():
        result = solve(
            inst,
            objective,  # type: ignore[arg-type]
            node_limit=node_limit,
            time_limit=time_limit,
            accept_feasible=accept_feasible,
        )
    names = inst.job_names()
    data = result.to_dict()
    data["best_order_names"] = [names[j] for j in result.extra["best_order"]]
    data["rule_order_names"] = [names[j] for j in result.extra["rule_order"]]
    if as_json:
        print_json(with_units(data, TENSORLIGHTS_UNITS))
        return
    best = " > ".join(data["best_order_names"])
    rule = " > ".join(data["rule_order_names"])
    proven = "proven optimal here" if data["rule_proven"] else "not proven here"
    say(
        f"{objective}: {result.status.value} {result.objective:.4f} with {best}"
        f" (bound {result.bound:.4f}, {result.message})"
    )
    say(f"Smith's rule {data['rule_value']:.4f} with {rule} ({proven}; gap {data['rule_gap']:.2%})")
    say(f"worst order seen {data['worst_value']:.4f}; fair sharing {data['fair_value']:.4f}")


def register(group: click.Group) -> None:
    """Add the ``tensorlights`` group to the root command."""
    group.add_command(tensorlights)
