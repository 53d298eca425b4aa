"""Plug-in policies: the registry, entry points, and every entry point taking names or objects."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from strategies.sim import job_frame

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.sim_sweep import sweep
from optsched.sim import World, compare, parse_cluster, simulate
from optsched.sim.policies import (
    POLICIES,
    make_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from optsched.sim.policies.registry import reload_entry_points

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _forget(*names: str) -> None:
    """Unregister the example's policies and drop its module, so the next import registers."""
    for name in names or ("fewest-gpus",):
        if name in policy_names():
            unregister_policy(name)
    sys.modules.pop("my_policy", None)


@pytest.fixture
def my_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    _forget()
    yield importlib.import_module("my_policy")
    _forget()


def _world() -> World:
    # a 2-GPU job first, then a 1-GPU job: FIFO runs the big one first, fewest-GPUs preempts
    frame = job_frame(
        [
            {"arrival": 0.0, "model": "A", "num_gpus": 2, "duration": 10.0},
            {"arrival": 1.0, "model": "B", "num_gpus": 1, "duration": 2.0},
        ]
    )
    return World.from_frame(frame, parse_cluster("v100=2"))


def test_every_builtin_is_registered_under_its_own_name() -> None:
    assert policy_names()[: len(POLICIES)] == POLICIES
    assert all(make_policy(n).name == n for n in POLICIES)


def test_a_plugin_runs_through_simulate_compare_and_sweep(my_policy: object) -> None:
    world = _world()
    fifo, mine = simulate(world, "fifo"), simulate(world, "fewest-gpus")
    assert mine.policy == "fewest-gpus"
    # the small job finishes first only under the plug-in's order
    assert fifo.completion[1] > fifo.completion[0]
    assert mine.completion[1] < mine.completion[0]
    # an object works wherever a name does
    obj = my_policy.FewestGpusFirst()  # type: ignore[attr-defined]
    assert simulate(world, obj).completion == mine.completion
    result = compare(world, "fifo,fewest-gpus")
    assert list(result.runs) == ["fifo", "fewest-gpus"]
    assert compare(world, [obj, "fifo"]).runs["fewest-gpus"].completion == mine.completion
    frame = sweep(["synthetic:4"], "v100=8", ["fifo", obj], backend="serial")
    assert sorted(frame["policy"]) == ["fewest-gpus", "fifo"] and frame["valid"].all()
    frame = sweep(["synthetic:4"], "v100=8", "fewest-gpus,fifo", backend="serial")
    assert sorted(frame["policy"]) == ["fewest-gpus", "fifo"]


def test_cli_imports_a_plugin_module(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    _forget()
    try:
        assert main(["sim", "policies", "--plugin", "my_policy", "--json"]) == 0
        assert "fewest-gpus" in json.loads(capsys.readouterr().out)["policies"]
        args = ["sim", "sweep", "synthetic:4", "--cluster", "v100=8", "--backend", "serial"]
        code = main([*args, "--policies", "fifo,fewest-gpus", "--plugin", "my_policy", "--json"])
        assert code == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert sorted(r["policy"] for r in rows) == ["fewest-gpus", "fifo"]
    finally:
        _forget()
    # module:attr names a factory without registering it
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "0,0,1,A,,10,,1,,\n"
    )
    spec = "my_policy:FewestGpusFirst"
    code = main(["sim", "run", str(trace), "--cluster", "v100=1", "--json", "--policy", spec])
    assert code == 0 and json.loads(capsys.readouterr().out)["policy"] == "fewest-gpus"
    _forget()
    assert main(["sim", "policies", "--plugin", "no_such_module_here", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--plugin"
    # a .py file works without its directory on sys.path
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(EXAMPLES)])
    _forget()
    try:
        plugin = str(EXAMPLES / "my_policy.py")
        assert main(["sim", "policies", "--plugin", plugin, "--json"]) == 0
        assert "fewest-gpus" in json.loads(capsys.readouterr().out)["policies"]
    finally:
        _forget()
    assert main(["sim", "policies", "--plugin", str(tmp_path / "none.py"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--plugin"


def test_an_installed_entry_point_registers_a_policy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dist = tmp_path / "fewest_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fewest-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[optsched.policies]\nep-fewest = my_policy:FewestGpusFirst\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    _forget()
    try:
        reload_entry_points()
        assert "ep-fewest" in policy_names()
        assert simulate(_world(), "ep-fewest").policy == "fewest-gpus"
    finally:
        _forget("ep-fewest", "fewest-gpus")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda w: simulate(w, 42), "policy"),
        (lambda w: simulate(w, "fifoo"), "policy"),
        (lambda w: simulate(w.jobs, "fifo"), "world"),
        (lambda w: compare(w, "fifo,,srtf"), "policies"),
        (lambda w: compare(w, ["fifo", "fifo"]), "policies"),
        (lambda w: compare(w, []), "policies"),
        (lambda w: register_policy("fifo", lambda: make_policy("srtf")), "name"),
        (lambda w: register_policy("a,b", lambda: make_policy("srtf")), "name"),
        (lambda w: register_policy("x", 3), "factory"),
    ],
)
def test_wrong_guesses_are_typed_errors_naming_the_argument(call: object, field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        call(_world())  # type: ignore[operator]
    assert err.value.field == field


def test_a_provided_factory_imports_its_module_on_first_use() -> None:
    from optsched.sim.policies.registry import ProvidedFactory

    made = ProvidedFactory("optsched.sim.policies.basic:FIFO")()
    assert made.name == "fifo"
    for spec, field in (("no_such_module_xyz:P", "policy"), ("optsched.sim:NoSuchName", "policy")):
        with pytest.raises(InvalidInstanceError) as err:
            ProvidedFactory(spec)()
        assert err.value.field == field
    with pytest.raises(InvalidInstanceError) as err:
        ProvidedFactory("no-colon")
    assert err.value.field == "spec"
