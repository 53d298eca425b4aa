"""A longer fuzz campaign against the ``optsched`` command (``make fuzz``).

For every file format the command reads (instances, schedules, profiles, price files, traces of
every format, simulator world files, throughput tables, run stores), ``--mutants`` mutants are
made from a valid seed file (written by the command's own generators, or cut from the shipped
trace samples) by the mutation engine of the test suite
(``tests/fuzz/fuzz_engine.py``), and each is fed to every command that reads that format, in a
subprocess under a timeout and an address-space limit. With ``--options`` every hostile option
value of the engine's table is tried as well. Each run is checked against the command-line
contract: exit 0, 2 (naming a field) or 3; exactly one JSON object on stdout with ``--json``; no
traceback, hang or memory blow-up.

The outcome table (runs, exit codes, tracebacks, hangs, memory blow-ups and other contract
breaches per format and command) is printed at the end and written to ``OUT/outcomes.md``; every
failing case is written to ``OUT/failures/<n>/`` (the mutant, ``cmd.txt`` with the command line
to replay it, ``stdout``/``stderr``) and summarised in ``OUT/failures.jsonl``. The exit status
is 1 when any run broke the contract.

Examples
--------
::

    python scripts/fuzz.py --mutants 50 --jobs 2 --out fuzz-out
    python scripts/fuzz.py --formats oasis-instance --mutators number,extreme-size --mutants 200
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))

import fuzz_engine as fe


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=30, help="Mutants per format (default 30).")
    ap.add_argument("--seed", type=int, default=0, help="Campaign seed (default 0).")
    ap.add_argument("--jobs", type=int, default=2, help="Runs in parallel (default 2).")
    ap.add_argument("--formats", default="", help="Comma-separated formats (default: all).")
    ap.add_argument("--mutators", default="", help="Comma-separated mutators (default: all).")
    ap.add_argument("--options", action="store_true", help="Also every hostile option case.")
    ap.add_argument(
        "--experiments",
        action="store_true",
        help="Also hostile values at every key of an experiment file, and experiment stores "
        "rewritten with valid checksums (--mutants of them).",
    )
    ap.add_argument(
        "--checkpoints",
        action="store_true",
        help="Also hostile Harmony checkpoints: every setting out of range (re-saved with a "
        "valid digest), overflowing and non-finite weights, and hostile archives.",
    )
    ap.add_argument("--no-files", action="store_true", help="Skip the file mutants.")
    ap.add_argument("--timeout", type=float, default=fe.TIMEOUT_SECONDS, help="Seconds per run.")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"), help="Output directory.")
    args = ap.parse_args(argv)
    if args.mutants < 0 or args.jobs < 1 or not (args.timeout > 0):
        ap.error("--mutants >= 0, --jobs >= 1 and --timeout > 0 are required")
    return args


def _pick(text: str, known: list[str], what: str) -> list[str]:
    if not text:
        return known
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def _case_list(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every run of the campaign, deterministic from the campaign seed."""
    import random

    cases: list[dict[str, Any]] = []
    targets = {**fe.TARGETS, **fe.SIM_TARGETS}
    if not args.no_files:
        formats = _pick(args.formats, list(targets), "formats")
        mutators = _pick(args.mutators, sorted(fe.MUTATORS), "mutators")
        rng = random.Random(args.seed)
        for fmt in formats:
            for k in range(args.mutants):
                mutator = mutators[k % len(mutators)]
                seed = rng.randrange(2**32)
                for template in targets[fmt]:
                    cases.append(
                        {"group": fmt, "template": template, "mutator": mutator, "seed": seed}
                    )
    if args.options:
        for template, what in [*fe.option_cases(), *fe.sim_option_cases()]:
            cases.append({"group": "options", "template": template, "what": what})
    if args.experiments:
        sweep = ["sim", "sweep", "{exp}", "--backend", "serial", "--json"]
        for text, what in fe.experiment_cases():
            cases.append(
                {"group": "experiment-keys", "template": sweep, "text": text, "what": what}
            )
        rng = random.Random(args.seed + 1)
        report = ["sim", "report", "{store}", "-o", "{out}/report", "--json"]
        for k in range(args.mutants):
            rewrite = fe.STORE_REWRITES[k % len(fe.STORE_REWRITES)]
            cases.append(
                {
                    "group": "store-rewrite",
                    "template": report,
                    "rewrite": rewrite,
                    "seed": rng.randrange(2**32),
                }
            )
    if args.checkpoints:
        place = ["harmony", "place", "--jobs", "4", "--seed", "1", "--model", "{ckpt}", "--json"]
        for name in fe.checkpoint_cases():
            cases.append({"group": "harmony-checkpoint", "template": place, "checkpoint": name})
    return cases


