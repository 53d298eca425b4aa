"""``optsched harmony``: learned placement by deep reinforcement learning.

Subcommands
-----------
``train [--reward learned|true] [--iterations N] [--episodes E] [--jobs N] [--seed S]
[--predicted] [--imitate N] -o FILE``
    Fit the reward network (unless ``--reward true`` without ``--predicted``), train the
    policy, write an ``.npz`` checkpoint; a progress bar on stderr. ``--predicted`` gives the
    policy the reward network's predicted added slowdown of every server (the checkpoint
    carries that network); ``--imitate N`` clones ``interference-greedy`` for the first N
    updates (a warm start). Needs the ``rl`` extra.
``place [TRACE] [--jobs N --seed S] [--model FILE] [--json]``
    Place every job of TRACE (any trace format; or N generated arrivals) with the trained
    policy (the shipped one by default) and report where each went and the JCTs.
``compare [TRACE] [--jobs N --seed S] [--policies A,B] [--model FILE] [--gaps] [--json]``
    Every policy on the same arrivals, every decision validated; ``--gaps`` adds, at every
    decision of the learned policy's run, each policy's ratio to the exact optimum of the
    *true* group-slowdown cost (all decisions and non-trivial ones). ``pairwise-ilp`` is the
    exact optimum of the pairwise *approximation*, ``true-exact`` that of the true cost.

A checkpoint's digest proves integrity, not origin (anyone editing the file can recompute it).
With ``OPTSCHED_HARMONY_KEY`` set, ``train`` signs what it writes (HMAC-SHA256) and ``place`` and
``compare`` refuse a ``--model`` that is not signed with that key; ``--trust DIGEST``
(repeatable) accepts only checkpoints with one of those digests. Every refusal exits 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    err_console,
    json_option,
    output_option,
    print_json,
    say,
    with_units,
)
from optsched.cli.json_units import HARMONY_UNITS

__all__ = ["harmony", "register"]

_DEFAULT_POLICIES = (
    "harmony,interference-greedy,consolidate-first,first-fit,load-balance,tetris,random,"
    "pairwise-ilp,true-exact"
)


@click.group()
def harmony() -> None:
    """Learned placement of PS jobs (Harmony), judged against the true exact optimum."""


def _arrivals(world: Any, trace: Path | None, jobs: int, seed: int) -> Any:
    from optsched.harmony.compare import arrivals_from_trace
    from optsched.harmony.world import generate_arrivals

    if trace is not None:
        return arrivals_from_trace(world, trace)
    return generate_arrivals(world, jobs, seed=seed)


def _key() -> bytes | None:
    """The signing key of :data:`~optsched.harmony.checkpoint.KEY_ENV`, if set and not empty."""
    from optsched.harmony.checkpoint import KEY_ENV

    raw = os.environ.get(KEY_ENV)
    return raw.encode("utf-8") if raw else None


def _model(model: Path | None, trust: tuple[str, ...] = ()) -> tuple[Any, Any, Any]:
    """Load ``model`` (default: the shipped one) and its world.

    A user's file must carry a signature under the key of ``OPTSCHED_HARMONY_KEY`` when that
    is set; the shipped model ships with the code and is not signed (pin it with ``--trust``).
    """
    from optsched.harmony.agent import load_model, world_from_meta

    key = _key() if model is not None else None
    params, meta = load_model(model, key=key, trusted_digests=set(trust) if trust else None)
    return params, meta, world_from_meta(meta)


def _trust_option(f: Any) -> Any:
    return click.option(
        "--trust",
        multiple=True,
        metavar="DIGEST",
        help="Accept the checkpoint only if its digest is one of these (repeatable).",
    )(f)


@harmony.command()
@click.option(
    "--reward",
    type=click.Choice(["learned", "true"]),
    default="learned",
    show_default=True,
    help="Train on the reward network or on the true world.",
)
@click.option("--iterations", type=click.IntRange(min=1), default=200, show_default=True)
@click.option(
    "--episodes",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Episodes per policy update.",
)
@click.option(
    "--jobs", type=click.IntRange(min=1), default=16, show_default=True, help="Jobs per episode."
)
@click.option("--servers", type=click.IntRange(min=1), default=6, show_default=True)
@click.option("--types", "n_types", type=click.IntRange(min=1), default=6, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--predicted/--no-predicted",
    default=False,
    show_default=True,
    help="Give the policy the reward network's predicted added slowdown of every server.",
)
@click.option(
    "--imitate",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Warm start: the first N updates clone interference-greedy, then policy gradient.",
)
@output_option((".npz",), required=True, help="Write the checkpoint")
@json_option
def train(
    reward: str,
    iterations: int,
    episodes: int,
    jobs: int,
    servers: int,
    n_types: int,
    seed: int,
    predicted: bool,
    imitate: int,
    output: Path,
    as_json: bool,
) -> None:
    """Train the placement policy and write its checkpoint."""
    from rich.progress import Progress

    from optsched.harmony.agent import save_model
    from optsched.harmony.agent import train as run_training
    from optsched.harmony.checkpoint import model_digest
    from optsched.harmony.world import HarmonyWorld

    world = HarmonyWorld(n_servers=servers, n_types=n_types, seed=seed)
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("training", total=iterations)

        def advance(done: int, total: int, point: Mapping[str, float]) -> None:
            bar.update(task, completed=done, description=f"reward {point['reward']:.3f}")

        result = run_training(
            world,
            reward=reward,
            iterations=iterations,
            episodes=episodes,
            n_jobs=jobs,
            seed=seed,
            progress=advance,
            predicted=predicted,
            imitate=imitate,
        )
    key = _key()
    save_model(output, result, key=key)
    payload = {
        "model": str(output),
        "digest": model_digest(result.params, result.meta),
        "signed": key is not None,
        "cpu_s": result.cpu_s,
        "reward_model": result.meta["reward_model"],
        "record": result.meta["record"],
        "curve": result.curve,
    }
    if as_json:
        print_json(with_units(payload, HARMONY_UNITS))
    else:
        first, last = result.curve[0], result.curve[-1]
        err_console.print(
            f"trained in {result.cpu_s:.1f} s CPU: episode reward {first['reward']:.3f} -> "
            f"{last['reward']:.3f}; wrote {output} (digest {payload['digest'][:16]})"
        )


@harmony.command()
@click.argument("trace", type=click.Path(path_type=Path), required=False)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Generated arrivals when no TRACE is given.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--model",
    type=click.Path(path_type=Path),
    default=None,
    help="Checkpoint (default: the shipped model).",
)
@_trust_option
@json_option
def place(
    trace: Path | None,
    jobs: int,
    seed: int,
    model: Path | None,
    trust: tuple[str, ...],
    as_json: bool,
) -> None:
    """Place the jobs of TRACE with the trained policy (every decision validated)."""
    from optsched.harmony.policies import run_policy

    params, _, world = _model(model, trust)
    arrivals = _arrivals(world, trace, jobs, seed)
    run = run_policy(world, arrivals, "harmony", params=params)
    payload = {
        "summary": run.summary(),
        "jobs": [
            {
                "job": a.id,
                "type": a.job_type,
                "workers": a.n_workers,
                "ps": a.n_ps,
                "servers": run.placements[a.id],
                "jct_s": float(run.jct[i]),
            }
            for i, a in enumerate(arrivals)
        ],
    }
    if as_json:
        print_json(with_units(payload, HARMONY_UNITS))
        return
    s = run.summary()
    click.echo(
        f"{s['jobs']} jobs placed; average JCT {s['avg_jct_s']:.1f} s, makespan "
        f"{s['makespan_s']:.1f} s, {s['mean_decision_cpu_ms']:.2f} ms CPU per decision"
    )


@harmony.command()
@click.argument("trace", type=click.Path(path_type=Path), required=False)
@click.option("--jobs", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--policies", default=_DEFAULT_POLICIES, show_default=True, help="Comma-separated policies."
)
@click.option("--model", type=click.Path(path_type=Path), default=None)
@click.option(
    "--gaps",
    is_flag=True,
    help="Also solve the true exact optimum at every decision and score every policy.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds per pairwise-ILP solve.",
)
@_trust_option
@json_option
def compare(
    trace: Path | None,
    jobs: int,
    seed: int,
    policies: str,
    model: Path | None,
    gaps: bool,
    time_limit: float | None,
    trust: tuple[str, ...],
    as_json: bool,
) -> None:
    """Every policy on the same arrivals: average JCT, makespan, ratio to harmony."""
    from optsched.errors import InvalidInstanceError
    from optsched.harmony.compare import compare_policies, decision_gaps

    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise InvalidInstanceError("--policies", "name at least one policy")
    params, _, world = _model(model, trust)
    arrivals = _arrivals(world, trace, jobs, seed)
    try:
        out = compare_policies(
            world, arrivals, names, params=params, seed=seed, time_limit=time_limit
        )
    except InvalidInstanceError as exc:
        if exc.field == "policies":
            raise InvalidInstanceError("--policies", exc.message) from None
        raise
    out.pop("runs")
    out["trace"] = None if trace is None else str(trace)
    if gaps:
        judged = decision_gaps(
            world, arrivals, params, policies=names, seed=seed, time_limit=time_limit
        )
        out["exact"] = {"true": judged}
    else:
        out["exact"] = {}
    if as_json:
        print_json(with_units(out, HARMONY_UNITS))
        return
    for rec in out["policies"]:
        ratio = "" if rec["jct_ratio"] is None else f"  x{rec['jct_ratio']:.2f}"
        click.echo(
            f"{rec['policy']:>20}: avg JCT {rec['avg_jct_s']:10.1f} s  makespan "
            f"{rec['makespan_s']:10.1f} s{ratio}"
        )
    if gaps:
        g = out["exact"]["true"]
        t = g["trivial"]
        say(
            f"per decision vs the true exact optimum ({g['decisions']} decisions of the "
            f"{g['driver']} run; non-trivial {t['open']}, lone server {t['lone']}, "
            f"forced {t['forced']}): mean ratio and % optimal, all | non-trivial"
        )
        for name, rec in g["policies"].items():
            a, n = rec["all"], rec["nontrivial"]
            tail = (
                "   (no non-trivial decision)"
                if n["mean"] is None
                else f"   {n['mean']:.3f} {100 * n['fraction_optimal']:4.0f}%"
            )
            click.echo(f"{name:>20}: {a['mean']:.3f} {100 * a['fraction_optimal']:4.0f}% |{tail}")


def register(group: click.Group) -> None:
    """Add ``harmony`` to the root command."""
    group.add_command(harmony)
