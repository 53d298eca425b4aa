"""Hostile policy checkpoints: every file here carries a *valid* digest (anyone editing a
checkpoint can recompute a plain SHA-256), so only the loader's own bounds stand between it and
the process. Each is refused with a :class:`CheckpointError` naming the file and the field,
before anything of the size it asks for is allocated or decompressed."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from optsched import limits
from optsched.cli import main
from optsched.harmony import CheckpointError, load_model
from optsched.harmony.agent import MODEL_FORMAT, default_model_path
from optsched.harmony.checkpoint import save_checkpoint
from optsched.harmony.network import init_params
from optsched.harmony.world import HarmonyWorld

WORLD = HarmonyWorld(n_servers=4, n_types=3, seed=3)
WORLD_META = {
    "n_servers": 4,
    "gpus": 4,
    "cpus": 16,
    "n_types": 3,
    "spread_penalty": 0.1,
    "seed": 3,
    "max_workers": 3,
    "max_ps": 2,
}
#: Most bytes a refusal may allocate (traced by tracemalloc, NumPy's buffers included): far
#: below what any hostile file here asks for (>= 40 MB), far above a real small checkpoint.
REFUSAL_PEAK_BYTES = 16 * 2**20


def _meta(hidden: int = 8, **world: Any) -> dict[str, Any]:
    return {"format": MODEL_FORMAT, "hidden": hidden, "world": {**WORLD_META, **world}}


def _write(path: Path, params: dict[str, np.ndarray], meta: dict[str, Any]) -> Path:
    """What an attacker writes: any weights and settings, with the digest recomputed."""
    return save_checkpoint(path, params, meta)


def check_refused(path: Path, field: str | None = None) -> CheckpointError:
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError) as info:
            load_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.file == str(path)
    if field is not None:
        assert info.value.field == field, str(info.value)
    assert peak < REFUSAL_PEAK_BYTES, f"allocated {peak:,} bytes before refusing"
    return info.value


def _npy_member(shape: tuple[int, ...], payload: bytes, descr: str = "<f4") -> bytes:
    buf = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + payload


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _valid_members(tmp_path: Path) -> dict[str, bytes]:
    good = _write(tmp_path / "good.npz", init_params(WORLD, 8, seed=1), _meta())
    with zipfile.ZipFile(good) as z:
        return {name: z.read(name) for name in z.namelist()}


# ----- 4: settings bounded before use -------------------------------------------------------


@pytest.mark.parametrize("hidden", [0, -3])
def test_a_hidden_size_below_one_is_refused(tmp_path: Path, hidden: int) -> None:
    # arrays of exactly the shapes the header asks for, so only the bound on `hidden` refuses
    params = {k: v[..., :0] if v.ndim == 2 else v[:0] for k, v in init_params(WORLD, 1).items()}
    params["w3"] = np.zeros((0, 1), np.float32)
    params["wv"] = np.zeros((0, 1), np.float32)
    params["b3"] = np.zeros(1, np.float32)
    params["bv"] = np.zeros(1, np.float32)
    path = _write(tmp_path / "h.npz", params, _meta(hidden=hidden))
    err = check_refused(path, "meta.hidden")
    assert ">= 1" in err.message


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ({"hidden": 10**9}, "meta.hidden"),  # 74 GiB of weights
        ({"n_types": 10**6}, "meta.world.n_types"),  # k^2 features per server: TiB of weights
        ({"n_servers": 10**8}, "meta.world.n_servers"),  # the world alone: GB and a minute
        ({"n_servers": 10**9}, "meta.world.n_servers"),
        ({"max_workers": 10**7, "gpus": 10**6}, "meta.world.max_workers"),
    ],
)
def test_sizes_in_the_header_are_bounded_before_allocation(
    tmp_path: Path, setting: dict[str, int], field: str
) -> None:
    hidden = setting.pop("hidden", 8)
    path = _write(tmp_path / "big.npz", init_params(WORLD, 8, seed=1), _meta(hidden, **setting))
    err = check_refused(path, field)
    assert "max_" in err.message, "names the budget to raise"


@pytest.mark.parametrize(
    ("world", "field"),
    [
        ({"n_servers": "6"}, "meta.world.n_servers"),
        ({"n_servers": True}, "meta.world.n_servers"),
        ({"n_servers": 6.5}, "meta.world.n_servers"),
        ({"gpus": 10**39}, "meta.world.gpus"),
        ({"spread_penalty": -1.0}, "meta.world.spread_penalty"),
        ({"seed": -1}, "meta.world.seed"),
    ],
)
def test_settings_of_the_wrong_type_or_range_are_refused(
    tmp_path: Path, world: dict[str, Any], field: str
) -> None:
    path = _write(tmp_path / "t.npz", init_params(WORLD, 8, seed=1), _meta(8, **world))
    check_refused(path, field)


def test_the_weight_budget_is_named_and_can_be_raised(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.npz", init_params(WORLD, 8, seed=1), _meta(8))
    with limits.override(max_checkpoint_weights=100):
        err = check_refused(path, "meta.hidden")
    assert "max_checkpoint_weights" in err.message
    params, _ = load_model(path)  # within the default budget
    assert params["w1"].shape == (3 + 3 + 9 + 3 + 4, 8)


def test_a_huge_integer_in_the_metadata_is_refused(tmp_path: Path) -> None:
    members = _valid_members(tmp_path)
    meta = json.loads(np.load(io.BytesIO(members["meta.npy"])).tobytes())
    text = json.dumps(meta).replace('"seed": 3', '"seed": 1' + "0" * 5000)
    members["meta.npy"] = _npy_member((len(text),), text.encode(), descr="|u1")
    check_refused(_zip(tmp_path / "int.npz", members))


# ----- 5: the archive is checked before it is decompressed ----------------------------------


def test_an_extra_member_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    members = _valid_members(tmp_path)
    members["junk.npy"] = _npy_member((10_000_000,), bytes(40_000_000))  # 40 MB of zeros
    path = _zip(tmp_path / "bomb.npz", members)
    assert path.stat().st_size < 1_000_000
    err = check_refused(path)
    assert "junk.npy" in str(err)


def test_a_parameter_inflating_past_its_shape_is_refused_before_it_is_inflated(
    tmp_path: Path,
) -> None:
    members = _valid_members(tmp_path)
    members["param/b1.npy"] = _npy_member((10_000_000,), bytes(40_000_000))
    err = check_refused(_zip(tmp_path / "bomb.npz", members), "param/b1")
    assert "bytes" in err.message


def test_a_parameter_header_declaring_a_huge_shape_is_refused(tmp_path: Path) -> None:
    members = _valid_members(tmp_path)
    members["param/b1.npy"] = _npy_member((10**12,), bytes(32))
    check_refused(_zip(tmp_path / "shape.npz", members), "param/b1")


def test_a_duplicated_member_is_refused(tmp_path: Path) -> None:
    members = _valid_members(tmp_path)
    path = tmp_path / "dup.npz"
    with pytest.warns(UserWarning, match="Duplicate name"):
        with zipfile.ZipFile(path, "w") as z:
            for name, data in members.items():
                z.writestr(name, data)
            z.writestr("param/b1.npy", members["param/b1.npy"])
    check_refused(path)


# ----- 6: weights the forward pass cannot survive -------------------------------------------


@pytest.mark.parametrize("name", ["w3", "w1", "bv"])
def test_finite_but_overflowing_weights_are_refused_naming_the_file(
    tmp_path: Path, name: str
) -> None:
    params = init_params(WORLD, 8, seed=1)
    params[name] = np.full_like(params[name], 3e38)
    path = _write(tmp_path / "over.npz", params, _meta())
    err = check_refused(path, f"param/{name}")
    assert "overflow" in err.message


def test_the_command_line_refuses_overflowing_weights_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    params = init_params(WORLD, 8, seed=1)
    params["w3"] = np.full_like(params["w3"], 3e38)
    path = _write(tmp_path / "over.npz", params, _meta())
    code = main(["harmony", "place", "--model", str(path), "--jobs", "3"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "over.npz" in err and "param/w3" in err


# ----- the digest proves integrity; a key or a trusted list proves origin --------------------


def test_a_signed_checkpoint_loads_only_with_its_key(tmp_path: Path) -> None:
    params = init_params(WORLD, 8, seed=1)
    path = save_checkpoint(tmp_path / "s.npz", params, _meta(), key=b"secret")
    load_model(path, key=b"secret")
    load_model(path)  # the signature is extra: without a key the digest alone is checked
    with pytest.raises(CheckpointError, match="signature") as info:
        load_model(path, key=b"other")
    assert info.value.field == "signature"
    # an edited file whose digest was recomputed keeps a stale signature
    forged = _write(tmp_path / "forged.npz", {**params, "b3": params["b3"] + 1}, _meta())
    with pytest.raises(CheckpointError, match="signature"):
        load_model(forged, key=b"secret")


def test_a_trusted_digest_list_pins_the_checkpoint(tmp_path: Path) -> None:
    _, meta = load_model()
    load_model(trusted_digests={meta["digest"]})
    other = _write(tmp_path / "o.npz", init_params(WORLD, 8, seed=1), _meta())
    with pytest.raises(CheckpointError, match="trusted") as info:
        load_model(other, trusted_digests={meta["digest"]})
    assert info.value.field == "digest"


def test_the_command_line_checks_the_key_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    params = init_params(WORLD, 8, seed=1)
    signed = save_checkpoint(tmp_path / "s.npz", params, _meta(), key=b"k1")
    unsigned = _write(tmp_path / "u.npz", params, _meta())
    monkeypatch.setenv("OPTSCHED_HARMONY_KEY", "k1")
    assert main(["harmony", "place", "--model", str(signed), "--jobs", "2", "--json"]) == 0
    capsys.readouterr()
    assert main(["harmony", "place", "--model", str(unsigned), "--jobs", "2"]) == 2
    assert "signature" in capsys.readouterr().err
    # the shipped model ships with the code and is pinned by its digest, not by a user key
    assert main(["harmony", "place", "--jobs", "2", "--json"]) == 0
    capsys.readouterr()
    monkeypatch.delenv("OPTSCHED_HARMONY_KEY")
    digest = load_model()[1]["digest"]
    code = main(["harmony", "place", "--model", str(unsigned), "--trust", digest, "--jobs", "2"])
    assert code == 2
    assert "trusted" in capsys.readouterr().err


#: The shipped model's digest (weights and configuration; ``make harmony-model`` prints it).
SHIPPED_DIGEST = "53f5d406512f247ef34bda5dc9bd18ff571b40847dea6ad1adba2d447d3061d4"


def test_the_shipped_checkpoint_still_loads_with_its_digest() -> None:
    params, meta = load_model(default_model_path())
    assert meta["digest"] == SHIPPED_DIGEST
    load_model(trusted_digests={SHIPPED_DIGEST})
    assert all(np.all(np.isfinite(v)) for v in params.values())


def test_train_signs_with_the_key_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("jax", reason="training needs the rl extra")
    pytest.importorskip("gymnasium", reason="training needs the rl extra")
    monkeypatch.setenv("OPTSCHED_HARMONY_KEY", "k2")
    out = tmp_path / "signed.npz"
    args = ["harmony", "train", "--reward", "true", "--iterations", "1", "--episodes", "1",
            "--jobs", "2", "--servers", "3", "--types", "3", "-o", str(out), "--json"]  # fmt: skip
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["signed"] is True
    load_model(out, key=b"k2")
    with pytest.raises(CheckpointError, match="signature"):
        load_model(out, key=b"k1")