def _run_case(case: dict[str, Any], seeds: dict[str, Path], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        mutant: Path | None = None
        data = b""
        if "mutator" in case:
            source = seeds[case["group"]]
            data, what = fe.mutate_any(source, case["mutator"], case["seed"])
            mutant = work / source.name
            mutant.write_bytes(data)
            case = {**case, "what": f"{case['mutator']} seed {case['seed']}: {what}"}
        if case["group"] in ("sim-experiment", "experiment-keys"):
            # a module a data file might name: importing it leaves a mark (fe.writer_breach)
            (work / "plug.py").write_text(fe.MARKER_MODULE)
        extra: dict[str, Path] = {}
        if "text" in case:
            extra["exp"] = work / "exp.toml"
            text = case["text"].replace("{outside}", str(fe.outside(work)))
            extra["exp"].write_text(text, encoding="utf-8")
        if "rewrite" in case:
            extra["store"] = work / "s.sqlite"
            shutil.copyfile(seeds["experiment-store"], extra["store"])
            what = fe.rewrite_store(extra["store"], case["rewrite"], case["seed"])
            case = {**case, "what": f"{case['rewrite']} seed {case['seed']}: {what}"}
        if "checkpoint" in case:
            extra["ckpt"] = work / "model.npz"
            what = fe.write_hostile_checkpoint(case["checkpoint"], extra["ckpt"])
            case = {**case, "what": f"{case['checkpoint']}: {what}"}
        argv = fe.fill(case["template"], {**seeds, **extra}, mutant, work)
        if case.get("mutator") == "list-blowup" and case["template"][:1] == ["sim"]:
            # tens of thousands of jobs to simulate: the simulator's limit, not the readers'
            timeout = max(timeout, fe.SIM_BLOWUP_TIMEOUT_SECONDS)
        run = fe.run_optsched(argv, cwd=work, timeout=timeout)
        outcome = fe.check_contract(run)
        unsafe = fe.writer_breach(work)
        if outcome.ok and unsafe:
            outcome = fe.Outcome("unsafe", unsafe, outcome.payload)
    return {
        **case,
        "command": fe.command_name(case["template"]),
        "argv": argv,
        "returncode": run.returncode,
        "kind": outcome.kind,
        "detail": outcome.detail,
        "seconds": round(run.seconds, 2),
        "stdout": run.stdout[-20000:],
        "stderr": run.stderr[-20000:],
        "mutant": data if outcome.kind != "ok" else b"",
        "mutant_path": str(mutant) if mutant is not None else "",
    }


def _table(results: list[dict[str, Any]]) -> str:
    rows: dict[tuple[str, str], collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    for r in results:
        c = rows[(r["group"], r["command"])]
        c["runs"] += 1
        c[f"exit {r['returncode'] if r['returncode'] is not None else '-'}"] += 1
        c[r["kind"]] += 1
    total: collections.Counter[str] = collections.Counter()
    for c in rows.values():
        total.update(c)
    head = [
        "format",
        "command",
        "runs",
        "exit 0",
        "exit 2",
        "exit 3",
        "exit 1",
        "other exit",
        "traceback",
        "hang",
        "memory",
        "unsafe",
        "breach",
    ]

    def line(group: str, command: str, c: collections.Counter[str]) -> list[str]:
        known = c["exit 0"] + c["exit 2"] + c["exit 3"] + c["exit 1"]
        breach = c["signal"] + c["exit1"] + c["bad-exit"] + c["json"] + c["no-field"] + c["unsafe"]
        return [
            group,
            command,
            str(c["runs"]),
            str(c["exit 0"]),
            str(c["exit 2"]),
            str(c["exit 3"]),
            str(c["exit 1"]),
            str(c["runs"] - known),
            str(c["traceback"]),
            str(c["hang"]),
            str(c["memory"]),
            str(c["unsafe"]),
            str(breach),
        ]

    body = [line(g, cmd, c) for (g, cmd), c in sorted(rows.items())]
    body.append(line("**total**", "", total))
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in body]
    out.append("")
    out.append(
        "breach = exit 1 (an internal or other error), a signal, another exit code, stdout that "
        "is not exactly one JSON object, exit 2 naming no field, or an unsafe run (a module a "
        "data file named was imported, a file written outside the experiment's folder, raw "
        "HTML in a report); 'other exit' counts hangs (killed at the timeout) and signals."
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; return 1 if any run broke the contract."""
    args = _parse(argv)
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out / "failures", ignore_errors=True)
    (out / "failures").mkdir(parents=True, exist_ok=True)
    seed_dir = out / "seeds"
    shutil.rmtree(seed_dir, ignore_errors=True)
    seeds = {
        **fe.make_seeds(seed_dir),
        **fe.make_sim_seeds(seed_dir),
        **fe.prepare_special_files(seed_dir),
    }
    cases = _case_list(args)
    print(f"{len(cases)} runs, {args.jobs} at a time, {args.timeout:g} s timeout", file=sys.stderr)
    results: list[dict[str, Any]] = []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_run_case, case, seeds, args.timeout) for case in cases]
        for i, future in enumerate(concurrent.futures.as_completed(futures), 1):
            r = future.result()
            results.append(r)
            mark = "." if r["kind"] == "ok" else r["kind"][0].upper()
            print(mark, end="" if i % 80 else "\n", file=sys.stderr, flush=True)
    print(f"\n{time.monotonic() - start:.0f} s", file=sys.stderr)
    results.sort(key=lambda r: (r["group"], r["command"], r.get("what", "")))
    failures = [r for r in results if r["kind"] != "ok"]
    with open(out / "failures.jsonl", "w", encoding="utf-8") as fh:
        for n, r in enumerate(failures):
            case_dir = out / "failures" / f"{n:04d}"
            case_dir.mkdir()
            argv = list(r["argv"])
            if r["mutant"]:
                saved = case_dir / {**fe.SEED_FILES, **fe.SIM_SEED_FILES}[r["group"]]
                saved.write_bytes(r["mutant"])
                argv = [str(saved) if a == r["mutant_path"] else a for a in argv]
            if r.get("text"):
                # an experiment-keys case: the file it ran, beside the command line
                (case_dir / "exp.toml").write_text(r["text"], encoding="utf-8")
            (case_dir / "cmd.txt").write_text(
                "optsched " + " ".join(argv) + f"\n# {r.get('what', '')}\n", encoding="utf-8"
            )
            (case_dir / "stdout").write_text(r["stdout"], encoding="utf-8")
            (case_dir / "stderr").write_text(r["stderr"], encoding="utf-8")
            summary = {
                k: v for k, v in r.items() if k not in ("stdout", "stderr", "mutant", "mutant_path")
            }
            summary["case"] = str(case_dir)
            fh.write(json.dumps(summary) + "\n")
    table = _table(results)
    (out / "outcomes.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"\n{len(failures)} of {len(results)} runs broke the contract; cases in {out}/failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
