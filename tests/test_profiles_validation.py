"""Profile files: validation naming the field, user files by path, invariants on random profiles."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
import pytest
import tomli_w
from hypothesis import given
from hypothesis import strategies as st
from strategies.pace import profile_dicts

from optsched._validation import parse
from optsched.errors import InvalidInstanceError
from optsched.profiles import Profile, load_profile, profile_schema

Data = dict[str, Any]


@given(profile_dicts())
def test_random_profiles_are_consistent(data):
    p = parse(Profile, data)
    expected_params = [t["params"] for layer in data["layers"] for t in layer.get("tensors", [])]
    assert [t.params for t in p.tensors] == expected_params
    assert p.total_params == sum(expected_params)
    np.testing.assert_array_equal(p.tensor_bytes, np.array(expected_params) * data["dtype_bytes"])
    owners = [i for i, layer in enumerate(data["layers"]) for _ in layer.get("tensors", [])]
    assert p.tensor_layer.tolist() == owners
    g = p.graph()
    assert nx.is_directed_acyclic_graph(g)
    assert list(g.nodes) == [f"L{i}" for i in range(len(data["layers"]))]
    for i, layer in enumerate(data["layers"]):
        expected = layer["inputs"] if "inputs" in layer else ([f"L{i - 1}"] if i else [])
        assert list(p.layer_inputs(i)) == expected
        assert sorted(g.predecessors(f"L{i}")) == sorted(expected)
    chain = all(
        layer.get("inputs", [f"L{i - 1}"] if i else []) == ([f"L{i - 1}"] if i else [])
        for i, layer in enumerate(data["layers"])
    )
    assert p.is_chain == chain
    assert nx.is_directed_acyclic_graph(g)


@given(profile_dicts(), st.sampled_from(["toml", "json"]))
def test_user_files_load_by_path(tmp_path_factory, data, fmt):
    path = tmp_path_factory.mktemp("profiles") / f"mine.{fmt}"
    path.write_text(tomli_w.dumps(data) if fmt == "toml" else json.dumps(data))
    assert load_profile(path) == parse(Profile, data)
    assert load_profile(str(path)) == parse(Profile, data)


@given(profile_dicts(), st.data())
def test_an_input_to_a_later_layer_is_named(data, draw):
    n = len(data["layers"])
    i = draw.draw(st.integers(0, n - 1))
    j = draw.draw(st.integers(i, n - 1))  # itself or a later layer
    data["layers"][i]["inputs"] = [f"L{j}"]
    with pytest.raises(InvalidInstanceError) as err:
        parse(Profile, data)
    assert err.value.field == f"layers[{i}].inputs[0]"
    assert "not an earlier layer" in err.value.message


@pytest.fixture(scope="module")
def base() -> Data:
    from importlib import resources

    text = (resources.files("optsched.models") / "resnet50.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _set(path: str, value: Any) -> Callable[[Data], None]:
    def mutate(d: Data) -> None:
        *parents, last = path.split("/")
        target: Any = d
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return mutate


def _delete(path: str) -> Callable[[Data], None]:
    def mutate(d: Data) -> None:
        *parents, last = path.split("/")
        target: Any = d
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[last]

    return mutate


def _total_plus_one(d: Data) -> None:
    d["total_params"] += 1


def _duplicate_layer(d: Data) -> None:
    d["layers"][5]["name"] = d["layers"][2]["name"]


def _duplicate_tensor(d: Data) -> None:
    d["layers"][1]["tensors"][1]["name"] = d["layers"][1]["tensors"][0]["name"]


#: (mutation, field the error must name, words the message must contain)
INVALID = {
    "negative forward time": (_set("layers/3/forward_ms", -1), "layers[3].forward_ms", ">= 0"),
    "negative backward time": (_set("layers/0/backward_ms", -0.5), "layers[0].backward_ms", ">="),
    "duplicate layer": (_duplicate_layer, "layers[5].name", "duplicate layer"),
    "input to a later layer": (
        _set("layers/4/inputs", ["layer1.0.bn3"]),
        "layers[4].inputs[0]",
        "not an earlier layer",
    ),
    "unknown input": (_set("layers/4/inputs", ["nope"]), "layers[4].inputs[0]", "'nope'"),
    "input listed twice": (
        _set("layers/4/inputs", ["conv1", "conv1"]),
        "layers[4].inputs[1]",
        "twice",
    ),
    "total mismatch": (_total_plus_one, "total_params", "sum to 25557032"),
    "unknown top-level field": (_set("colour", "red"), "colour", "not a known field"),
    "unknown layer field": (_set("layers/2/colour", "red"), "layers[2].colour", "not a known"),
    "unknown tensor field": (
        _set("layers/0/tensors/0/dims", [1]),
        "layers[0].tensors[0].dims",
        "known",
    ),
    "zero params": (_set("layers/0/tensors/0/params", 0), "layers[0].tensors[0].params", ">= 1"),
    "duplicate tensor": (_duplicate_tensor, "layers[1].tensors[1].name", "duplicate tensor"),
    "unknown provenance": (_set("compute/provenance", "guessed"), "compute.provenance", ""),
    "zero batch": (_set("compute/batch_size", 0), "compute.batch_size", ">= 1"),
    "missing compute": (_delete("compute"), "compute", "is required"),
    "no layers": (_set("layers", []), "layers", ""),
    "times as text": (_set("layers/0/forward_ms", "fast"), "layers[0].forward_ms", ""),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_profiles_name_the_field(base, case):
    mutate, field, words = INVALID[case]
    data = copy.deepcopy(base)
    mutate(data)
    with pytest.raises(InvalidInstanceError) as err:
        parse(Profile, data)
    assert err.value.field == field
    assert words in err.value.message
    assert str(err.value).startswith(f"{field}: ")


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_files_fail_to_load_by_path(base, case, tmp_path):
    mutate, field, _ = INVALID[case]
    data = copy.deepcopy(base)
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInstanceError) as err:
        load_profile(path)
    assert err.value.field == field


def test_the_base_profile_is_valid(base):
    assert parse(Profile, base).total_params == 25_557_032


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(InvalidInstanceError) as err:
        load_profile(tmp_path / "missing.toml")
    assert err.value.field == "<file>"
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(InvalidInstanceError) as err:
        load_profile(bad)
    assert err.value.field == "<file>"


def test_unknown_name():
    with pytest.raises(InvalidInstanceError) as err:
        load_profile("resnet51")
    assert err.value.field == "model"
    assert "resnet50" in err.value.message  # lists the known names


def test_schema_describes_the_format():
    schema = profile_schema()
    assert set(schema["required"]) >= {"name", "total_params", "compute", "layers"}
    assert "forward_ms" in schema["$defs"]["Layer"]["properties"]
