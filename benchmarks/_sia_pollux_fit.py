"""Replay Sia's heterogeneity-unaware Pollux run in Sia's own code and record every job's fits.

Run with Sia's Python (its simulator needs numpy 1.23, autograd and pandas < 2), never imported
by optsched::

    python _sia_pollux_fit.py SIA_DIR WORKLOAD_CSV RUN_LOG OUT_JSON [--until SECONDS] [--jobs a,b]

``SIA_DIR`` is the artifact's ``sia-simulator/`` folder, unmodified; ``RUN_LOG`` the per-round
log of its run ``multi_simulator_unaware.py --policy=pollux --interval=60 --policy_p_val=-1``
(``--output``). The cluster is built as ``multi_simulator_unaware.py`` builds it
(:class:`ClusterUnaware` with :class:`PolluxPolicyUnaware`) and stepped round by round; what is
replaced, from outside and on the instances only, is the search: the policy's ``optimize``
answers each round with the logged allocation of that time, each GPU named by the first virtual
node of its physical node, so that Sia's own repair (``fix_allocations_by_dropping``), mapping
and ``migrate``/``reallocate`` run on it unchanged. ``get_job_infos`` hands the policy the job
names only (the speedup functions it would build change no job's state, and no search reads
them). Every job's ``update_params`` is wrapped (a class attribute set here) to record, at each
measurement that adds a profile point, the job's clock, its GPU type, the point, the whole
merged profile in its insertion order, and the fitted parameters ``PerfParams`` that Sia's
``fit_perf_params`` (scipy L-BFGS-B with autograd's gradient) returns.

Output JSON: ``{"jcts": {job: JCT}, "fits": {job: [{time, cluster, key, profile:
[[nodes, replicas, bsz, step, sync], ...], params: [7], grad: [sqr, var]}, ...]},
"rounds": int}``. A faithful replay gives the cached run's JCTs exactly (the jobs' progress does
not depend on the search beyond the allocations it made).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys


def _cluster(sia_dir: str, workload_csv: str):  # type: ignore[no-untyped-def]
    sys.path.insert(0, sia_dir)
    os.chdir(sia_dir)
    import pandas
    import simulator_config as sim_config
    from cluster_unaware import ClusterUnaware
    from pollux_unaware import PolluxPolicyUnaware

    # multi_simulator_unaware.py's max_num_replicas
    max_num_replicas = 1000000
    for c in sim_config.cluster_nnodes:
        n_sim = sim_config.cluster_ngpus_per_node[c] * sim_config.cluster_nnodes[c]
        n_real = sim_config.cluster_ngpus_per_node[c] * sim_config.cluster_max_physical_nnodes[c]
        max_num_replicas = min(n_sim, n_real, max_num_replicas)
    policy = PolluxPolicyUnaware(-1.0)
    workload = pandas.read_csv(workload_csv)
    cluster = ClusterUnaware(
        workload,
        policy,
        sim_config.cluster_nnodes,
        sim_config.cluster_ngpus_per_node,
        max_num_replicas=max_num_replicas,
        max_physical_nodes=sim_config.cluster_max_physical_nnodes,
    )
    return cluster, policy


def _read_log(path: str) -> dict[int, dict[str, tuple[str, list[int]]]]:
    out: dict[int, dict[str, tuple[str, list[int]]]] = {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            allocs = {}
            for j in rec["submitted_jobs"]:
                a = j["allocation"]
                if a and a[0] is not None and a[1]:
                    allocs[j["name"]] = (a[0], list(a[1]))
            out[int(rec["timestamp"])] = allocs
    return out


def _logged_hooks(cluster, log):  # type: ignore[no-untyped-def]
    """The search answered from the log, and the job infos reduced to the active jobs' names.

    ``optimize`` answers each round with the logged allocation of that time, each GPU named by
    the first virtual node of its physical node (Sia's own repair and mapping then run on it);
    ``job_infos`` hands the policy the names of the jobs submitted and not completed.
    """
    first_vnode: dict[tuple[str, int], int] = {}
    for v, key in sorted(cluster.vnode_cluster_node_id_map.items()):
        first_vnode.setdefault(key, v)

    def optimize(job_infos, node_infos, prev_allocs, node_template):  # type: ignore[no-untyped-def]
        logged = log.get(int(cluster.current_time), {})
        allocs = {name: [first_vnode[(c, n)] for n in nodes]
                  for name, (c, nodes) in logged.items() if name in job_infos}  # fmt: skip
        return allocs, len(node_infos)

    def job_infos():  # type: ignore[no-untyped-def]
        now = cluster.current_time
        return {j.name: None for j in cluster.jobs
                if now >= j.submission_time and j.completion_time is None}  # fmt: skip

    return optimize, job_infos


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sia_dir")
    ap.add_argument("workload")
    ap.add_argument("log")
    ap.add_argument("out")
    ap.add_argument("--until", type=float, default=float("inf"))
    ap.add_argument("--jobs", default="", help="comma-separated job names to record (all if empty)")
    args = ap.parse_args()
    workload = os.path.abspath(args.workload)
    log = _read_log(os.path.abspath(args.log))
    out_path = os.path.abspath(args.out)
    cluster, policy = _cluster(args.sia_dir, workload)
    import job as job_module

    policy.optimize, cluster.get_job_infos = _logged_hooks(cluster, log)
    wanted = set(filter(None, args.jobs.split(",")))
    fits: dict[str, list[dict]] = {}
    original = job_module.Job.update_params

    def update_params(self, num_nodes, num_replicas, local_bsz, step_time, sync_time,
                      grad_sqr, grad_var):  # type: ignore[no-untyped-def]  # fmt: skip
        before = len(self.profiles)
        original(self, num_nodes, num_replicas, local_bsz, step_time, sync_time, grad_sqr,
                 grad_var)  # fmt: skip
        if len(self.profiles) == before or (wanted and self.name not in wanted):
            return
        fits.setdefault(self.name, []).append({
            "time": float(self.current_time),
            "cluster": self.current_cluster,
            "key": [int(num_nodes), int(num_replicas), int(local_bsz)],
            "profile": [[int(k[0]), int(k[1]), int(k[2]), float(v[0]), float(v[1])]
                        for k, v in self.profiles.items()],
            "params": [float(x) for x in self.perf_params],
            "grad": [float(grad_sqr), float(grad_var)],
        })  # fmt: skip

    job_module.Job.update_params = update_params
    rounds = 0
    with contextlib.redirect_stdout(io.StringIO()) as sink:
        while not cluster.all_complete() and cluster.current_time < args.until:
            cluster.step(60)
            rounds += 1
            sink.seek(0)
            sink.truncate()
    jcts = {j.name: j.completion_time - j.submission_time
            for j in cluster.jobs if j.completion_time is not None}  # fmt: skip
    with open(out_path, "w") as f:
        json.dump({"jcts": jcts, "fits": fits, "rounds": rounds}, f)
    print(f"{rounds} rounds, {len(jcts)} jobs done, fits of {len(fits)} jobs -> {out_path}")


if __name__ == "__main__":
    main()
