"""The shipped DNN profiles (optsched/models/*.toml) against published figures and their
generator."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import networkx as nx
import pytest

from optsched.profiles import available_profiles, load_profile

REPO = Path(__file__).resolve().parents[1]

#: Parameter counts as published by the reference implementations (torchvision's weight metadata
#: ``num_params``; ``sum(p.numel() for p in model.parameters())`` of Hugging Face BertModel /
#: GPT2Model). Written here independently of the profile files and of the generator.
PUBLISHED_PARAMS = {
    "resnet18": 11_689_512,
    "resnet34": 21_797_672,
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,
    "resnet152": 60_192_808,
    "vgg16": 138_357_544,
    "vgg19": 143_667_240,
    "alexnet": 61_100_840,
    "inception_v3": 27_161_264,  # with the auxiliary classifier
    "bert_base": 109_482_240,  # bert-base-uncased, with the pooler
    "bert_large": 335_141_888,  # bert-large-uncased, with the pooler
    "gpt2_small": 124_439_808,
    "gpt2_medium": 354_823_168,
}

#: ``len(list(model.parameters()))`` in the reference implementation.
PUBLISHED_TENSORS = {
    "resnet18": 62,
    "resnet34": 110,
    "resnet50": 161,
    "resnet101": 314,
    "resnet152": 467,
    "vgg16": 32,
    "vgg19": 38,
    "alexnet": 16,
    "inception_v3": 292,
    "bert_base": 199,
    "bert_large": 391,
    "gpt2_small": 148,
    "gpt2_medium": 292,
    "transformer_base": 253,
}

#: torchvision's ``_ops`` metadata: GMACs of convolutions and linear layers per image in eval
#: mode (so without Inception's auxiliary classifier), rounded to the digits shown.
TORCHVISION_GMACS = {
    "resnet18": 1.814,
    "resnet34": 3.664,
    "resnet50": 4.089,
    "resnet101": 7.801,
    "resnet152": 11.514,
    "vgg16": 15.47,
    "vgg19": 19.632,
    "alexnet": 0.714,
    "inception_v3": 5.713,
}
#: Half a unit of the last published digit (torchvision rounds to 3 decimals).
GMACS_TOL = 5e-4

#: Times are written rounded to 1e-6 ms; forward and 2 x forward may each be off by half that.
TIME_TOL = 1.01e-6

#: Layers that read no other layer, and layers nobody reads (network outputs).
SOURCES_SINKS = {
    "alexnet": (["features.0"], ["classifier.6"]),
    "vgg16": (["features.0"], ["classifier.6"]),
    "vgg19": (["features.0"], ["classifier.6"]),
    "inception_v3": (["Conv2d_1a_3x3.conv"], ["AuxLogits.fc", "fc"]),
    "bert_base": (
        [
            "embeddings.word_embeddings",
            "embeddings.position_embeddings",
            "embeddings.token_type_embeddings",
        ],
        ["pooler.dense"],
    ),
    "gpt2_small": (["wte", "wpe"], ["ln_f"]),
    "transformer_base": (
        ["encoder.embed_tokens", "decoder.embed_tokens"],
        ["decoder.output_projection"],
    ),
    **{f"resnet{d}": (["conv1"], ["fc"]) for d in (18, 34, 50, 101, 152)},
}

#: Residual blocks per ResNet: each block ends in one layer that reads both of its branches.
RESNET_BLOCKS = {18: 8, 34: 16, 50: 16, 101: 33, 152: 50}


def transformer_base_params(vocab: int = 37_000, d: int = 512, ff: int = 2048, n: int = 6) -> int:
    """Closed form for the Transformer-base choices stated in its ``source``."""
    attention = 4 * (d * d + d)  # Q, K, V, output projections with biases
    norm = 2 * d
    ffn = (d * ff + ff) + (ff * d + d)
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    return vocab * d + n * (encoder_layer + decoder_layer)  # one tied embedding matrix


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    path = REPO / "scripts" / "generate_profiles.py"
    spec = importlib.util.spec_from_file_location("generate_profiles", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_required_models_ship():
    required = {
        "resnet50", "resnet101", "resnet152", "vgg16", "vgg19", "inception_v3", "alexnet",
        "bert_base", "gpt2_small", "transformer_base",
    }  # fmt: skip
    assert required <= set(available_profiles())
    assert set(available_profiles()) == set(PUBLISHED_TENSORS)


def test_transformer_base_closed_form():
    assert transformer_base_params() == 63_082_496


@pytest.mark.parametrize("name", sorted(PUBLISHED_TENSORS))
def test_total_equals_published_count(name):
    p = load_profile(name)
    expected = transformer_base_params() if name == "transformer_base" else PUBLISHED_PARAMS[name]
    assert p.total_params == expected
    assert sum(t.params for t in p.tensors) == expected
    assert len(p.tensors) == PUBLISHED_TENSORS[name]
    assert p.total_bytes == expected * p.dtype_bytes == int(p.tensor_bytes.sum())


@pytest.mark.parametrize("name", sorted(PUBLISHED_TENSORS))
def test_tensors_belong_to_their_layer_in_forward_order(name):
    p = load_profile(name)
    owners = p.tensor_layer
    assert list(owners) == sorted(owners)  # forward order
    for t, i in zip(p.tensors, owners, strict=True):
        assert t.name.rsplit(".", 1) == [p.layers[i].name, t.name.rsplit(".", 1)[1]]
        assert t.name.endswith((".weight", ".bias"))


@pytest.mark.parametrize("name", sorted(PUBLISHED_TENSORS))
def test_graph_is_a_dag_in_forward_order(name):
    p = load_profile(name)
    g = p.graph()
    assert nx.is_directed_acyclic_graph(g)
    assert list(g.nodes) == [layer.name for layer in p.layers]
    index = p.layer_index
    assert all(index[u] < index[v] for u, v in g.edges)
    assert nx.is_weakly_connected(g)
    sources, sinks = SOURCES_SINKS.get(name, (None, None))
    if sources is not None:
        assert [n for n in g if g.in_degree(n) == 0] == sources
        assert [n for n in g if g.out_degree(n) == 0] == sinks
    assert p.is_chain == (name in {"vgg16", "vgg19", "alexnet"})


@pytest.mark.parametrize("depth", sorted(RESNET_BLOCKS))
def test_resnet_residual_edges(depth):
    p = load_profile(f"resnet{depth}")
    g = p.graph()
    joins = [n for n in g if g.in_degree(n) == 2]
    assert len(joins) == RESNET_BLOCKS[depth]
    assert all(n.endswith(("bn3", "bn2", "downsample.1")) for n in joins)
    assert max(d for _, d in g.in_degree) == 2


def test_inception_branches_join():
    g = load_profile("inception_v3").graph()
    # fc reads the six branch ends of Mixed_7c (1x1, 3x3 a/b, double 3x3 a/b, pool).
    assert g.in_degree("fc") == 6
    # Mixed_5c's four branches all start from the four branch ends of Mixed_5b.
    for first in ("branch1x1", "branch5x5_1", "branch3x3dbl_1", "branch_pool"):
        assert g.in_degree(f"Mixed_5c.{first}.conv") == 4


def test_transformer_blocks_read_their_residuals():
    g = load_profile("bert_base").graph()
    for i in range(12):
        attn_norm = f"encoder.layer.{i}.attention.output.LayerNorm"
        previous = "embeddings.LayerNorm" if i == 0 else f"encoder.layer.{i - 1}.output.LayerNorm"
        assert set(g.predecessors(attn_norm)) == {
            previous,
            f"encoder.layer.{i}.attention.output.dense",
        }
    g = load_profile("transformer_base").graph()
    memory = "encoder.layers.5.final_layer_norm"
    for i in range(6):
        assert set(g.predecessors(f"decoder.layers.{i}.encoder_attn.k_proj")) == {memory}


@pytest.mark.parametrize("name", sorted(PUBLISHED_TENSORS))
def test_times_follow_the_stated_provenance(name):
    p = load_profile(name)
    c = p.compute
    assert c.provenance == "estimated"
    assert c.throughput_tflops is not None
    assert "2 x forward" in c.note
    for layer in p.layers:
        assert layer.flops is not None
        assert layer.forward_ms == pytest.approx(
            layer.flops / (c.throughput_tflops * 1e9), abs=TIME_TOL
        )
        assert layer.backward_ms == pytest.approx(2 * layer.forward_ms, abs=2 * TIME_TOL)


def test_generator_reproduces_the_files(generator, tmp_path):
    assert generator.main(["--out", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("*.toml"))
    shipped = sorted(p.name for p in (REPO / "optsched" / "models").glob("*.toml"))
    assert written == shipped
    for name in written:
        assert (tmp_path / name).read_bytes() == (
            REPO / "optsched" / "models" / name
        ).read_bytes(), name
    assert generator.main(["--check"]) == 0


def test_generator_check_detects_a_stale_file(generator, tmp_path):
    assert generator.main(["--out", str(tmp_path), "alexnet"]) == 0
    path = tmp_path / "alexnet.toml"
    path.write_text(path.read_text().replace("forward_ms = ", "forward_ms = 1", 1))
    assert generator.main(["--out", str(tmp_path), "--check", "alexnet"]) == 1


@pytest.mark.parametrize("name", sorted(TORCHVISION_GMACS))
def test_conv_and_linear_macs_match_torchvision(generator, name):
    if name == "inception_v3":
        net = generator.inception_v3(aux=False)  # torchvision measures in eval mode
    else:
        net = generator.MODELS[name].build()
    gmacs = sum(layer.macs for layer in net.layers) / 1e9
    assert gmacs == pytest.approx(TORCHVISION_GMACS[name], abs=GMACS_TOL)


def test_inception_without_aux(generator):
    net = generator.inception_v3(aux=False)
    assert sum(math.prod(s) for layer in net.layers for _, s in layer.tensors) == 23_834_568
    assert not any(layer.name.startswith("AuxLogits") for layer in net.layers)


@pytest.mark.parametrize(
    ("name", "seq", "pattern"),
    [
        ("bert_base", 128, ("query", "key", "value", "dense")),
        ("gpt2_small", 1024, ("c_attn", "c_proj", "c_fc")),
        ("transformer_base", 128, ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")),
    ],
)
def test_linear_macs_are_tokens_times_weights(generator, name, seq, pattern):
    """A linear layer costs one multiply-accumulate per weight per token."""
    p = load_profile(name)
    weights = {t.name[: -len(".weight")]: t.params for t in p.tensors if t.name.endswith("weight")}
    net = generator.MODELS[name].build()
    checked = 0
    for layer in net.layers:
        if layer.name.rsplit(".", 1)[-1] in pattern:
            rows = 1 if layer.name == "pooler.dense" else seq
            assert layer.macs == rows * weights[layer.name], layer.name
            checked += 1
    assert checked >= 48


def test_shared_embedding_is_listed_once():
    p = load_profile("transformer_base")
    names = [t.name for t in p.tensors]
    assert names.count("encoder.embed_tokens.weight") == 1
    tied = {layer.name: layer.tensors for layer in p.layers}
    assert tied["decoder.embed_tokens"] == ()
    assert tied["decoder.output_projection"] == ()


@pytest.mark.parametrize("alias", ["ResNet-50", "resnet_50", "RESNET50", "resnet50"])
def test_names_are_looked_up_loosely(alias):
    assert load_profile(alias).name == "resnet50"


def test_summary_is_consistent():
    p = load_profile("bert_base")
    s = p.summary()
    assert s["n_tensors"] == len(p.tensors) == 199
    assert s["n_layers"] == len(p.layers)
    assert s["total_bytes"] == 4 * 109_482_240
    assert s["forward_ms"] == pytest.approx(sum(layer.forward_ms for layer in p.layers))
    assert s["largest_tensor"] == {
        "name": "embeddings.word_embeddings.weight",
        "params": 30522 * 768,
    }
    assert s["compute"]["provenance"] == "estimated"
