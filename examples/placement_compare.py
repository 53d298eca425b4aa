"""Place training jobs exactly, then see how far the usual heuristics are from the optimum.

1. A bin-packing-shaped instance of 100 tasks is solved to proven optimality (fewest servers).
2. A small training cluster (PS and ring-all-reduce jobs on two racks) is solved for every
   objective, and each heuristic is scored against the optimum: the gap table.

Run: python examples/placement_compare.py
"""

from __future__ import annotations

import math

from optsched.placement import bin_packing_instance, compare, generate_instance, solve


def main() -> None:
    packing = bin_packing_instance(100, seed=0)
    solution = solve(packing, "servers")
    trivial = math.ceil(packing.demand.sum() / packing.capacity[0, 0])
    print(
        f"bin packing, {len(packing.tasks)} tasks: {solution.objective:.0f} servers "
        f"({solution.status.value}, {solution.extra['formulation']}, "
        f"{solution.solve_seconds:.2f} s); trivial lower bound {trivial}"
    )

    cluster = generate_instance(6, gpus=4, max_workers=6, fill=0.9, racks=2, seed=3)
    print(f"\ncluster instance: {cluster.describe()}")
    result = compare(cluster, objectives=["servers", "traffic", "max-load", "interference"])
    header = f"{'heuristic':<22}" + "".join(f"{o:>22}" for o in result.objectives)
    print(header)
    optima = "".join(f"{result.optimum[o]:>22.4g}" for o in result.objectives)
    print(f"{'exact (optimum)':<22}{optima}")
    for name in result.heuristics:
        cells = []
        for objective in result.objectives:
            cell = result.cell(name, objective)
            if cell.note:
                cells.append(f"{cell.note:>22}")
            elif cell.gap is not None and math.isinf(cell.gap):
                cells.append(f"{cell.value:>12.4g} (  vs 0)")
            else:
                cells.append(f"{cell.value:>12.4g} ({100 * (cell.gap or 0):+5.0f}%)")
        print(f"{name:<22}" + "".join(cells))


if __name__ == "__main__":
    main()
