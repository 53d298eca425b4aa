"""Place arriving PS jobs with the shipped Harmony policy and judge it on the true cost.

The shipped policy was trained offline on a learned model of the cluster's interference; here it
places 20 jobs online (NumPy inference), every decision checked by the placement validator.
Then, on the same arrivals, the strong baselines and the exact optimum of the true cost solved
at every arrival; and, per decision, each policy's true cost against the exact true optimum.

Last, the same rules as simulator policies on the arrivals as a colocation world.

Run: ``python examples/harmony_place.py`` (no training and no JAX needed).
"""

from __future__ import annotations

from optsched.harmony import generate_arrivals, load_model
from optsched.harmony.agent import world_from_meta
from optsched.harmony.compare import compare_policies, decision_gaps

params, meta = load_model()  # every setting bounded, digest checked before use
world = world_from_meta(meta)
arrivals = generate_arrivals(world, 20, seed=3)
# A policy trained with predicted=True also reads, per server, the added slowdown its own
# reward network predicts for the job there (it carries that network: parameters r/*).
print(
    f"shipped policy {meta['digest'][:16]} ({meta['format']}): predicted-slowdown feature "
    f"{'r/w1' in params}, {sum(v.size for v in params.values()):,} weights"
)

names = ["harmony", "interference-greedy", "consolidate-first", "true-exact"]
out = compare_policies(world, arrivals, names, params=params)
for rec in out["policies"]:
    print(
        f"{rec['policy']:>19}: average JCT {rec['avg_jct_s']:8.1f} s, makespan "
        f"{rec['makespan_s']:8.1f} s, {rec['mean_decision_cpu_ms']:6.2f} ms CPU per decision, "
        f"validated: {rec['valid']}"
    )

gaps = decision_gaps(world, arrivals, params, policies=names)
print(f"per decision vs the true optimum ({gaps['decisions']} decisions, {gaps['trivial']}):")
for name, rec in gaps["policies"].items():
    a, n = rec["all"], rec["nontrivial"]
    tail = "" if n["mean"] is None else f"; non-trivial {n['mean']:.3f}"
    print(
        f"{name:>19}: mean ratio {a['mean']:.3f}, {100 * a['fraction_optimal']:.0f}% optimal{tail}"
    )

# The same rules as policies of the simulator: the arrivals as a world in its colocation mode,
# each run event-driven and checked by the simulator's validator, which re-derives every rate.
from optsched.harmony.world import sim_world  # noqa: E402
from optsched.sim import run_metrics, simulate, validate  # noqa: E402

colocated = sim_world(world, arrivals)
for name in ("harmony", "first-fit", "tetris"):
    record = simulate(colocated, name, round_seconds=None)
    m = run_metrics(record)
    print(
        f"sim {name:>10}: mean JCT {m['jct_mean']:8.1f} s, p95 {m['jct_p95']:8.1f} s, "
        f"valid: {validate(colocated, record).ok}"
    )
