"""Aonline on generated instances: the online schedule, the exact optimum and the bounds.

Runs in a few seconds:

1. generates small instances (a fast 4-GPU server, two slow 2-GPU servers, gangs of 1-2 GPUs);
2. runs Aonline (doubling intervals, OASiS's primal-dual packing) and prints its intervals;
3. checks the schedule with the independent validator;
4. solves the exact offline minimum of the total weighted completion time;
5. prints online vs exact, the packing ratio alpha and the 4 alpha figure, and the proven
   4-competitive reference run (the same reduction with an exact packing).
"""

from __future__ import annotations

from optsched.online.aonline import aonline, assumptions, generate_instance, solve, validate
from optsched.solvers import available_solvers
from optsched.tolerances import RATIO_TOL, leq


def main() -> None:
    inst = generate_instance(6, max_arrival=5, seed=0)
    sched = aonline(inst)
    report = validate(inst, sched)
    print(repr(inst))
    print(f"{'interval':>10} {'pending':>14} {'chosen':>10} {'weight':>7} {'alpha':>6}")
    for iv in sched.intervals:
        span = f"[{iv.start},{iv.start + iv.length})"
        alpha = "-" if iv.alpha is None else f"{iv.alpha:.2f}"
        print(
            f"{span:>10} {list(iv.pending)!s:>14} {list(iv.chosen)!s:>10} "
            f"{iv.weight:>7.1f} {alpha:>6}"
        )
    print(f"validator: {'ok' if report.ok else report.violations}")
    print(f"completions: {report.details['completion']}")
    if "highs" not in available_solvers(frontend="pyomo", mip=True):
        print("HiGHS is not installed: skipping the exact optimum")
        return
    print(
        f"{'seed':>4} {'online':>8} {'exact-pack':>10} {'optimum':>8} {'ratio':>6} "
        f"{'4 alpha':>8} {'small demands':>13}"
    )
    for seed in range(5):
        gangs = (1,) if seed % 2 else (1, 2)  # unit gangs meet the small-demand reading
        inst = generate_instance(5, max_arrival=4, gang_sizes=gangs, seed=seed)
        online = validate(inst, sched := aonline(inst)).objective
        ref = validate(inst, aonline(inst, packing="exact")).objective
        opt = solve(inst).objective
        assert online is not None and ref is not None and opt is not None
        assert leq(opt, online, RATIO_TOL) and leq(ref, 4 * opt, RATIO_TOL)  # proven: 4
        print(
            f"{seed:>4} {online:>8.1f} {ref:>10.1f} {opt:>8.1f} {online / opt:>6.2f} "
            f"{sched.bound_factor:>8.2f} {assumptions(inst)['small_demands']!s:>13}"
        )


if __name__ == "__main__":
    main()
