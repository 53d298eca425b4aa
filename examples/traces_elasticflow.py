"""Read public cluster traces into optsched's normalized job table.

1. Read the ten ElasticFlow/ITP cluster traces (69,351 jobs) and print each one's size, span and
   GPU demand.
2. Read a Gavel trace (7-field Philly-derived layout) and show how its job types map to model and
   batch size.
3. Show a broken row being refused with its file, row and column.
4. Convert a trace to the normalized CSV and read it back unchanged.

The real traces are read from ``../shared/data`` (beside the repository); without them the
example uses the small slices shipped in ``tests/data/traces``.

Run: ``python examples/traces_elasticflow.py`` (a few seconds).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from optsched.errors import InvalidInstanceError
from optsched.traces import read_trace, write_trace

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (p / "shared" / "data" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared" / "data",
)
FIXTURES = ROOT / "tests" / "data" / "traces"


def main() -> None:
    if (SHARED / "elasticflow").is_dir():
        clusters = sorted((SHARED / "elasticflow").glob("cluster*.csv"))
        gavel = SHARED / "gavel" / "traces" / "msr_seed0" / "0e4a51.trace"
    else:
        clusters = [FIXTURES / "elasticflow" / "cluster10_head40.csv"]
        gavel = FIXTURES / "gavel" / "msr_seed0_0e4a51_head40.trace"

    # 1. Sizes, spans and GPU demand of every cluster.
    total = 0
    for path in clusters:
        info = read_trace(path).info()
        total += info["jobs"]
        demand = ", ".join(f"{g} GPU: {n}" for g, n in info["gpu_demand"].items())
        print(
            f"{path.name}: {info['jobs']:>6,} jobs over {info['span'] / 86400:5.1f} days; {demand}"
        )
    print(f"total: {total:,} jobs")

    # 2. Gavel job types -> model + batch size; work in steps, duration unknown.
    trace = read_trace(gavel)
    print(trace)
    print(
        trace.jobs[["job_id", "arrival", "num_gpus", "model", "batch_size", "total_steps"]].head()
    )

    with tempfile.TemporaryDirectory() as tmp:
        # 3. A broken copy: a negative GPU count on the third job.
        lines = clusters[-1].read_text().splitlines()
        parts = lines[3].split(",")
        parts[6] = "-2"
        lines[3] = ",".join(parts)
        broken = Path(tmp) / "broken.csv"
        broken.write_text("\n".join(lines) + "\n")
        try:
            read_trace(broken)
        except InvalidInstanceError as exc:
            print(f"refused: row {exc.row}, column {exc.field}: {exc.message}")

        # 4. Normalized CSV round trip.
        original = read_trace(clusters[-1])
        out = write_trace(original, Path(tmp) / "normalized.csv")
        assert read_trace(out).equals(original)
        print(f"wrote and re-read {len(original):,} jobs unchanged ({out.name})")


if __name__ == "__main__":
    main()
