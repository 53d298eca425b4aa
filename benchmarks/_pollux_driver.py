"""Dump Pollux's own goodput-model values, computed by the artifact's unmodified code, to JSON.

Runs in the artifact's virtualenv (Python 3.8, its ``simulator/requirements.txt`` plus
``autograd``), never in optsched's, and imports only the artifact's modules::

    python3.8 benchmarks/_pollux_driver.py SIMULATOR_DIR OUT.json

``SIMULATOR_DIR`` is the ``simulator/`` folder of petuum/adaptdl at branch ``osdi21-artifact``.
For each of the six job types it records, for optsched's cross-check
(``tests/test_goodput_artifact.py``):

* ``fits``: the artifact's fitted throughput parameters (``goodput.fit_perf_params``) on four
  profiles of the type's ``placements.csv`` (all rows; one node only; the most measured
  per-GPU batch only, the smallest of ties; the single-GPU rows only), each with its
  throughput at a grid of ``(nodes, replicas, atomic batch, accumulation)`` and its
  ``GoodputFunction.optimize`` choice and ``speedup.SpeedupFunction`` value at a grid of
  allocations and training progress;
* ``efficiency``: gradient statistics (``Application.get_grad_stats``) and
  ``GoodputFunction.efficiency`` at a grid of batch sizes and epochs;
* ``epochs``: ``Application.get_epoch`` / ``get_progress`` at a grid of progress values;
* ``measured``: ``Application.get_throughput`` (the simulator's interpolated step and sync
  times) at a grid of placements and per-GPU batches;
* ``rates``: progress per second of a simulated ``simulator.Job`` stepped one second at a
  fixed configuration;
* ``trajectories``: a ``simulator.Job`` with a fixed global batch, reallocated once and then
  stepped 300 s at a time (clock, progress, epoch, completion, configuration after each);
* ``adaptive``: the same for a job whose batch Pollux's agent picks (the ``simulator.Job`` of
  the Pollux policy), reallocated from one GPU to four to two nodes of four, with the agent's
  fitted parameters after each step.

Nothing here re-implements the model: every number is returned by the artifact's functions.
"""

import json
import math
import sys

import numpy as np

PROFILES = ("full", "single_node", "one_bsz", "single_gpu")
ALLOCATIONS = ((1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 4), (2, 8), (3, 12), (4, 16),
               (8, 32), (16, 64))  # fmt: skip
ACCUM = (0, 2)
PROGRESS_FRACTIONS = (0.0, 0.05, 0.3, 0.7, 0.95)
PLACEMENTS = ((1,), (2,), (3,), (4,), (2, 2), (1, 3), (4, 4), (2, 2, 2), (4, 4, 4, 4),
              (4, 4, 4, 4, 4, 4, 4, 4), (3, 1, 2), (4, 4, 1))  # fmt: skip


def _num(x):
    x = float(x)
    return None if math.isnan(x) else x


def _profile(app, name):
    df = app.placements
    if name == "single_node":
        df = df[df.num_nodes == 1]
    elif name == "one_bsz":
        counts = df.local_bsz.value_counts()
        df = df[df.local_bsz == min(counts[counts == counts.max()].index)]  # smallest of ties
    elif name == "single_gpu":
        df = df[df.num_replicas == 1]
    compute = df.step_time.values - df.sync_time.values
    return (df.num_nodes.values, df.num_replicas.values, df.local_bsz.values, compute,
            df.step_time.values)  # fmt: skip


def _atomic_grid(app):
    lo, hi = float(app.min_local_bsz), float(app.max_local_bsz)
    return sorted({int(lo), round(math.sqrt(lo * hi)), int(hi)})


def _fits(app, goodput, speedup):
    out = []
    progress_end = app.get_progress(app.max_epochs)
    for name in PROFILES:
        data = _profile(app, name)
        params = goodput.fit_perf_params(*data)
        grad = app.get_grad_stats(app.init_batch_size, 0)
        fn = goodput.GoodputFunction(params, grad, app.init_batch_size)
        tput = []
        for n, k in ALLOCATIONS:
            for m in _atomic_grid(app):
                for s in ACCUM:
                    tput.append([n, k, m, s, _num(fn.throughput(n, k, m, s))])
        choices = []
        speedups = []
        for frac in PROGRESS_FRACTIONS:
            epoch = app.get_epoch(frac * progress_end)
            epoch = min(epoch, app.max_epochs - 1)
            sqr, var = app.get_grad_stats(app.init_batch_size, epoch)
            fn = goodput.GoodputFunction(params, (sqr, var), app.init_batch_size)
            for n, k in ALLOCATIONS:
                if k * app.min_local_bsz > app.max_batch_size:
                    continue
                best, m, s = fn.optimize(n, k, app.max_batch_size,
                                         (app.min_local_bsz, app.max_local_bsz),
                                         accumulation=True)  # fmt: skip
                choices.append([epoch, n, k, _num(best), int(m), int(s)])
            table = speedup.SpeedupFunction(fn, app.max_batch_size,
                                            (app.min_local_bsz, app.max_local_bsz),
                                            accumulation=True)  # fmt: skip
            for n, k in ((0, 0), *ALLOCATIONS):
                speedups.append([epoch, n, k, _num(table(n, k))])
        out.append({"profile": name, "rows": len(data[0]),
                    "params": [float(v) for v in params], "throughput": tput,
                    "optimize": choices, "speedup": speedups})  # fmt: skip
    return out


