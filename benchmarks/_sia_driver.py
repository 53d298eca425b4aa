"""Run Sia's own simulator and policy (unmodified) and record the integer programs it solves.

Run by ``bench_sia_ilp.py`` in a child process with Sia's Python (its simulator needs cvxpy with
CBC, pymoo 0.4 and numpy 1.23), never imported by optsched::

    python _sia_driver.py SIA_DIR WORKLOAD_CSV OUT_JSON --rounds 30,60,90 [--interval 60]

``SIA_DIR`` is the artifact's ``sia-simulator/`` folder. The policy is set up as its
``multi_simulator.py`` sets up ``--policy=sia`` with ``run_experiment.sh``'s arguments
(``p=-0.5``, ``lambda_a=0.01``, ``lambda_n=1.1``, ``--project_throughputs``,
``--share_max_replicas``) on the cluster of its ``simulator_config.py``, and the cluster is
stepped round by round. The policy object's private ILP method is wrapped (an instance
attribute, Sia's files untouched): at the rounds asked for, the wrapper copies the ILP's inputs
(normalised goodput matrix over Sia's configurations before the re-allocation scaling, the
re-allocation factors, the previous configuration of each job, the jobs that must keep theirs,
GPUs per type) before Sia's code rescales them in place, and records Sia's optimal value and
allocation. After the run each recorded input is solved once more by Sia's ILP code on a copy
of the policy with the recorded previous allocations, from double-precision copies of the
inputs (``replay``): the same numbers optsched reads, where the simulator's own solve powers
and rounds single-precision goodputs.

Output JSON: ``{"cluster": {...}, "rounds": [{round, time, jobs, configs, goodput, realloc,
previous, pinned, sia_value, sia_status, sia_choice, replay_value, replay_status,
replay_choice}, ...]}``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import sys
import time


def _policy(sia_dir: str) -> tuple[object, object, dict]:
    """Sia's policy as ``multi_simulator.py --policy=sia`` builds it (run_experiment.sh's args)."""
    sys.path.insert(0, sia_dir)
    os.chdir(sia_dir)
    import simulator_config as sim_config
    from sia import SiaPolicy

    nnodes = sim_config.cluster_nnodes
    per_node = {k: sim_config.cluster_ngpus_per_node[k] for k in nnodes}
    policy = SiaPolicy(
        p_fairness=-0.5,
        restart_penalty=30,
        lambda_a=0.01,
        lambda_n=1.1,
        project_throughputs=True,
        share_max_replicas=True,
        enable_bsz_tuning=True,
    )
    policy.populate_valid_configs(nnodes, per_node, sim_config.cluster_max_physical_nnodes)
    return policy, sim_config, per_node


def _setup(sia_dir: str, workload_csv: str) -> tuple[object, object, object]:
    policy, sim_config, per_node = _policy(sia_dir)
    import pandas
    from cluster import Cluster

    workload = pandas.read_csv(workload_csv)
    nnodes = sim_config.cluster_nnodes
    cluster = Cluster(
        workload,
        policy,
        nnodes,
        per_node,
        max_physical_nodes=sim_config.cluster_max_physical_nnodes,
    )
    for job in cluster.jobs:
        if job.category == "rigid":
            job.seed_profiles_rigid(per_node)
    return policy, cluster, sim_config


def _describe(policy, sim_config) -> dict:
    """The cluster and the ILP's parameters, as the output's ``cluster`` and ``params``."""
    configs = [policy.idx_to_config_map[i] for i in range(len(policy.idx_to_config_map))]
    return {
        "cluster": {
            "order": list(policy.cluster_ordering),
            "gpus": {k: int(v) for k, v in policy.cluster_total_gpus.items()},
            "gpus_per_node": {k: int(v) for k, v in policy.cluster_ngpus_per_node.items()},
            "configs": [[c[0], int(c[1]), int(c[2])] for c in configs],
        },
        "params": {
            "p": policy.p_fairness,
            "lambda_n": policy.lambda_n,
            "lambda_a": policy.lambda_a,
            "clip": float(sim_config.sia_goodput_clip_val),
            "decimals": 2,
            "solver": "CBC via cvxpy (sia.py's __solve_mip_rescaled)",
            "allowable_gap_percent": sim_config.sia_solver_thresh * 100,
        },
    }


def _replay(policy, rec: dict, params: dict, free_gpus, weights, pinned, previous) -> None:
    """Solve one round with Sia's own ILP method on a copy of ``policy``; record the outcome."""
    import numpy as np

    replay = copy.deepcopy(policy)
    replay.__dict__.pop("_SiaPolicy__solve_mip_rescaled", None)  # Sia's own method, unwrapped
    replay.prev_allocs_v2 = copy.deepcopy(previous)
    replay.objective_values = []
    params = copy.deepcopy(params)
    names, mat, realloc = params["adaptive"]
    params["adaptive"] = (names, np.asarray(mat, dtype=np.float64), list(realloc))
    t0 = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        job_allocs, _ = replay._SiaPolicy__solve_mip_rescaled(params, free_gpus, weights, pinned)
    rec["replay_cpu_seconds"] = time.process_time() - t0
    rec["replay_value"] = float(replay.objective_values[-1])
    rec["replay_choice"] = _choice(job_allocs, list(names), policy.config_to_idx_map)


