"""Run every ``benchmarks/bench_*.py`` and write JSON + Markdown tables (``--out``).

Each benchmark module defines ``run(quick: bool = False) -> dict`` returning::

    {"name": str, "title": str, "description": str,
     "columns": [str, ...], "rows": [[...], ...],
     "summary": {str: value, ...},   # headline figures (ratios), optional
     "notes": [str, ...]}             # optional

Results are written as each benchmark finishes, so an interrupted run keeps what it measured.
Speed is reported as ratios measured within one run (DESIGN §4), never asserted.

Usage: ``python benchmarks/run.py [--quick] [--only NAME ...] [--out DIR]``

``make bench`` writes into ``benchmarks/results/latest/``, which git ignores, so a run leaves the
working tree clean; the reference tables committed in ``benchmarks/results/`` are refreshed on
purpose with ``make bench BENCH_OUT=benchmarks/results``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:.4g}"
    return str(value)


def to_markdown(result: dict) -> str:
    """Render one benchmark result as a Markdown section."""
    lines = [f"## {result.get('title', result['name'])}", ""]
    if result.get("description"):
        lines += [result["description"], ""]
    cols = result["columns"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for row in result["rows"]:
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    if result.get("summary"):
        lines += ["", "**Summary**", ""]
        lines += [f"- {k}: {_fmt(v)}" for k, v in result["summary"].items()]
    if result.get("notes"):
        lines += ["", *[f"- {n}" for n in result["notes"]]]
    return "\n".join(lines) + "\n"


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    assert spec is not None and spec.loader is not None
    # registered before it runs, as an import would: dataclasses look their module up there
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", default=None, help="benchmark file stems to run")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "latest", help="directory for the result tables"
    )
    args = parser.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(HERE.glob("bench_*.py"))
    if args.only:
        files = [
            f for f in files if f.stem in args.only or f.stem.removeprefix("bench_") in args.only
        ]
    machine = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    sections = []
    failures = 0
    for path in files:
        print(f"== {path.stem}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            result = load(path).run(quick=args.quick)
        except Exception:  # report and go on with the other benchmarks
            traceback.print_exc()
            failures += 1
            continue
        result["seconds"] = time.perf_counter() - start
        result["machine"] = machine
        result["quick"] = args.quick
        name = result["name"]
        (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        md = to_markdown(result)
        (out / f"{name}.md").write_text(md)
        sections.append(md)
        print(md, file=sys.stderr, flush=True)
    # the goal table reads every result file in the output directory (this run's, and for
    # benchmarks left out with --only, the last ones written there)
    goals_md = load(HERE / "goals.py").write(out)
    print(goals_md, file=sys.stderr, flush=True)
    if not args.only:
        sections.append(goals_md)
        header = (
            "# optsched benchmark results\n\n"
            f"Python {machine['python']} on {machine['platform']}"
            f"{' (quick sizes)' if args.quick else ''}.\n\n"
        )
        (out / "README.md").write_text(header + "\n".join(sections))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
