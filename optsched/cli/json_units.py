"""The unit of every number the non-simulator commands print with ``--json``, per family.

Each table maps a field name (or dotted names with ``*`` wildcards, matched against the last
keys of a field's path, see :func:`optsched.cli.common.unit_entry`) to its unit; a command adds
to its JSON document a ``units`` map holding the entries of the fields that document has
(:func:`optsched.cli.common.with_units`). The units are those the code computes in: OASiS
counts time in slots and utility in the instance's utility units, PACE in milliseconds,
TensorLights in seconds, profiles in milliseconds, bytes and FLOPs. The simulator's table is
:data:`optsched.cli.sim_table.SIM_UNITS`.
"""

from __future__ import annotations

__all__ = [
    "HARMONY_UNITS",
    "LIMITS_UNITS",
    "OASIS_UNITS",
    "PACE_UNITS",
    "PLACEMENT_UNITS",
    "PROFILE_UNITS",
    "TENSORLIGHTS_UNITS",
    "TRACE_UNITS",
]

_UTILITY = "utility (sum over jobs)"
_PRICE = "utility per unit of resource per slot"

#: OASiS (``oasis offline/online/check/ratio``, ``validate``): slots, utility, ratios, counts.
OASIS_UNITS: dict[str, str] = {
    **dict.fromkeys(("horizon", "completion"), "slots"),
    **dict.fromkeys(("jobs", "n_jobs", "admitted", "n_admitted", "instances", "seed"), "count"),
    **dict.fromkeys(("validated_utility", "lower_bound"), _UTILITY),
    # the wall-clock time of each algorithm of a comparison, keyed by its name
    "seconds.*": "s (wall clock)",
    **dict.fromkeys(("worker_servers", "ps_servers"), "servers"),
    **dict.fromkeys(("workers", "ps"), "tasks (per server per slot)"),
    "job_utility": "utility (per job)",
    "utility": "utility",
    "payoffs": "utility (per job)",
    "job_payoffs": "utility (per job)",
    **dict.fromkeys(
        (
            "objective",
            "bound",
            "total_utility",
            "online",
            "offline",
            "alg",
            "opt",
            "optimum",
            "incumbent",
            "upper_bound",
            "upper",
            "dual_bound",
            "initial_dual",
            "online_dual",
            "price_term",
            "certificate.value",
            "offline_detail.bound",
        ),
        _UTILITY,
    ),
    **dict.fromkeys(
        (
            "ratio",
            "ratio_upper",
            "certified_ratio",
            "proven_bound",
            "alpha",
            "kappa",
            "ratio_min",
            "ratio_max",
            "ratio_mean",
            "ratio_median",
            "multiplier",
            "scale",
        ),
        "ratio",
    ),
    "gap": "fraction",
    **dict.fromkeys(
        (
            "opt_proven",
            "opt_le_dual",
            "ratio_infinite",
            "theorem_applies",
            "within_proven_bound",
            "in_paper_band",
            "below_paper_band",
            "above_paper_band",
        ),
        "instances",
    ),
    **dict.fromkeys(("evaluations", "fallbacks"), "count"),
    **dict.fromkeys(("upper_worker.*", "upper_ps.*", "lower_worker", "lower_ps"), _PRICE),
    **dict.fromkeys(("eta_worker", "eta_ps"), "ratio"),
    **dict.fromkeys(("build_seconds", "solve_seconds", "seconds"), "s (wall clock)"),
    "decision_seconds_mean": "s (wall clock)",
    **dict.fromkeys(("size.*",), "count"),
}

