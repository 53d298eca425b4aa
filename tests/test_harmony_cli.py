"""``optsched harmony``: train, place and compare from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.cli import main


def _run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_place_with_the_shipped_model(capsys) -> None:
    code, out, _ = _run(capsys, ["harmony", "place", "--jobs", "6", "--seed", "2", "--json"])
    assert code == 0
    data = json.loads(out)
    assert data["summary"]["validated"] and data["summary"]["jobs"] == 6
    assert all(len(j["servers"]) == j["workers"] + j["ps"] for j in data["jobs"])


@pytest.mark.solver("highs")
def test_compare_json_shape(capsys) -> None:
    args = [
        "harmony",
        "compare",
        "--jobs",
        "6",
        "--policies",
        "harmony,first-fit,random,pairwise-ilp,true-exact",
        "--gaps",
        "--json",
    ]
    code, out, _ = _run(capsys, args)
    assert code == 0
    data = json.loads(out)
    names = [r["policy"] for r in data["policies"]]
    assert names == ["harmony", "first-fit", "random", "pairwise-ilp", "true-exact"]
    assert all(r["valid"] for r in data["policies"])
    assert data["policies"][0]["jct_ratio"] == pytest.approx(1.0)
    gaps = data["exact"]["true"]
    assert gaps["decisions"] == 6 and sum(gaps["trivial"].values()) == 6
    for name in names:
        assert min(gaps["policies"][name]["ratios"]) >= 1 - 1e-6
    # the exact optimum of the true cost is its own judge: ratio 1 at every decision
    assert max(gaps["policies"]["true-exact"]["ratios"]) <= 1 + 1e-6


@pytest.mark.solver("highs")
def test_compare_names_the_pairwise_ilp_as_an_approximation(capsys) -> None:
    args = ["harmony", "compare", "--jobs", "4", "--policies", "harmony,pairwise-ilp", "--gaps"]
    code, out, _ = _run(capsys, args)
    assert code == 0
    assert "pairwise-ilp" in out and "true exact optimum" in out and "non-trivial" in out


def test_compare_refuses_an_unknown_policy(capsys) -> None:
    code, _, err = _run(capsys, ["harmony", "compare", "--policies", "harmony,nope"])
    assert code == 2
    assert "--policies" in err and "nope" in err


def test_compare_reads_a_trace_file(capsys) -> None:
    trace = Path(__file__).parent / "data/traces/gavel/msr_seed0_0e4a51_head40.trace"
    code, out, _ = _run(capsys, ["harmony", "place", str(trace), "--json"])
    assert code == 0
    assert json.loads(out)["summary"]["jobs"] == 40


def test_train_writes_a_loadable_checkpoint(capsys, tmp_path: Path) -> None:
    pytest.importorskip("jax", reason="training needs the rl extra")
    pytest.importorskip("gymnasium", reason="training needs the rl extra")
    out_path = tmp_path / "m.npz"
    args = [
        "harmony",
        "train",
        "--reward",
        "true",
        "--iterations",
        "2",
        "--episodes",
        "1",
        "--jobs",
        "3",
        "--servers",
        "3",
        "--types",
        "3",
        "-o",
        str(out_path),
        "--json",
    ]
    code, out, _ = _run(capsys, args)
    assert code == 0, out
    assert len(json.loads(out)["curve"]) == 2
    code, out, _ = _run(
        capsys, ["harmony", "place", "--model", str(out_path), "--jobs", "3", "--json"]
    )
    assert code == 0
    assert json.loads(out)["summary"]["jobs"] == 3


def test_train_refuses_a_wrong_extension(capsys, tmp_path: Path) -> None:
    code, _, err = _run(capsys, ["harmony", "train", "-o", str(tmp_path / "m.pkl")])
    assert code == 2
    assert ".npz" in err


def test_a_tampered_model_is_refused_naming_the_digest(capsys, tmp_path: Path) -> None:
    import numpy as np

    from optsched.harmony.agent import default_model_path

    with np.load(default_model_path(), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["param/b3"] = arrays["param/b3"] + np.float32(1.0)
    bad = tmp_path / "bad.npz"
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    code, _, err = _run(capsys, ["harmony", "place", "--model", str(bad), "--jobs", "2"])
    assert code == 2
    assert "digest" in err and "altered" in err
