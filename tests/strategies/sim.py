"""Hypothesis strategies and builders for the simulator: job tables, clusters, throughput tables.

Everything built here is valid by construction: arrivals sorted, gangs no larger than the
largest GPU type, positive durations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from optsched.sim import (
    JOB_COLUMNS,
    ClusterSpec,
    GpuType,
    Throughputs,
    World,
    parse_cluster,
)
from optsched.sim.world.throughputs import throughputs_from_dict

#: A small synthetic table in Gavel's format: job types A (packs well) and B (packs badly), on
#: two GPU types; unconsolidated rates are 80% of consolidated.
SPEED = {"fast": 2.0, "slow": 1.0}
PAIR = {
    ("A", "A"): (0.8, 0.8),
    ("A", "B"): (0.6, 0.5),
    ("B", "A"): (0.5, 0.6),
    ("B", "B"): (0.3, 0.3),
}
BASE = {"A": 1.0, "B": 1.5}


def synthetic_table() -> dict[str, Any]:
    data: dict[str, Any] = {}
    for gpu, speed in SPEED.items():
        for suffix, factor in (("", 1.0), ("_unconsolidated", 0.8)):
            table: dict[str, Any] = {}
            for jt, base in BASE.items():
                for n in (1, 2, 4, 8):
                    alone = base * speed * n * factor
                    entry: dict[str, Any] = {"null": alone}
                    for other in BASE:
                        a, b = PAIR[(jt, other)]
                        entry[f"('{other}', {n})"] = [
                            a * alone,
                            b * BASE[other] * speed * n * factor,
                        ]
                    table[f"('{jt}', {n})"] = entry
            data[gpu + suffix] = table
    return data


def synthetic_throughputs() -> Throughputs:
    return throughputs_from_dict(synthetic_table(), reference="fast")


def job_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """A job table from dicts; missing columns get neutral values."""
    cols: dict[str, list[Any]] = {c: [] for c in JOB_COLUMNS}
    for k, r in enumerate(rows):
        cols["job_id"].append(str(r.get("job_id", f"j{k}")))
        cols["arrival"].append(float(r.get("arrival", 0.0)))
        cols["num_gpus"].append(int(r.get("num_gpus", 1)))
        cols["model"].append(str(r.get("model", "")))
        cols["total_steps"].append(float(r.get("total_steps", math.nan)))
        cols["duration"].append(float(r.get("duration", math.nan)))
        cols["batch_size"].append(float(r.get("batch_size", math.nan)))
        cols["weight"].append(float(r.get("weight", 1.0)))
        cols["deadline"].append(float(r.get("deadline", math.nan)))
        cols["user"].append(str(r.get("user", "u")))
    frame = pd.DataFrame(cols)
    return frame.astype({"num_gpus": "int64"})


def one_gpu_world(
    durations: Sequence[float], arrivals: Sequence[float] | None = None, restore: float = 0.0
) -> World:
    """Generic jobs on one GPU at rate 1: work = duration."""
    arr = list(arrivals) if arrivals is not None else [0.0] * len(durations)
    rows = [{"arrival": a, "duration": d} for a, d in zip(arr, durations, strict=True)]
    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=1, gpus_per_server=1),))
    return World.from_frame(job_frame(rows), cluster, restore_s=restore)


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSpec:
    names = draw(st.lists(st.sampled_from(sorted(SPEED)), min_size=1, max_size=2, unique=True))
    types = []
    for name in names:
        per = draw(st.sampled_from([1, 2, 4]))
        count = draw(st.integers(1, 8))
        types.append(GpuType(name=name, count=count, gpus_per_server=per))
    return ClusterSpec(gpu_types=tuple(types))


@st.composite
def job_tables(
    draw: st.DrawFn, cluster: ClusterSpec, *, max_jobs: int = 7, deadlines: bool = True
) -> pd.DataFrame:
    n = draw(st.integers(1, max_jobs))
    largest = max(t.count for t in cluster.gpu_types)
    gangs = [g for g in (1, 2, 4) if g <= largest]
    t = 0.0
    rows = []
    for _ in range(n):
        t += draw(st.sampled_from([0.0, 0.0, 1.0, 2.5, 7.0, 20.0]))
        duration = draw(st.sampled_from([1.0, 3.0, 5.0, 12.5, 30.0, 61.0]))
        row: dict[str, Any] = {
            "arrival": t,
            "num_gpus": draw(st.sampled_from(gangs)),
            "model": draw(st.sampled_from(["A", "B", "", "unknown-net"])),
            "duration": duration,
            "weight": draw(st.sampled_from([1.0, 2.0])),
        }
        if draw(st.booleans()):
            row["total_steps"] = duration * draw(st.sampled_from([1.0, 3.0]))
        if deadlines and draw(st.booleans()):
            row["deadline"] = t + duration * draw(st.sampled_from([1.0, 2.0, 4.0]))
        rows.append(row)
    return job_frame(rows)


@st.composite
def worlds(draw: st.DrawFn, *, max_jobs: int = 7) -> World:
    cluster = draw(clusters())
    frame = draw(job_tables(cluster, max_jobs=max_jobs))
    restore = draw(st.sampled_from([0.0, 0.0, 0.5, 2.0]))
    return World.from_frame(frame, cluster, synthetic_throughputs(), restore_s=restore)


@st.composite
def boundary_worlds(draw: st.DrawFn) -> World:
    """Every job arrives at 0 with a deadline on a lease boundary and an integral duration,
    one GPU type, uniform rates, no restore cost."""
    gpus = draw(st.integers(1, 4))
    n = draw(st.integers(2, 6))
    rows = []
    for i in range(n):
        rows.append(
            {
                "job_id": f"j{i}",
                "arrival": 0.0,
                "num_gpus": draw(st.integers(1, min(2, gpus))),
                "model": "",
                "total_steps": math.nan,
                "duration": float(draw(st.integers(1, 3 * int(LEASE)))),
                "batch_size": math.nan,
                "weight": 1.0,
                "deadline": LEASE * draw(st.integers(1, 4)),
                "user": "",
            }
        )
    return World.from_frame(pd.DataFrame(rows), parse_cluster(f"v100={gpus}"))


@st.composite
def small_worlds(draw: st.DrawFn) -> World:
    types: dict[str, tuple[int, int]] = {}
    for name in draw(
        st.lists(st.sampled_from(["fast", "slow"]), min_size=1, max_size=2, unique=True)
    ):
        per = draw(st.sampled_from([1, 2, 4]))
        types[name] = (per * draw(st.integers(1, 2)), per)
    largest = max(c for c, _ in types.values())
    n = draw(st.integers(2, 5))
    t = 0.0
    rows = []
    for _ in range(n):
        t += draw(st.sampled_from([0.0, 0.0, 1.0, 2.5, 7.0]))
        d = draw(st.sampled_from([1.0, 3.0, 5.0, 12.5]))
        rows.append(
            {
                "arrival": t,
                "num_gpus": draw(st.sampled_from([g for g in (1, 2, 4) if g <= largest])),
                "model": draw(st.sampled_from(["A", "B", ""])),
                "duration": d,
                "weight": draw(st.sampled_from([1.0, 2.0])),
                "deadline": t + d * draw(st.sampled_from([1.0, 2.0, 4.0])),
            }
        )
    return typed_world(rows, types)


@st.composite
def busy_worlds(draw: st.DrawFn) -> World:
    """Small worlds with queueing, skewed (``vgg``) models and restore costs."""
    cluster = draw(clusters())
    frame = draw(job_tables(cluster, max_jobs=12))
    skewed = draw(st.lists(st.booleans(), min_size=len(frame), max_size=len(frame)))
    frame["model"] = [
        "vgg16" if s else m for s, m in zip(skewed, frame["model"].tolist(), strict=True)
    ]
    restore = draw(st.sampled_from([0.0, 0.5, 2.0]))
    return World.from_frame(frame, cluster, synthetic_throughputs(), restore_s=restore)


@st.composite
def one_type_worlds(draw: st.DrawFn) -> World:
    """Busy one-type worlds with small servers (spread gangs), skewed models, restore costs."""
    from optsched.sim.world.generate import generate_job_table

    gps = draw(st.sampled_from([2, 4, 8]))
    servers = draw(st.integers(1, 4))
    frame = generate_job_table(
        draw(st.integers(2, 25)),
        seed=draw(st.integers(0, 10_000)),
        mean_interarrival=draw(st.sampled_from([1.0, 5.0])),
        mu=2.0,
        sigma=1.0,
        gangs=tuple(g for g in (1, 2, 4, 8) if g <= gps * servers),
        gang_weights=(0.4, 0.3, 0.2, 0.1)[: len([g for g in (1, 2, 4, 8) if g <= gps * servers])],
        models=("resnet50", "vgg16", ""),
    )
    cluster = ClusterSpec(
        gpu_types=(GpuType(name="v100", count=gps * servers, gpus_per_server=gps),)
    )
    restore = draw(st.sampled_from([0.0, 0.5]))
    return World.from_frame(frame, cluster, restore_s=restore)


@st.composite
def wait_queue_ops(draw: st.DrawFn) -> list[tuple[str, int, int, float]]:
    """Operations on a :class:`~optsched.sim.policies.walk.WaitQueue`.

    ``(op, job, gang, key)`` with ``op`` one of ``push`` (a new job, or a waiting one re-keyed),
    ``discard`` and ``best`` (``gang`` then the largest gang asked for); few jobs, gangs and
    keys, so that re-keys, removals from inside a heap and emptied heaps all happen.
    """
    n = draw(st.integers(1, 60))
    return [
        (
            draw(st.sampled_from(["push", "push", "discard", "best"])),
            draw(st.integers(0, 9)),
            draw(st.sampled_from([1, 2, 4, 8])),
            draw(st.integers(0, 5).map(float)),
        )
        for _ in range(n)
    ]


#: Chronus's lease length in seconds (the round of its simulations).
LEASE = 100.0


def typed_world(rows: list[dict[str, Any]], types: dict[str, tuple[int, int]]) -> World:
    """A world of ``rows`` on a cluster of ``types``: name -> (servers, GPUs per server)."""
    cluster = ClusterSpec(
        gpu_types=tuple(GpuType(name=n, count=c, gpus_per_server=p) for n, (c, p) in types.items())
    )
    return World.from_frame(job_frame(rows), cluster, synthetic_throughputs())


@st.composite
def matching_cases(draw: st.DrawFn) -> tuple[np.ndarray, list[int]]:
    n_types = draw(st.integers(1, 3))
    gpus = draw(st.lists(st.integers(0, 2), min_size=n_types, max_size=n_types))
    if sum(gpus) == 0:
        gpus[0] = 1
    m = draw(st.integers(0, 5 if sum(gpus) <= 2 else 4))
    cell = st.one_of(st.integers(1, 9).map(float), st.just(math.inf))
    rows = []
    for _ in range(m):
        row = draw(st.lists(cell, min_size=n_types, max_size=n_types))
        usable = [g for g in range(n_types) if gpus[g] > 0]
        if all(math.isinf(row[g]) for g in usable):
            row[usable[0]] = float(draw(st.integers(1, 9)))
        rows.append(row)
    return np.array(rows, dtype=float).reshape(m, n_types), gpus


@st.composite
def user_worlds(draw: st.DrawFn) -> tuple[World, dict[str, float]]:
    cluster = draw(clusters())
    frame = draw(job_tables(cluster, max_jobs=7))
    frame["user"] = [draw(st.sampled_from(["a", "b", "c", ""])) for _ in range(len(frame))]
    restore = draw(st.sampled_from([0.0, 0.0, 0.5, 2.0]))
    world = World.from_frame(frame, cluster, synthetic_throughputs(), restore_s=restore)
    tickets = {u: float(draw(st.integers(1, 4))) for u in ("a", "b", "c")}
    return world, tickets


#: Policies whose records the validator strategies draw: event-driven, round-based, with
#: shared GPUs (``max-min-packed``, ``gandiva``), under both mechanisms.
RECORD_POLICIES = (
    ("fifo", "optsched"),
    ("srtf", "optsched"),
    ("tiresias-las", "optsched"),
    ("max-min-packed", "optsched"),
    ("gandiva", "optsched"),
    ("gavel-fifo", "gavel"),
)

#: How :func:`corrupted` spoils a record, and the constraint each must trip (``None``: it may
#: or may not, e.g. a row moved to a server that happens to be free).
CORRUPTIONS: dict[str, str | None] = {
    "server_out_of_range": "interval_shape",
    "no_gpus": "interval_shape",
    "nan_start": "interval_shape",
    "backwards": "interval_shape",
    "unknown_job": "interval_shape",
    "unknown_type": "interval_shape",
    "unknown_partner": "interval_shape",
    "drop_row": None,
    "duplicate_row": None,
    "other_server": None,
    "shift_row": None,
    "stretch_row": None,
    "late_completion": "work_done",
    "early_first_start": None,
    "partner": None,
    "zero_rate_type": None,
    "claim_work_conserving": None,
}


def _spoil(rec: Any, how: str, r: int, amount: float, other: int) -> Any:
    """``rec`` (a :class:`~optsched.sim.SimResult`) with row ``r`` or a job spoiled ``how``."""
    import copy

    out = copy.copy(rec)
    cols = {c: list(v) for c, v in rec.intervals.items()}
    out.intervals, out.completion, out.first_start = (
        cols,
        list(rec.completion),
        list(rec.first_start),
    )
    out.extra = dict(rec.extra)
    ids = [j.job_id for j in rec.world.jobs]
    types = [t.name for t in rec.world.cluster.gpu_types]
    n = len(cols["job_id"])
    if how == "claim_work_conserving":
        out.extra["work_conserving"] = True
    elif how == "late_completion":
        k = other % len(ids)
        done = [i for i, c in enumerate(out.completion) if c == c]
        if done:
            k = done[other % len(done)]
            out.completion[k] += 10.0 + amount
    elif how == "early_first_start":
        k = other % len(ids)
        out.first_start[k] = 0.0 if out.first_start[k] == out.first_start[k] else amount
    elif n:
        r %= n
        _spoil_row(cols, how, r, amount, ids[other % len(ids)], types[other % len(types)])
    return out


#: Corruptions that set one cell of row ``r``: column -> new value from (cols, r, amount, job, gt).
_SET_CELL: dict[str, tuple[str, Any]] = {
    "server_out_of_range": ("server", lambda c, r, a, j, g: 10_000),
    "no_gpus": ("gpus", lambda c, r, a, j, g: 0),
    "nan_start": ("start", lambda c, r, a, j, g: math.nan),
    "unknown_job": ("job_id", lambda c, r, a, j, g: "no-such-job"),
    "unknown_type": ("gpu_type", lambda c, r, a, j, g: "no-such-type"),
    "unknown_partner": ("shared_with", lambda c, r, a, j, g: "no-such-job"),
    "other_server": ("server", lambda c, r, a, j, g: int(a) % 2),
    "stretch_row": ("end", lambda c, r, a, j, g: c["end"][r] + abs(a)),
    "partner": ("shared_with", lambda c, r, a, j, g: j if j != c["job_id"][r] else ""),
    "zero_rate_type": ("gpu_type", lambda c, r, a, j, g: g),
}


def _spoil_row(
    cols: dict[str, list[Any]], how: str, r: int, amount: float, job: str, gt: str
) -> None:
    if how in _SET_CELL:
        column, value = _SET_CELL[how]
        cols[column][r] = value(cols, r, amount, job, gt)
    elif how == "backwards":
        cols["start"][r], cols["end"][r] = cols["end"][r], cols["start"][r]
    elif how == "drop_row":
        for c in cols.values():
            del c[r]
    elif how == "duplicate_row":
        for c in cols.values():
            c.append(c[r])
    elif how == "shift_row":
        cols["start"][r] += amount
        cols["end"][r] += amount


@st.composite
def sim_records(draw: st.DrawFn) -> Any:
    """A simulation record of a small busy world under one of :data:`RECORD_POLICIES`."""
    from optsched.sim import simulate

    world = draw(busy_worlds())
    policy, mechanism = draw(st.sampled_from(RECORD_POLICIES))
    return simulate(world, policy, mechanism=mechanism)


@st.composite
def corrupted(draw: st.DrawFn, record: Any) -> tuple[Any, list[str]]:
    """``record`` with one to three of :data:`CORRUPTIONS` applied, and their names."""
    hows = draw(st.lists(st.sampled_from(sorted(CORRUPTIONS)), min_size=1, max_size=3))
    out = record
    for how in hows:
        r = draw(st.integers(0, 10_000))
        amount = draw(st.sampled_from([-5.0, -0.5, 1e-9, 0.25, 3.0, 40.0]))
        other = draw(st.integers(0, 100))
        out = _spoil(out, how, r, amount, other)
    return out, hows


@st.composite
def hand_records(draw: st.DrawFn) -> Any:
    """A record written by hand on a two-type world: segments on a coarse time grid (so
    segments touch, overlap, leave gaps and park a job where its rate is 0), any completions."""
    from optsched.sim import SimResult
    from optsched.sim.measure.record import add_interval, empty_intervals

    table = synthetic_table()
    for key in ("slow", "slow_unconsolidated"):
        table[key]["('B', 2)"]["null"] = 0.0  # B cannot run on slow: its stalls
    rows = [
        {"job_id": "a", "model": "A", "num_gpus": 2, "total_steps": 40.0},
        {"job_id": "c", "model": "A", "num_gpus": 1, "total_steps": 20.0, "arrival": 1.0},
        {"job_id": "b", "model": "B", "num_gpus": 2, "total_steps": 60.0, "arrival": 2.0},
    ]
    restore = draw(st.sampled_from([0.0, 0.5]))
    world = World.from_frame(
        job_frame(rows),
        parse_cluster("fast=4:2,slow=2:2"),
        throughputs_from_dict(table, reference="fast"),
        restore_s=restore,
    )
    intervals = empty_intervals()
    # two times within the validator's slack of a grid time: "one instant" to it
    near = [3.0 + 5e-10, 4.0 - 5e-10]
    grid = st.sampled_from([0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 6.0, 7.0, 10.0, 12.0, *near])
    for _ in range(draw(st.integers(0, 8))):
        job = draw(st.sampled_from(["a", "b", "b", "c"]))  # b: the one that stalls on slow
        gt = draw(st.sampled_from(["fast", "slow"]))
        start = draw(grid)
        end = start + draw(st.sampled_from([0.5, 1.0, 1.5, 4.0, 10.0]))
        gang = 2 if job in ("a", "b") else 1
        servers = draw(st.sampled_from([((0, gang),), ((1, gang),), ((0, 1), (1, 1))]))
        if gt == "slow":  # slow has one server: mostly on it
            servers = draw(st.sampled_from([((0, gang),), ((0, gang),), servers]))
        if gang == 1:
            servers = ((servers[0][0], 1),)
        shared = draw(st.sampled_from(["", "", "", "a", "b"]))
        add_interval(intervals, job, gt, servers, start, end, shared if shared != job else "")
    ends = sorted(set(intervals["end"])) or [1.0]
    times = st.one_of(st.just(math.nan), st.sampled_from(ends), grid)
    completion = [draw(times) for _ in rows]
    first = [draw(times) for _ in rows]
    return SimResult(
        world=world,
        policy="hand",
        round_seconds=draw(st.sampled_from([None, 1.0])),
        intervals=intervals,
        completion=completion,
        first_start=first,
        end_time=max(ends + [c for c in completion if c == c]),
        extra={"work_conserving": draw(st.booleans())},
    )
