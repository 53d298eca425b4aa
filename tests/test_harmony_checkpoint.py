"""Policy checkpoints: .npz round trip, the shipped model, and refusal of altered files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from optsched.errors import InvalidInstanceError
from optsched.harmony import CheckpointError, load_model
from optsched.harmony.agent import MODEL_FORMAT, TrainResult, default_model_path, save_model
from optsched.harmony.network import init_params
from optsched.harmony.policies import run_policy
from optsched.harmony.world import HarmonyWorld, generate_arrivals

WORLD = HarmonyWorld(n_servers=4, n_types=4, seed=3)


def _saved(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    params = init_params(WORLD, 16, seed=1)
    meta = {
        "format": MODEL_FORMAT,
        "hidden": 16,
        "world": {
            k: getattr(WORLD, k)
            for k in (
                "n_servers",
                "gpus",
                "cpus",
                "n_types",
                "spread_penalty",
                "seed",
                "max_workers",
                "max_ps",
            )
        },
    }
    path = save_model(tmp_path / "m.npz", TrainResult(params, WORLD, meta=meta))
    return path, params


def test_round_trip(tmp_path: Path) -> None:
    path, params = _saved(tmp_path)
    loaded, meta = load_model(path)
    assert meta["hidden"] == 16
    for k, v in params.items():
        np.testing.assert_array_equal(loaded[k], v)


def _rewrite(path: Path, change) -> None:
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    change(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_a_changed_weight_is_refused(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path)

    def nudge(arrays):
        arrays["param/w1"] = arrays["param/w1"].copy()
        arrays["param/w1"][0, 0] += 1e-3

    _rewrite(path, nudge)
    with pytest.raises(CheckpointError, match="altered") as info:
        load_model(path)
    assert info.value.field == "digest"


def test_changed_metadata_is_refused(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path)

    def edit(arrays):
        meta = json.loads(arrays["meta"].tobytes())
        meta["world"]["spread_penalty"] = 0.0
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)

    _rewrite(path, edit)
    with pytest.raises(CheckpointError, match="altered"):
        load_model(path)


def test_an_edited_training_record_is_refused(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path)

    def edit(arrays):
        meta = json.loads(arrays["meta"].tobytes())
        meta["curve"] = [{"iteration": 0, "reward": 99.0}]
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)

    _rewrite(path, edit)
    with pytest.raises(CheckpointError, match="altered") as info:
        load_model(path)
    assert info.value.field == "record_digest"


def test_the_shipped_model_is_the_one_its_command_rebuilds() -> None:
    # Its metadata holds exactly the shipped training settings and no time of the run; the
    # rebuild itself (make harmony-model) is checked by benchmarks/bench_harmony.py, which
    # trains with the same settings and compares the digest.
    from optsched.harmony.agent import SHIPPED_COMMAND, SHIPPED_TRAINING

    _, meta = load_model()
    assert {k: meta["training"][k] for k in SHIPPED_TRAINING} == SHIPPED_TRAINING
    assert "wall_s" not in meta["training"] and "fit_s" not in json.dumps(meta)
    assert meta["world"] == {k: getattr(HarmonyWorld(), k) for k in meta["world"]}, (
        "the default world"
    )
    assert "--seed 0" in SHIPPED_COMMAND and "harmony_small.npz" in SHIPPED_COMMAND


class _Boom:
    """Unpickling it would raise: a refusal that unpickled would fail the test differently."""

    def __reduce__(self):
        return (_explode, ())


def _explode():
    raise AssertionError("an object array was unpickled")


@pytest.mark.parametrize("member", ["meta.npy", "param/w1.npy"])
def test_object_arrays_and_garbage_are_refused_without_unpickling(
    tmp_path: Path, member: str
) -> None:
    good, _ = _saved(tmp_path)
    with zipfile.ZipFile(good) as z:
        members = {name: z.read(name) for name in z.namelist()}
    buf = io.BytesIO()
    np.save(buf, np.array([_Boom()], dtype=object), allow_pickle=True)
    members[member] = buf.getvalue()
    path = tmp_path / "evil.npz"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    with pytest.raises(CheckpointError) as info:
        load_model(path)
    assert info.value.field == member.removesuffix(".npy")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(CheckpointError):
        load_model(junk)
    with pytest.raises(InvalidInstanceError, match="directory"):
        load_model(tmp_path)


def test_another_kind_is_refused(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path)

    def edit(arrays):
        arrays["meta"] = np.frombuffer(json.dumps({"format": "x"}).encode(), dtype=np.uint8)

    _rewrite(path, edit)
    with pytest.raises(CheckpointError, match=r"meta\.format"):
        load_model(path)


def test_the_shipped_model_loads_and_places_feasibly() -> None:
    assert default_model_path().is_file()
    params, meta = load_model()
    world = HarmonyWorld(**meta["world"])
    arrivals = generate_arrivals(world, 10, seed=4)
    run = run_policy(world, arrivals, "harmony", params=params)
    assert len(run.objectives) == 10, "every decision validated"
