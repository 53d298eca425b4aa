"""The metrics read from the interval table in NumPy equal a row-by-row reading of it.

``spread_gang_seconds`` (a vectorized screen for spread segments, then the runs of those jobs
only), the per-job ``gpu_seconds`` and ``runs`` and ``energy_kwh`` are checked against the
row-by-row loops below, on random records and on records with rows moved, stretched, dropped or
duplicated (which spreads gangs and overlaps jobs), bit for bit.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import _spoil, sim_records

from optsched.power import JOULES_PER_KWH, gpu_power
from optsched.sim.measure.metrics import energy_kwh, job_metrics, spread_gang_seconds
from optsched.tolerances import FIT_TOL

#: Board power of the strategies' GPU types (W).
POWER = {"fast": 300.0, "slow": 250.0}


def _rows(result):
    cols = result.intervals
    names = ("job_id", "gpu_type", "server", "gpus", "start", "end", "shared_with")
    return list(zip(*(cols[c] for c in names), strict=True))


def _spread_by_rows(result):
    """The definition, row by row: runs of one placement, spread ones, room at their start."""
    segs: dict = {}
    for job, gt, server, gpus, start, end, _ in _rows(result):
        segs.setdefault((job, start, end), []).append((gt, server, gpus))
    by_job: dict = {}
    for (job, start, end), parts in segs.items():
        by_job.setdefault(job, []).append(
            (start, end, parts[0][0], tuple(sorted((p[1], p[2]) for p in parts)))
        )
    runs = []
    for job, ss in by_job.items():
        ss.sort()
        s0, e0, g0, p0 = ss[0]
        for start, end, gt, placement in ss[1:]:
            if abs(start - e0) <= FIT_TOL * max(1.0, abs(start)) and (gt, placement) == (g0, p0):
                e0 = end
                continue
            runs.append((job, g0, s0, e0, p0))
            s0, e0, g0, p0 = start, end, gt, placement
        runs.append((job, g0, s0, e0, p0))
    types = {t.name: t for t in result.world.cluster.gpu_types}
    total = with_room = 0.0
    for job, gt, start, end, servers in runs:
        t, n = types[gt], sum(g for _, g in servers)
        k = -(-n // t.gpus_per_server)
        if len(servers) <= k:
            continue
        total += end - start
        used: dict = {}
        slack = FIT_TOL * max(1.0, abs(start))
        for j, g, s, gp, a, b, sh in _rows(result):
            if g != gt or job in (j, sh) or (sh and sh < j):
                continue
            if a <= start + slack and b > start + slack:
                used[s] = used.get(s, 0) + gp
        free = sorted(t.server_capacity(s) - used.get(s, 0) for s in range(t.num_servers))
        if sum(free[::-1][:k]) >= n:
            with_room += end - start
    return total, with_room


def _held_runs_energy_by_rows(result):
    held: dict = {}
    runs: dict = {}
    last: dict = {}
    seen: set = set()
    joules = 0.0
    for job, gt, _s, gpus, start, end, shared in _rows(result):
        held[job] = held.get(job, 0.0) + gpus * (end - start) * (0.5 if shared else 1.0)
        if not (shared and shared < job):
            joules += gpu_power(gt, POWER, field="power") * gpus * (end - start)
        if (job, start) in seen:
            continue
        seen.add((job, start))
        if job not in last or start > last[job] + FIT_TOL * max(1.0, start):
            runs[job] = runs.get(job, 0) + 1
        last[job] = max(last.get(job, -math.inf), end)
    ids = [j.job_id for j in result.world.jobs]
    return [held.get(j, 0.0) for j in ids], [runs.get(j, 0) for j in ids], joules / JOULES_PER_KWH


@given(st.data())
@settings(max_examples=40)
def test_metrics_equal_the_row_by_row_reading(data):
    record = data.draw(sim_records())
    for _ in range(data.draw(st.integers(0, 3))):
        how = data.draw(
            st.sampled_from(
                ["other_server", "shift_row", "stretch_row", "drop_row", "duplicate_row"]
            )
        )
        r, other = data.draw(st.integers(0, 1000)), data.draw(st.integers(0, 100))
        record = _spoil(record, how, r, data.draw(st.sampled_from([-0.5, 0.25, 3.0])), other)
    assert spread_gang_seconds(record) == _spread_by_rows(record)
    held, runs, energy = _held_runs_energy_by_rows(record)
    frame = job_metrics(record)
    assert frame["gpu_seconds"].tolist() == held
    assert frame["runs"].tolist() == runs
    assert energy_kwh(record, POWER) == energy
