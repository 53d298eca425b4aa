"""``optsched demo --quick``: every figure it prints is consistent with an independent check."""

from __future__ import annotations

import json

import pytest

from optsched.cli import main
from optsched.online.oasis import load_instance, load_schedule, validate

pytestmark = pytest.mark.solver("highs")

#: Relative tolerance for comparing utilities printed by the demo.
RTOL = 1e-6


def test_demo_quick(tmp_path, capsys) -> None:
    assert main(["demo", "--quick", "--json", "-o", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # exactly one JSON object on stdout
    # Section 0, shown first: the survey's schedulers on the shipped Gavel trace slice, with
    # Gavel's throughputs, beside the proven optimum of the same round world.
    # every number of a section has its unit in that section's map
    from optsched.cli.common import unit_entry

    def leaves(node: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        if isinstance(node, dict):
            return [
                leaf
                for k, v in node.items()
                if k not in ("units", "top", "gpu_demand", "policy_specs")
                for leaf in leaves(v, (*path, str(k)))
            ]
        if isinstance(node, list):
            return [leaf for item in node for leaf in leaves(item, path)]
        is_number = isinstance(node, int | float) and not isinstance(node, bool)
        return [path] if is_number else []

    for section in ("sim", "offline", "online", "pace"):
        no_unit = [p for p in leaves(out[section]) if unit_entry(p, out["units"][section]) is None]
        assert not no_unit, (section, no_unit)
    assert out["units"]["seconds"]
    sim = out["sim"]
    assert sim["throughputs"] == "gavel" and sim["cluster"] == "v100=1:1,p100=1:1,k80=2:2"
    assert {k: v["status"] for k, v in sim["exact"].items()} == {
        "weighted-jct": "optimal",
        "makespan": "optimal",
    }
    rows = sim["policies"]
    assert len([r for r in rows if not r["policy"].startswith("exact-")]) == 9
    # the optimum on the policies' own grid: Gavel's 360 s rounds
    assert sim["round_seconds"] == 360.0 and sim["exact_round_seconds"] == 360.0
    assert sim["exact_grid"] == "given"
    for row in rows:
        assert row["valid"] and row["unfinished"] == 0, row["policy"]
        for o in ("weighted-jct", "makespan"):
            # every row has its certified gap, valid whatever world it reached
            assert row[f"bound_gap_{o}"] >= 0, row["policy"]
            if row["like_for_like"]:
                # in the model's own world nobody beats the proven optimum
                assert row[f"gap_{o}"] >= 0, row["policy"]
            else:
                # beyond it (Gandiva shares GPUs): no gap to an optimum that forbids it
                assert row[f"gap_{o}"] is None and row["outside"], row["policy"]
    assert any(r["shared"] and not r["like_for_like"] for r in rows)
    assert (tmp_path / "sim_jct_cdf.png").stat().st_size > 0
    assert captured.err.index("public trace") < captured.err.index("OASiS")
    assert "gap to the optimum (%)" in captured.err
    assert "makespan = last completion - first arrival" in captured.err
    # Section 1: the exact optimum, re-validated from the files the demo wrote.
    off = out["offline"]
    assert off["status"] == "optimal"
    inst = load_instance(tmp_path / "instance.json")
    report = validate(inst, load_schedule(tmp_path / "offline_schedule.json"))
    assert report.ok and report.objective == pytest.approx(off["objective"], rel=RTOL)
    # Section 2: no algorithm beats the proven optimum or the best upper bound.
    online = out["online"]
    upper = online["upper_bound"]
    for row in online["algorithms"]:
        assert row["valid"]
        assert row["utility"] <= upper * (1 + RTOL) + RTOL
    oasis = next(r for r in online["algorithms"] if r["algorithm"] == "oasis")
    assert oasis["dual_bound"] >= upper * (1 - RTOL) - RTOL
    assert (tmp_path / "oasis_vs_baselines.png").stat().st_size > 0
    # Section 3: PACE is fastest and nobody beats the lower bound.
    pace = out["pace"]
    times = pace["policies"]
    assert pace["fastest"] == "pace"
    for name, entry in times.items():
        value = entry["iteration_time"] if isinstance(entry, dict) else entry
        assert value >= pace["lower_bound"] * (1 - RTOL), name
    # Human output went to stderr.
    assert "PACE" in captured.err and "OASiS" in captured.err
