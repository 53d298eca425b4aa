"""The exact offline OASiS optimum, checked, bounded, time-limited and saved.

1. Generate a seeded instance from the OASiS paper's distributions.
2. Solve its offline ILP to proven optimality with HiGHS and check the schedule with the
   independent validator.
3. Compare the optimum with the LP-relaxation bound.
4. Show how a time limit surfaces: a NotOptimalError carrying the result, or, with
   accept_feasible=True, an incumbent whose status says it is only feasible.
5. Save the instance and the schedule, load them back and validate again.

Run: ``python examples/oasis_offline.py`` (about 10-20 s on 2 cores).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from optsched.errors import NotOptimalError
from optsched.online.oasis import OasisInstance, Schedule, generate_instance, solve, validate

#: Relative tolerance when comparing the validator's utility with the solver's objective.
RTOL = 1e-6


def main() -> None:
    # 1. A small instance: 8 jobs, 2 worker servers, 2 PS servers, 10 one-hour slots.
    inst = generate_instance(8, worker_servers=2, ps_servers=2, horizon=10, seed=1)
    print(
        f"instance: {inst.n_jobs} jobs, H = {len(inst.worker_servers)}, "
        f"K = {len(inst.ps_servers)}, T = {inst.horizon}"
    )

    # 2. The exact optimum. solve raises NotOptimalError unless optimality is proven.
    exact = solve(inst)
    assert exact.solution is not None and exact.objective is not None
    report = validate(inst, exact.solution)
    report.raise_if_invalid()
    assert abs(report.objective - exact.objective) <= RTOL * max(1.0, exact.objective)
    # Notebook-friendly forms: a long-format DataFrame (job, role, server, slot, count).
    print(exact.solution.to_frame().head())
    print(
        f"\nexact optimum: status {exact.status.value}, total utility {exact.objective:.3f} "
        f"(validator recomputes {report.objective:.3f}); model built in "
        f"{exact.build_seconds:.2f} s, solved in {exact.solve_seconds:.2f} s"
    )
    print(
        f"\n{'job':<6}{'arrival':>8}{'admitted':>10}{'completion':>12}{'utility':>10}"
        f"{'work':>8}{'given':>7}"
    )
    for i, js in enumerate(exact.solution.jobs):
        given = sum(n for _, _, n in js.workers)
        print(
            f"{js.job:<6}{inst.jobs[i].arrival:>8}{'yes' if js.admitted else 'no':>10}"
            f"{js.completion if js.completion is not None else '-':>12}{js.utility:>10.2f}"
            f"{inst.total_work[i]:>8.2f}{given:>7}"
        )
    print("(work: worker-slots the job needs; given: worker-slots the schedule gives it)")

    # 3. The LP relaxation is an upper bound on the optimum (no schedule comes with it).
    relaxed = solve(inst, relax=True)
    assert relaxed.bound is not None
    assert relaxed.bound >= exact.objective - RTOL * max(1.0, exact.objective)
    print(
        f"\nLP-relaxation bound {relaxed.bound:.3f}: {relaxed.bound / exact.objective:.3f} x "
        "the optimum"
    )

    # 4. A larger instance under a 2-second time limit: optimality is not proven in time.
    big = generate_instance(20, worker_servers=4, ps_servers=4, horizon=25, seed=0)
    print(f"\nlarger instance: {big.n_jobs} jobs, H = K = 4, T = {big.horizon}, time limit 2 s")
    try:
        solve(big, time_limit=2)
    except NotOptimalError as err:
        r = err.result
        print(
            f"  without accept_feasible: NotOptimalError, status {r.status.value}, "
            f"termination {r.termination.value}, incumbent {r.objective}, bound {r.bound}"
        )
    else:
        print("  solved to optimality within the limit")
    try:
        res = solve(big, time_limit=2, accept_feasible=True)
    except NotOptimalError as err:  # the limit struck before any feasible point was found
        print(f"  with accept_feasible: still raised, status {err.result.status.value}")
    else:
        assert res.solution is not None and res.objective is not None
        validate(big, res.solution).raise_if_invalid()
        # The objective is the schedule's utility recomputed by the validator (for an incumbent
        # it may exceed the ILP's own objective value, never fall below it).
        print(
            f"  with accept_feasible=True: status {res.status.value}, objective "
            f"{res.objective:.3f}, schedule utility {res.solution.total_utility:.3f}, proven "
            # a slow machine may stop before the solver proved any bound: said, not assumed
            + ("bound: none yet" if res.bound is None else f"bound {res.bound:.3f}")
            + "; the schedule passes the validator"
        )
        print("  (the bound says how far the incumbent may still be from the optimum)")

    # 5. Files: the instance (JSON; .toml also works) and the schedule, validated on reload.
    with tempfile.TemporaryDirectory() as tmp:
        inst_path = Path(tmp) / "instance.json"
        sched_path = Path(tmp) / "schedule.json"
        inst.save(inst_path)
        exact.solution.save(sched_path)
        again = validate(OasisInstance.load(inst_path), Schedule.load(sched_path))
        assert again.ok
        print(
            f"\nsaved {inst_path.name} ({inst_path.stat().st_size} bytes) and "
            f"{sched_path.name} ({sched_path.stat().st_size} bytes); reloaded schedule valid, "
            f"utility {again.objective:.3f}"
        )
        print("  check them from the shell with: optsched validate instance.json schedule.json")


if __name__ == "__main__":
    main()