def _efficiency(app, goodput):
    sizes = list(app.validation)
    # geometric midpoints of successive validated sizes (Python 3.8: no itertools.pairwise)
    mids = {round(math.sqrt(sizes[i] * sizes[i + 1])) for i in range(len(sizes) - 1)}
    grid = sorted(set(sizes) | mids)
    out = []
    for epoch in sorted({0, 1, app.max_epochs // 2, app.max_epochs - 1}):
        for bsz in grid:
            sqr, var = app.get_grad_stats(bsz, epoch)
            fn = goodput.GoodputFunction([1.0] * 7, (sqr, var), app.init_batch_size)
            out.append([epoch, bsz, float(sqr), float(var), _num(fn.efficiency(bsz))])
    return out


def _epochs(app):
    end = app.get_progress(app.max_epochs)
    values = sorted({0.0, end} | {end * f for f in (0.001, 0.01, 0.1, 0.25, 0.5, 0.9, 0.999)})
    return {
        "progress_end": float(end),
        "epoch_at": [[float(p), int(app.get_epoch(p))] for p in values],
        "progress_at": [[e, float(app.get_progress(e))] for e in range(app.max_epochs + 1)],
    }


def _measured(app):
    out = []
    for placement in PLACEMENTS:
        for m in _atomic_grid(app):
            try:
                step, sync = app.get_throughput(placement, m)
                out.append([list(placement), m, _num(step), _num(sync)])
            except (AssertionError, ValueError):
                out.append([list(placement), m, None, None])
    return out


def _rates(app, simulator):
    out = []
    for placement in ((1,), (4,), (2, 2), (4, 4)):
        k = sum(placement)
        for m in _atomic_grid(app):
            for s in (0, 1):
                if k * m * (s + 1) > app.max_batch_size or k * m * (s + 1) < app.init_batch_size:
                    continue
                for epoch in (0, app.max_epochs // 2):
                    job = simulator.Job("probe", app, 0)
                    job.placement = placement
                    job.atomic_bsz, job.accum_steps = m, s
                    job.epoch = epoch
                    job.progress = app.get_progress(epoch)
                    before = job.progress
                    job.step(1.0)
                    if job.epoch != epoch:
                        continue  # crossed an epoch boundary: not a constant-rate interval
                    out.append([list(placement), m, s, epoch, float(job.progress - before)])
    return out


def _trajectories(app, simulator):
    """A fixed-batch job stepped in 300 s intervals after a reallocation, until done (or 60)."""
    out = []
    for placement in ((1,), (4,), (4, 4)):
        k = sum(placement)
        low = max(app.init_batch_size, k * app.min_local_bsz)
        batch = min(max(app.init_batch_size * k, low), app.max_batch_size)
        job = simulator.Job("probe", app, 0, target_batch_size=batch)
        job.reallocate(placement)
        steps = []
        for _ in range(60):
            job.step(300.0)
            steps.append([float(job.current_time), float(job.progress), int(job.epoch),
                          None if job.completion_time is None else float(job.completion_time),
                          int(job.atomic_bsz), int(job.accum_steps)])  # fmt: skip
            if job.completion_time is not None:
                break
        out.append({"placement": list(placement), "batch_size": float(batch), "steps": steps})
    return out


def _adaptive(app, simulator):
    """A Pollux job (its agent picks the batch) moved (1,) -> (4,) -> (4, 4), 300 s steps."""
    job = simulator.Job("probe", app, 0)
    steps = []
    for placement, count in (((1,), 3), ((4,), 3), ((4, 4), 30)):
        job.reallocate(placement)
        for _ in range(count):
            job.step(300.0)
            steps.append([list(placement), float(job.current_time), float(job.progress),
                          int(job.epoch),
                          None if job.completion_time is None else float(job.completion_time),
                          int(job.atomic_bsz), int(job.accum_steps),
                          [float(v) for v in job.perf_params]])  # fmt: skip
            if job.completion_time is not None:
                return steps
    return steps


def main():
    sim_dir, out_path = sys.argv[1], sys.argv[2]
    sys.path.insert(0, sim_dir)
    import applications
    import goodput
    import simulator
    import speedup

    np.seterr(all="ignore")
    dump = {"source": "petuum/adaptdl osdi21-artifact simulator/", "models": {}}
    for name in sorted(applications.APPLICATIONS):
        app = applications.APPLICATIONS[name]
        dump["models"][name] = {
            "limits": [
                float(app.init_batch_size),
                float(app.max_batch_size),
                float(app.min_local_bsz),
                float(app.max_local_bsz),
            ],
            "max_epochs": int(app.max_epochs),
            "fits": _fits(app, goodput, speedup),
            "efficiency": _efficiency(app, goodput),
            "epochs": _epochs(app),
            "measured": _measured(app),
            "rates": _rates(app, simulator),
            "trajectories": _trajectories(app, simulator),
            "adaptive": _adaptive(app, simulator),
        }
        print(name, "done", file=sys.stderr)
    with open(out_path, "w") as fh:
        json.dump(dump, fh, separators=(",", ":"), default=lambda o: o.item())


if __name__ == "__main__":
    main()
