"""Run Sia's simulator (unmodified) with Gavel under another of Gavel's policies, by name.

Run with Sia's Python (its simulator needs numpy 1.23, cvxpy with ECOS and pandas < 2), never
imported by optsched::

    python _sia_gavel_policy.py SIA_DIR POLICY WORKLOAD_DIR OUT_DIR [--interval 360] [--record F]

``SIA_DIR`` is the artifact's ``sia-simulator/`` folder. Sia's ``multi_simulator.py`` builds
``GavelPolicy(interval, policy=simulator_config.gavel_default_policy)`` and has no flag for the
name, so this sets ``simulator_config.gavel_default_policy = POLICY`` in this process (no file
edited) and runs ``multi_simulator.py`` as its own ``__main__`` with the arguments of the
artifact's Gavel run: ``WORKLOAD_DIR/ --policy=gavel --interval=360 --output=OUT_DIR``
(``summary.json`` and one ``<workload>.log`` per CSV in ``OUT_DIR``).

``--record F`` also writes, one JSON line per round, what Gavel's policy object was asked and
answered: its ``get_allocation`` is wrapped on the class in this process, and the wrapper
stores the arguments (throughputs, scale factors, priority weights where the policy takes them,
cluster spec) and the allocation returned, so a restatement can be checked round by round
against the same inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys


def _record(policy_name: str, path: str) -> None:
    """Wrap the policy class's ``get_allocation`` to append each call to ``path`` (module notes)."""
    import utils_gavel

    cls = type(utils_gavel.get_policy(policy_name, solver="ECOS", seed=None))
    inner = cls.get_allocation
    out = open(path, "w")  # open for the whole run, closed at exit

    def get_allocation(self, throughputs, scale_factors, *rest):  # type: ignore[no-untyped-def]
        alloc = inner(self, throughputs, scale_factors, *rest)
        rec = {
            "throughputs": throughputs,
            "scale_factors": scale_factors,
            "rest": [r for r in rest],
            "allocation": {j: {k: float(v) for k, v in row.items()} for j, row in alloc.items()}
            if alloc
            else {},
        }
        out.write(json.dumps(rec, default=float) + "\n")
        out.flush()
        return alloc

    cls.get_allocation = get_allocation


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sia_dir")
    ap.add_argument("policy", help="a Gavel policy name of Sia's utils_gavel.get_policy")
    ap.add_argument("workload_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--interval", type=int, default=360)
    ap.add_argument("--record", default="", help="JSON-lines file of the policy's calls")
    args = ap.parse_args()
    workload = os.path.abspath(args.workload_dir).rstrip("/") + "/"
    out_dir = os.path.abspath(args.out_dir)
    record = os.path.abspath(args.record) if args.record else ""
    os.makedirs(out_dir, exist_ok=True)
    sys.path.insert(0, args.sia_dir)
    os.chdir(args.sia_dir)
    import simulator_config

    simulator_config.gavel_default_policy = args.policy
    if record:
        _record(args.policy, record)
    sys.argv = [
        "multi_simulator.py",
        workload,
        "--policy=gavel",
        f"--interval={args.interval}",
        f"--output={out_dir}",
    ]
    runpy.run_path("multi_simulator.py", run_name="__main__")


if __name__ == "__main__":
    main()
