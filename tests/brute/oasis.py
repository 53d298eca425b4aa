"""An exhaustive exact solver for tiny OASiS instances, independent of the ILP.

It enumerates every joint per-slot deployment of every job (all worker counts on every worker
server and all PS counts on every PS server that satisfy the per-job rules) and carries, slot by
slot, the best total utility for each vector of cumulative worker-slots. Merging states with
equal cumulative work is exact: only the cumulative work (and whether it reached the job's
requirement, at which slot) affects what can still happen. A job that has met its requirement
gets no more workers, which never lowers utility because utilities are non-increasing.
"""

from __future__ import annotations

import itertools
import math

from optsched.online.oasis.instance import OasisInstance

TOL = 1e-9


def _vectors(bounds: list[int], total_max: int):
    for vec in itertools.product(*(range(b + 1) for b in bounds)):
        if sum(vec) <= total_max:
            yield vec


def _job_configs(inst: OasisInstance, i: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    job = inst.jobs[i]
    H, K = len(inst.worker_servers), len(inst.ps_servers)
    wb = [inst.max_workers(i, h) for h in range(H)]
    pb = [inst.max_ps(i, k) for k in range(K)]
    out = []
    for y in _vectors(wb, job.chunks):
        n = sum(y)
        for z in _vectors(pb, n):
            m = sum(z)
            if job.b * n <= job.B * m + TOL:
                out.append((y, z))
    return out


def exhaustive_optimum(inst: OasisInstance) -> float:
    """The optimal total utility of a tiny instance, by exhaustive enumeration."""
    T = inst.horizon
    n_jobs = inst.n_jobs
    need = [float(w) for w in inst.total_work]
    configs = [_job_configs(inst, i) for i in range(n_jobs)]
    zero = [(tuple(0 for _ in inst.worker_servers), tuple(0 for _ in inst.ps_servers))]
    done = [math.inf] * n_jobs
    states: dict[tuple[float, ...], float] = {tuple(0.0 for _ in range(n_jobs)): 0.0}
    wcap, pcap = inst.worker_capacity, inst.ps_capacity
    wd, pd = inst.worker_demand, inst.ps_demand
    R = len(inst.resources)
    for t in range(T):
        new: dict[tuple[float, ...], float] = {}
        for state, value in states.items():
            options = []
            for i in range(n_jobs):
                finished = state[i] == done[i]
                if finished or t < inst.jobs[i].arrival:
                    options.append(zero)
                else:
                    options.append(configs[i])
            for combo in itertools.product(*options):
                ok = True
                for h in range(len(inst.worker_servers)):
                    for r in range(R):
                        used = sum(wd[i, r] * combo[i][0][h] for i in range(n_jobs))
                        if used > wcap[h, r] + 1e-9:
                            ok = False
                            break
                    if not ok:
                        break
                if ok:
                    for k in range(len(inst.ps_servers)):
                        for r in range(R):
                            used = sum(pd[i, r] * combo[i][1][k] for i in range(n_jobs))
                            if used > pcap[k, r] + 1e-9:
                                ok = False
                                break
                        if not ok:
                            break
                if not ok:
                    continue
                gained = 0.0
                nxt = list(state)
                for i in range(n_jobs):
                    if state[i] == done[i]:
                        continue
                    n = sum(combo[i][0])
                    if n == 0:
                        continue
                    total = state[i] + n
                    if total >= need[i] - TOL * max(1.0, need[i]):
                        nxt[i] = done[i]
                        gained += float(inst.utility_tables[i, t])
                    else:
                        nxt[i] = total
                key = tuple(nxt)
                if new.get(key, -1.0) < value + gained:
                    new[key] = value + gained
        states = new
    return max(states.values())