#: PACE (``pace run/sweep/solve``): the code computes every time in milliseconds.
PACE_UNITS: dict[str, str] = {
    **dict.fromkeys(
        (
            "iteration_time",
            "iteration_time.*",
            "lower_bound",
            "compute_ms",
            "forward_ms",
            "backward_ms",
            "update_ms",
            "comm_busy_ms",
            "cycle_ms",
            "alpha_ms",
            "completion_ms",
            "release_ms",
            "tail_ms",
            "work_ms",
            "start_ms",
            "end_ms",
            "fusion.*",
            "objective",
            "bound",
            "rows.fifo",
            "rows.horovod",
            "rows.p3",
            "rows.tictac",
            "rows.bytescheduler",
            "rows.pace",
            "rows.lower_bound",
        ),
        "ms",
    ),
    **dict.fromkeys(("update_ms_per_mb", "ms_per_mb"), "ms/MB"),
    "beta_ms_per_byte": "ms/byte",
    **dict.fromkeys(("latency_us", "overhead_us"), "us"),
    "bandwidth_gbps": "Gbit/s",
    **dict.fromkeys(
        ("fusion_mb", "partition_mb", "max_group_mb", "threshold_mb", "slice_mb"), "MB"
    ),
    "mb_bytes": "bytes per MB",
    **dict.fromkeys(("total_bytes", "bytes"), "bytes"),
    **dict.fromkeys(("workers",), "workers"),
    **dict.fromkeys(
        ("layers", "tensors", "calls", "tuning_points", "preemptions", "group", "computed"),
        "count",
    ),
    "credit": "count (calls in flight)",
    "max_group_tensors": "tensors",
    **dict.fromkeys(
        ("speedup_of_pace.*", "speedup_vs_horovod", "speedup_vs_best_baseline"), "ratio"
    ),
    **dict.fromkeys(("gap_to_lower_bound", "gap", "overlap"), "fraction"),
    "row_version": "version number",
    **dict.fromkeys(("build_seconds", "solve_seconds"), "s (wall clock)"),
}

#: DNN profiles (``profile``): milliseconds, bytes, parameters and FLOPs.
PROFILE_UNITS: dict[str, str] = {
    **dict.fromkeys(("forward_ms", "backward_ms", "update_ms"), "ms"),
    **dict.fromkeys(("total_bytes", "bytes"), "bytes"),
    "dtype_bytes": "bytes per parameter",
    **dict.fromkeys(("total_params", "params"), "parameters"),
    "flops": "FLOPs (forward, one minibatch)",
    "throughput_tflops": "TFLOPS",
    "batch_size": "samples per worker",
    **dict.fromkeys(("n_layers", "n_tensors"), "count"),
    "layer": "index",
}

#: The placement objectives' units: servers used, seconds, Gbit, weighted costs.
PLACEMENT_OBJECTIVE_UNITS: dict[str, str] = {
    "servers": "servers",
    "traffic": "Gbit per iteration (crossing servers)",
    "max-load": "s per iteration (largest link load / bandwidth)",
    "clwp": "interference cost (weighted sum of the instance's coefficients)",
    "interference": "s (weighted sum over jobs of iteration time)",
}

#: Placement (``placement solve/compare/heuristic``).
PLACEMENT_UNITS: dict[str, str] = {
    **{f"optimum.{name}": unit for name, unit in PLACEMENT_OBJECTIVE_UNITS.items()},
    **{f"{name}.value": unit for name, unit in PLACEMENT_OBJECTIVE_UNITS.items()},
    **dict.fromkeys(("gap", "*.gap"), "fraction"),
    **dict.fromkeys(("build_seconds", "solve_seconds", "solve_seconds.*"), "s (wall clock)"),
    **dict.fromkeys(("constraints", "variables", "integer_variables"), "count"),
}


def placement_units(objective: str | None) -> dict[str, str]:
    """:data:`PLACEMENT_UNITS` with ``objective`` and ``bound`` in ``objective``'s unit."""
    table = dict(PLACEMENT_UNITS)
    if objective in PLACEMENT_OBJECTIVE_UNITS:
        table |= dict.fromkeys(("objective", "bound"), PLACEMENT_OBJECTIVE_UNITS[objective])
    return table