def given(sia_dir: str, in_path: str, out_path: str) -> None:
    """Solve the rounds of ``in_path`` (``{"rounds": [{jobs, goodput, realloc, previous, pinned,
    weights}]}`` over Sia's configurations of its default cluster) with Sia's ILP code."""
    import numpy as np

    with open(in_path) as f:
        rounds = json.load(f)["rounds"]
    policy, sim_config, _ = _policy(sia_dir)
    n_types = len(policy.cluster_ordering)
    for rec in rounds:
        names = list(rec["jobs"])
        params = {
            "rigid": ([], np.zeros((0, n_types)), np.zeros((0, 1), dtype=np.uint32), np.zeros(0)),
            "adaptive": (names, np.asarray(rec["goodput"], dtype=np.float64), rec["realloc"]),
        }
        previous = {
            "rigid": {},
            "adaptive": {n: p for n, p in zip(names, rec["previous"], strict=True)},
        }
        weights = np.asarray(rec["weights"], dtype=np.float32).reshape(1, -1)
        pinned = {"rigid": [], "adaptive": list(rec["pinned"])}
        _replay(policy, rec, params, policy.cluster_total_gpus, weights, pinned, previous)
    with open(out_path, "w") as f:
        json.dump({**_describe(policy, sim_config), "rounds": rounds}, f, indent=1)


def _choice(allocs: dict, names: list, config_to_idx: dict) -> list:
    out = []
    for name in names:
        got = allocs.get(name)
        if got is None:
            out.append(None)
        else:
            cname, (n_nodes, n_gpus) = got
            out.append(int(config_to_idx[(cname, int(n_nodes), int(n_gpus))]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sia_dir")
    parser.add_argument("workload")
    parser.add_argument("out")
    parser.add_argument("--rounds", default="30,60,90")
    parser.add_argument("--interval", type=int, default=60)
    parser.add_argument("--given", action="store_true", help="WORKLOAD is a JSON of rounds")
    args = parser.parse_args()
    if args.given:
        given(
            os.path.abspath(args.sia_dir), os.path.abspath(args.workload), os.path.abspath(args.out)
        )
        return
    wanted = sorted({int(r) for r in args.rounds.split(",")})
    workload = os.path.abspath(args.workload)
    out_path = os.path.abspath(args.out)
    policy, cluster, sim_config = _setup(os.path.abspath(args.sia_dir), workload)
    import numpy as np

    solve_ilp = policy._SiaPolicy__solve_mip_rescaled  # the method Sia's optimize_mip calls
    state = {"round": 0}
    recorded: list[dict] = []
    inputs: list[tuple] = []

    def wrapper(optim_params, free_gpus, job_weights, non_preemptible):
        keep = state["round"] in wanted
        if keep:
            saved = (
                copy.deepcopy(optim_params),
                copy.deepcopy(free_gpus),
                np.copy(job_weights),
                copy.deepcopy(non_preemptible),
                copy.deepcopy(policy.prev_allocs_v2),
            )
        job_allocs, cluster_allocs = solve_ilp(
            optim_params, free_gpus, job_weights, non_preemptible
        )
        if keep:
            inputs.append(saved)
            rigid_names = saved[0]["rigid"][0]
            names, mat, realloc = saved[0]["adaptive"]
            if rigid_names:
                raise SystemExit("rigid jobs in a recorded round: not handled by this driver")
            recorded.append(
                {
                    "round": state["round"],
                    "time": cluster.current_time,
                    "jobs": list(names),
                    "goodput": np.asarray(mat, dtype=np.float64).tolist(),
                    "goodput_dtype": str(np.asarray(mat).dtype),
                    "realloc": [float(r) for r in realloc],
                    "previous": [saved[4]["adaptive"].get(n) for n in names],
                    "pinned": sorted(saved[3]["adaptive"]),
                    "weights": np.asarray(saved[2], dtype=np.float64).ravel().tolist(),
                    "sia_value": float(policy.objective_values[-1]),
                    "sia_choice": _choice(job_allocs, names, policy.config_to_idx_map),
                }
            )
        return job_allocs, cluster_allocs

    policy._SiaPolicy__solve_mip_rescaled = wrapper
    started = time.process_time()
    sink = io.StringIO()
    while not cluster.all_complete() and state["round"] <= wanted[-1]:
        with contextlib.redirect_stdout(sink):
            cluster.step(args.interval)
        sink.seek(0)
        sink.truncate()
        state["round"] += 1
    sim_cpu = time.process_time() - started
    for rec, saved in zip(recorded, inputs, strict=True):
        _replay(policy, rec, saved[0], saved[1], saved[2], saved[3], saved[4])
    out = {
        **_describe(policy, sim_config),
        "workload": workload,
        "interval": args.interval,
        "simulated_rounds": state["round"],
        "sim_cpu_seconds": sim_cpu,
        "rounds": recorded,
    }
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