#: TensorLights (``tensorlights``): the simulator counts time in seconds.
TENSORLIGHTS_UNITS: dict[str, str] = {
    **dict.fromkeys(
        (
            "makespan",
            "mean_jct",
            "weighted_jct",
            "jct",
            "completion",
            "alone_iteration_time",
            "iteration_time_std",
            "mean_comm_time",
            "mean_iteration_time",
            "straggler_spread_max",
            "straggler_spread_mean",
            "mean_straggler_spread",
            "worker_wait_mean",
            "rotation_period",
            "objective",
            "bound",
        ),
        "s",
    ),
    **dict.fromkeys(("nic_busy_fraction", "nic_utilization", "jitter"), "fraction"),
    "slowdown": "ratio",
    **dict.fromkeys(("events", "hosts", "jobs"), "count"),
    "order": "job index",
    **dict.fromkeys(("best_order", "rule_order"), "job index"),
    "gap": "fraction",
    **dict.fromkeys(("build_seconds", "solve_seconds"), "s (wall clock)"),
}


#: Traces (``trace info``, ``trace convert``): the per-column summaries in each column's unit.
TRACE_UNITS: dict[str, str] = {
    "jobs": "jobs",
    **dict.fromkeys(("first_arrival", "last_arrival", "span", "time_origin"), "s"),
    "gpu_hours": "GPU-h",
    **dict.fromkeys(("known", "empty", "distinct"), "rows"),
    **dict.fromkeys(("arrival.*", "duration.*", "deadline.*"), "s"),
    "num_gpus.*": "GPUs",
    "total_steps.*": "steps",
    "batch_size.*": "samples",
    "weight.*": "weight (relative)",
    # a default applied to a column the file lacks: in that column's own unit (above)
    "defaults.*": "the column's unit (columns.<name>)",
    "skipped.*": "rows",
    # a Gavel trace's line layout: 7, 10 or 12 tab-separated fields
    "fields": "fields per line",
}


#: The table of each family whose instances ``optsched validate`` reads.
_FAMILY_UNITS: dict[str, dict[str, str]] = {
    "oasis": OASIS_UNITS,
    "pace": PACE_UNITS,
    "placement": PLACEMENT_UNITS,
    "tensorlights": TENSORLIGHTS_UNITS,
}


def family_units(name: str) -> dict[str, str]:
    """The unit table of family ``name`` (empty for a family without one)."""
    return _FAMILY_UNITS.get(name, {})


#: Harmony (``harmony place/compare/train``): seconds, CPU time, costs relative to a lone job.
HARMONY_UNITS: dict[str, str] = {
    **dict.fromkeys(("avg_jct_s", "makespan_s", "jct_median_s", "jct_p95_s", "jct_s"), "s"),
    "cpu_s": "s (CPU)",
    "mean_decision_cpu_ms": "ms (CPU)",
    "mean_true_cost": "true cost (1 = the job alone on one free server)",
    "mean_pairwise_objective": "cost (the pairwise model's objective)",
    **dict.fromkeys(("jct_ratio", "ratios", "mean", "median", "max"), "ratio"),
    "fraction_optimal": "fraction",
    **dict.fromkeys(("jobs", "decisions", "iteration", "trivial.*"), "count"),
    **dict.fromkeys(("workers", "ps"), "tasks"),
    "servers": "server index",
    "job": "job index",
    "type": "job type index",
    "loss": "loss (training objective)",
    "reward": "reward (mean episode return)",
}


#: ``optsched limits``: each size budget in what it counts.
LIMITS_UNITS: dict[str, str] = {
    "max_*_bytes": "bytes",
    **dict.fromkeys(("max_trace_rows", "max_convert_rows"), "rows"),
    "max_json_depth": "nesting levels",
    "max_int_digits": "digits",
    "max_model_variables": "variables (or constraint rows) per model",
    "max_array_cells": "array cells",
    "max_events": "events",
    "max_exact_job_rounds": "job-rounds (jobs x rounds)",
    "max_schedule_epochs": "epochs",
    "max_checkpoint_weights": "weights",
    "max_harmony_servers": "servers",
    "max_harmony_types": "job types",
    "max_harmony_job_tasks": "tasks per job",
}
