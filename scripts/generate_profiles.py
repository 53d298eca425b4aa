"""Generate the DNN workload profiles in ``optsched/models/*.toml`` from architecture definitions.

Every profile is derived here, in plain Python, from the network's definition: layer specs give
tensor shapes, shapes give exact parameter counts, and activation shapes give per-layer FLOPs.
Compute times are *estimated* from those FLOPs at a stated device throughput. Running the script
rewrites the files byte for byte, so the shipped profiles are reproducible::

    python scripts/generate_profiles.py               # rewrite optsched/models/*.toml
    python scripts/generate_profiles.py --check       # exit 1 if a file differs from its source
    python scripts/generate_profiles.py --out DIR resnet50 vgg16

Conventions
-----------
* Layers are the ops that own (or use) parameters: convolutions, BatchNorm, linear layers,
  embeddings, LayerNorm, attention projections. Names are the reference implementation's module
  names (torchvision, Hugging Face ``transformers``, fairseq), tensors are ``<module>.weight`` /
  ``<module>.bias``, in forward (execution) order.
* Parameter-free ops (ReLU, pooling, softmax, additions) are folded into the layer that produces
  their input, the latest one in forward order when several do. A residual addition is folded
  into the later of its two branch ends, which then reads both branches, so ``inputs`` keep the
  residual edges of the real DAG.
* FLOPs use the constants below; they are written per minibatch into each layer's ``flops``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO / "optsched" / "models"

# ---------------------------------------------------------------------------------------------
# Device and FLOP-counting conventions (stated in every profile's compute.note)
# ---------------------------------------------------------------------------------------------
DEVICE = "NVIDIA V100-SXM2 (fp32)"
#: Sustained fp32 throughput assumed for the V100: about 76% of its 15.7 TFLOPS peak, what large
#: cuDNN convolutions and cuBLAS GEMMs reach; small and memory-bound layers reach less.
THROUGHPUT_TFLOPS = 12.0
#: Backward = gradient w.r.t. the weights + gradient w.r.t. the inputs, each about one forward.
BACKWARD_FACTOR = 2
#: Times are rounded to the nanosecond so that the files are short and reproducible.
TIME_DECIMALS = 6
DTYPE_BYTES = 4  # fp32 gradients

FLOPS_PER_MAC = 2
BIAS_FLOPS = 1  # per output element
NORM_FLOPS = 7  # per element, training mode: mean 1, variance 2, normalise 2, scale and shift 2
RELU_FLOPS = 1
ADD_FLOPS = 1
TANH_FLOPS = 1
GELU_FLOPS = 8  # tanh approximation: cube, 3 multiplies, 2 adds, tanh
SOFTMAX_FLOPS = 5  # per score: max, subtract, exp, sum, divide
SCALE_FLOPS = 1  # per element, e.g. the 1/sqrt(d) of attention or the sqrt(d) of embeddings

NOTE = (
    "Estimated from FLOPs, not measured: forward_ms = the layer's forward FLOPs per minibatch / "
    f"{THROUGHPUT_TFLOPS:g} TFLOPS sustained (about 76% of the V100's 15.7 TFLOPS fp32 peak); "
    f"backward_ms = {BACKWARD_FACTOR} x forward_ms (the gradients with respect to the weights and "
    "to the inputs each cost about one forward pass). FLOPs: 2 per multiply-accumulate in "
    "convolutions, linear layers and attention products; 1 per output for a bias; "
    f"{NORM_FLOPS} per element for BatchNorm/LayerNorm in training mode; 1 per element for ReLU, "
    f"tanh, additions and scalings; {GELU_FLOPS} per element for GELU; {SOFTMAX_FLOPS} per "
    "attention score for softmax; k*k per output for k x k pooling and 1 per input for global "
    "average pooling; embedding lookups, concatenation and dropout count 0. Parameter-free ops "
    "are folded into the layer that produces their input (the latest in forward order when "
    "several do); a residual addition is folded into the later of its two branch ends, which "
    "lists both as inputs. FLOP-based times ignore memory traffic, so memory-bound layers "
    "(normalisation, embeddings) are underestimated."
)


# ---------------------------------------------------------------------------------------------
# A tiny graph builder: layers with tensor shapes and FLOPs, activations with shapes
# ---------------------------------------------------------------------------------------------
@dataclass
class LayerSpec:
    """One layer being built: its inputs, tensors (name, shape) and per-sample costs."""

    name: str
    inputs: list[str]
    tensors: list[tuple[str, tuple[int, ...]]]
    flops: int = 0  # forward FLOPs per sample, including folded parameter-free ops
    macs: int = 0  # multiply-accumulates of its own convolution/matmul, per sample


@dataclass(frozen=True)
class Act:
    """An activation: the layers whose outputs it is made of, and its per-sample shape."""

    sources: tuple[str, ...]
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class Net:
    """Layers in forward order; parameter-free ops charge their FLOPs to a neighbouring layer."""

    layers: list[LayerSpec] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def sources(self, acts: Sequence[Act]) -> list[str]:
        names = {s for a in acts for s in a.sources}
        return sorted(names, key=self.index.__getitem__)

    def add(
        self,
        name: str,
        inputs: Sequence[Act],
        tensors: Sequence[tuple[str, tuple[int, ...]]],
        shape: tuple[int, ...],
        *,
        flops: int,
        macs: int = 0,
    ) -> Act:
        if name in self.index:
            raise ValueError(f"duplicate layer {name!r}")
        spec = LayerSpec(name, self.sources(inputs), [(f"{name}.{t}", s) for t, s in tensors])
        spec.flops, spec.macs = flops, macs
        self.index[name] = len(self.layers)
        self.layers.append(spec)
        return Act((name,), shape)

    def latest(self, act: Act) -> LayerSpec:
        if not act.sources:
            raise ValueError("a parameter-free op on the network input has no layer to fold into")
        return self.layers[max(self.index[s] for s in act.sources)]

    def charge(self, act: Act, flops: int) -> None:
        """Fold a parameter-free op reading ``act`` into the latest layer producing it."""
        self.latest(act).flops += flops

    def residual(self, a: Act, b: Act) -> Act:
        """``a + b`` folded into the later branch end, which then reads the other branch too."""
        if a.shape != b.shape:
            raise ValueError(f"residual shapes differ: {a.shape} vs {b.shape}")
        order = self.index.__getitem__
        target, other = (
            (a, b) if order(self.latest(a).name) > order(self.latest(b).name) else (b, a)
        )
        if len(target.sources) != 1:
            raise ValueError("a residual addition folds into a single branch-end layer")
        spec = self.latest(target)
        spec.inputs = sorted(set(spec.inputs) | set(other.sources), key=order)
        spec.flops += ADD_FLOPS * a.numel
        return target


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


def _out(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


# --- parameter-owning ops --------------------------------------------------------------------
def conv2d(
    net: Net,
    x: Act,
    name: str,
    cout: int,
    kernel: int | tuple[int, int],
    stride: int = 1,
    pad: int | tuple[int, int] = 0,
    *,
    bias: bool = False,
) -> Act:
    """2-D convolution ``cin -> cout`` (torchvision's ``nn.Conv2d``), square stride."""
    cin, h, w = x.shape
    (kh, kw), (ph, pw) = _pair(kernel), _pair(pad)
    ho, wo = _out(h, kh, stride, ph), _out(w, kw, stride, pw)
    macs = cout * ho * wo * cin * kh * kw
    tensors = [("weight", (cout, cin, kh, kw))] + ([("bias", (cout,))] if bias else [])
    flops = FLOPS_PER_MAC * macs + (BIAS_FLOPS * cout * ho * wo if bias else 0)
    return net.add(name, [x], tensors, (cout, ho, wo), flops=flops, macs=macs)


def batchnorm(net: Net, x: Act, name: str) -> Act:
    """BatchNorm2d: a scale and a shift per channel (running statistics are buffers)."""
    c = x.shape[0]
    return net.add(
        name, [x], [("weight", (c,)), ("bias", (c,))], x.shape, flops=NORM_FLOPS * x.numel
    )


def linear(
    net: Net,
    x: Act | Sequence[Act],
    name: str,
    out: int,
    *,
    bias: bool = True,
    transposed: bool = False,
    tied: bool = False,
) -> Act:
    """``y = x W^T + b`` over the last axis.

    ``transposed`` stores W as (in, out) (GPT-2's Conv1D); ``tied`` uses a weight owned by an
    earlier layer (no tensor of its own).
    """
    acts = [x] if isinstance(x, Act) else list(x)
    shape = acts[0].shape
    d_in, tokens = shape[-1], math.prod(shape[:-1])
    macs = tokens * d_in * out
    tensors: list[tuple[str, tuple[int, ...]]] = []
    if not tied:
        tensors.append(("weight", (d_in, out) if transposed else (out, d_in)))
    if bias:
        tensors.append(("bias", (out,)))
    flops = FLOPS_PER_MAC * macs + (BIAS_FLOPS * tokens * out if bias else 0)
    return net.add(name, acts, tensors, (*shape[:-1], out), flops=flops, macs=macs)


def layernorm(net: Net, x: Act | Sequence[Act], name: str) -> Act:
    """LayerNorm over the last axis (reads every activation in ``x``: a folded addition)."""
    acts = [x] if isinstance(x, Act) else list(x)
    shape = acts[0].shape
    d = shape[-1]
    flops = NORM_FLOPS * math.prod(shape)
    return net.add(name, acts, [("weight", (d,)), ("bias", (d,))], shape, flops=flops)


def embedding(net: Net, name: str, vocab: int, dim: int, seq: int, *, tied: bool = False) -> Act:
    """A lookup table read by token ids (a source of the DAG: it reads no layer)."""
    tensors = [] if tied else [("weight", (vocab, dim))]
    return net.add(name, [], tensors, (seq, dim), flops=0)


# --- parameter-free ops (folded) -------------------------------------------------------------
def relu(net: Net, x: Act) -> Act:
    """ReLU (folded)."""
    net.charge(x, RELU_FLOPS * x.numel)
    return x


def gelu(net: Net, x: Act) -> Act:
    """GELU (folded)."""
    net.charge(x, GELU_FLOPS * x.numel)
    return x


def tanh(net: Net, x: Act) -> Act:
    """Tanh (folded)."""
    net.charge(x, TANH_FLOPS * x.numel)
    return x


def embed_scale_and_position(net: Net, x: Act) -> Act:
    """``x * sqrt(d) + sinusoidal positions`` (no parameters)."""
    net.charge(x, (SCALE_FLOPS + ADD_FLOPS) * x.numel)
    return x


def add(net: Net, a: Act, b: Act) -> Act:
    """``a + b`` whose result is read by a layer (it is not folded into a branch end)."""
    if a.shape != b.shape:
        raise ValueError(f"add shapes differ: {a.shape} vs {b.shape}")
    merged = Act(tuple(net.sources([a, b])), a.shape)
    net.charge(merged, ADD_FLOPS * a.numel)
    return merged


def pool(net: Net, x: Act, k: int, stride: int, pad: int = 0) -> Act:
    """Max or average ``k x k`` pooling (folded)."""
    c, h, w = x.shape
    out = Act(x.sources, (c, _out(h, k, stride, pad), _out(w, k, stride, pad)))
    net.charge(x, k * k * out.numel)
    return out


def global_pool(net: Net, x: Act, size: tuple[int, int] = (1, 1)) -> Act:
    """Adaptive average pooling to ``size`` (each input element is summed once)."""
    net.charge(x, x.numel)
    return Act(x.sources, (x.shape[0], *size))


def flatten(x: Act) -> Act:
    """Flatten to one axis (a view: no cost)."""
    return Act(x.sources, (x.numel,))


def concat(net: Net, acts: Sequence[Act]) -> Act:
    """Channel concatenation (costs nothing; the result reads every branch)."""
    c = sum(a.shape[0] for a in acts)
    return Act(tuple(net.sources(acts)), (c, *acts[0].shape[1:]))


def attention(net: Net, q: Act, kv: Sequence[Act], heads: int, d: int, sk: int) -> Act:
    """softmax(Q K^T / sqrt(d_head)) V for ``heads`` heads; Q has ``q.shape[0]`` rows."""
    sq = q.shape[0]
    scores = heads * sq * sk
    flops = (
        FLOPS_PER_MAC * sq * sk * d  # Q K^T over all heads
        + SCALE_FLOPS * scores
        + SOFTMAX_FLOPS * scores
        + FLOPS_PER_MAC * sq * sk * d  # weights x V
    )
    merged = Act(tuple(net.sources([q, *kv])), (sq, d))
    net.charge(merged, flops)
    return merged


# ---------------------------------------------------------------------------------------------
# Architectures
# ---------------------------------------------------------------------------------------------
RESNET_BLOCKS: dict[int, tuple[str, tuple[int, int, int, int]]] = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
    152: ("bottleneck", (3, 8, 36, 3)),
}


def resnet(depth: int, classes: int = 1000) -> Net:
    """ResNet as in torchvision (v1.5: the stride of a bottleneck is on its 3x3 convolution)."""
    kind, counts = RESNET_BLOCKS[depth]
    expansion = 4 if kind == "bottleneck" else 1
    net = Net()
    x = conv2d(net, Act((), (3, 224, 224)), "conv1", 64, 7, 2, 3)
    x = relu(net, batchnorm(net, x, "bn1"))
    x = pool(net, x, 3, 2, 1)
    inplanes = 64
    for stage, (planes, blocks) in enumerate(zip((64, 128, 256, 512), counts, strict=True), 1):
        for b in range(blocks):
            p = f"layer{stage}.{b}"
            stride = 2 if b == 0 and stage > 1 else 1
            if kind == "bottleneck":
                out = relu(net, batchnorm(net, conv2d(net, x, f"{p}.conv1", planes, 1), f"{p}.bn1"))
                out = conv2d(net, out, f"{p}.conv2", planes, 3, stride, 1)
                out = relu(net, batchnorm(net, out, f"{p}.bn2"))
                out = batchnorm(net, conv2d(net, out, f"{p}.conv3", planes * 4, 1), f"{p}.bn3")
            else:
                out = conv2d(net, x, f"{p}.conv1", planes, 3, stride, 1)
                out = relu(net, batchnorm(net, out, f"{p}.bn1"))
                out = batchnorm(net, conv2d(net, out, f"{p}.conv2", planes, 3, 1, 1), f"{p}.bn2")
            identity = x
            if b == 0 and (stride != 1 or inplanes != planes * expansion):
                identity = conv2d(net, x, f"{p}.downsample.0", planes * expansion, 1, stride)
                identity = batchnorm(net, identity, f"{p}.downsample.1")
            x = relu(net, net.residual(out, identity))
            inplanes = planes * expansion
    x = flatten(global_pool(net, x))
    linear(net, x, "fc", classes)
    return net


#: torchvision's configurations D and E: output channels of each 3x3 convolution, M = max-pool.
VGG_CONFIGS: dict[str, str] = {
    "vgg16": "64 64 M 128 128 M 256 256 256 M 512 512 512 M 512 512 512 M",
    "vgg19": "64 64 M 128 128 M 256 256 256 256 M 512 512 512 512 M 512 512 512 512 M",
}


def vgg(config: str, classes: int = 1000) -> Net:
    """VGG as in torchvision, no batch normalisation; ``features.<i>`` indexes its Sequential."""
    net = Net()
    x, i = Act((), (3, 224, 224)), 0
    for v in VGG_CONFIGS[config].split():
        if v == "M":
            x, i = pool(net, x, 2, 2), i + 1
        else:
            x = relu(net, conv2d(net, x, f"features.{i}", int(v), 3, 1, 1, bias=True))
            i += 2  # conv, ReLU
    x = flatten(global_pool(net, x, (7, 7)))
    x = relu(net, linear(net, x, "classifier.0", 4096))
    x = relu(net, linear(net, x, "classifier.3", 4096))
    linear(net, x, "classifier.6", classes)
    return net


def alexnet(classes: int = 1000) -> Net:
    """AlexNet as in torchvision (the single-tower variant of Krizhevsky's "one weird trick")."""
    net = Net()
    x = relu(net, conv2d(net, Act((), (3, 224, 224)), "features.0", 64, 11, 4, 2, bias=True))
    x = pool(net, x, 3, 2)
    x = relu(net, conv2d(net, x, "features.3", 192, 5, 1, 2, bias=True))
    x = pool(net, x, 3, 2)
    x = relu(net, conv2d(net, x, "features.6", 384, 3, 1, 1, bias=True))
    x = relu(net, conv2d(net, x, "features.8", 256, 3, 1, 1, bias=True))
    x = relu(net, conv2d(net, x, "features.10", 256, 3, 1, 1, bias=True))
    x = flatten(global_pool(net, pool(net, x, 3, 2), (6, 6)))
    x = relu(net, linear(net, x, "classifier.1", 4096))
    x = relu(net, linear(net, x, "classifier.4", 4096))
    linear(net, x, "classifier.6", classes)
    return net


def _basic(
    net: Net,
    x: Act,
    name: str,
    cout: int,
    kernel: int | tuple[int, int],
    stride: int = 1,
    pad: int | tuple[int, int] = 0,
) -> Act:
    """Inception's BasicConv2d: convolution without bias, BatchNorm, ReLU."""
    y = conv2d(net, x, f"{name}.conv", cout, kernel, stride, pad)
    return relu(net, batchnorm(net, y, f"{name}.bn"))


def _inception_a(net: Net, x: Act, p: str, pool_features: int) -> Act:
    b1 = _basic(net, x, f"{p}.branch1x1", 64, 1)
    b5 = _basic(net, x, f"{p}.branch5x5_1", 48, 1)
    b5 = _basic(net, b5, f"{p}.branch5x5_2", 64, 5, 1, 2)
    b3 = _basic(net, x, f"{p}.branch3x3dbl_1", 64, 1)
    b3 = _basic(net, b3, f"{p}.branch3x3dbl_2", 96, 3, 1, 1)
    b3 = _basic(net, b3, f"{p}.branch3x3dbl_3", 96, 3, 1, 1)
    bp = _basic(net, pool(net, x, 3, 1, 1), f"{p}.branch_pool", pool_features, 1)
    return concat(net, [b1, b5, b3, bp])


def _inception_b(net: Net, x: Act, p: str) -> Act:
    b3 = _basic(net, x, f"{p}.branch3x3", 384, 3, 2)
    bd = _basic(net, x, f"{p}.branch3x3dbl_1", 64, 1)
    bd = _basic(net, bd, f"{p}.branch3x3dbl_2", 96, 3, 1, 1)
    bd = _basic(net, bd, f"{p}.branch3x3dbl_3", 96, 3, 2)
    return concat(net, [b3, bd, pool(net, x, 3, 2)])


def _inception_c(net: Net, x: Act, p: str, c7: int) -> Act:
    b1 = _basic(net, x, f"{p}.branch1x1", 192, 1)
    b7 = _basic(net, x, f"{p}.branch7x7_1", c7, 1)
    b7 = _basic(net, b7, f"{p}.branch7x7_2", c7, (1, 7), 1, (0, 3))
    b7 = _basic(net, b7, f"{p}.branch7x7_3", 192, (7, 1), 1, (3, 0))
    bd = _basic(net, x, f"{p}.branch7x7dbl_1", c7, 1)
    bd = _basic(net, bd, f"{p}.branch7x7dbl_2", c7, (7, 1), 1, (3, 0))
    bd = _basic(net, bd, f"{p}.branch7x7dbl_3", c7, (1, 7), 1, (0, 3))
    bd = _basic(net, bd, f"{p}.branch7x7dbl_4", c7, (7, 1), 1, (3, 0))
    bd = _basic(net, bd, f"{p}.branch7x7dbl_5", 192, (1, 7), 1, (0, 3))
    bp = _basic(net, pool(net, x, 3, 1, 1), f"{p}.branch_pool", 192, 1)
    return concat(net, [b1, b7, bd, bp])


def _inception_d(net: Net, x: Act, p: str) -> Act:
    b3 = _basic(net, x, f"{p}.branch3x3_1", 192, 1)
    b3 = _basic(net, b3, f"{p}.branch3x3_2", 320, 3, 2)
    b7 = _basic(net, x, f"{p}.branch7x7x3_1", 192, 1)
    b7 = _basic(net, b7, f"{p}.branch7x7x3_2", 192, (1, 7), 1, (0, 3))
    b7 = _basic(net, b7, f"{p}.branch7x7x3_3", 192, (7, 1), 1, (3, 0))
    b7 = _basic(net, b7, f"{p}.branch7x7x3_4", 192, 3, 2)
    return concat(net, [b3, b7, pool(net, x, 3, 2)])


def _inception_e(net: Net, x: Act, p: str) -> Act:
    b1 = _basic(net, x, f"{p}.branch1x1", 320, 1)
    b3 = _basic(net, x, f"{p}.branch3x3_1", 384, 1)
    b3a = _basic(net, b3, f"{p}.branch3x3_2a", 384, (1, 3), 1, (0, 1))
    b3b = _basic(net, b3, f"{p}.branch3x3_2b", 384, (3, 1), 1, (1, 0))
    bd = _basic(net, x, f"{p}.branch3x3dbl_1", 448, 1)
    bd = _basic(net, bd, f"{p}.branch3x3dbl_2", 384, 3, 1, 1)
    bda = _basic(net, bd, f"{p}.branch3x3dbl_3a", 384, (1, 3), 1, (0, 1))
    bdb = _basic(net, bd, f"{p}.branch3x3dbl_3b", 384, (3, 1), 1, (1, 0))
    bp = _basic(net, pool(net, x, 3, 1, 1), f"{p}.branch_pool", 192, 1)
    return concat(net, [b1, b3a, b3b, bda, bdb, bp])


def inception_v3(classes: int = 1000, *, aux: bool = True) -> Net:
    """Inception3 as in torchvision, 299x299 input, with the auxiliary classifier when ``aux``."""
    net = Net()
    x = _basic(net, Act((), (3, 299, 299)), "Conv2d_1a_3x3", 32, 3, 2)
    x = _basic(net, x, "Conv2d_2a_3x3", 32, 3)
    x = _basic(net, x, "Conv2d_2b_3x3", 64, 3, 1, 1)
    x = pool(net, x, 3, 2)
    x = _basic(net, x, "Conv2d_3b_1x1", 80, 1)
    x = _basic(net, x, "Conv2d_4a_3x3", 192, 3)
    x = pool(net, x, 3, 2)
    x = _inception_a(net, x, "Mixed_5b", 32)
    x = _inception_a(net, x, "Mixed_5c", 64)
    x = _inception_a(net, x, "Mixed_5d", 64)
    x = _inception_b(net, x, "Mixed_6a")
    for p, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = _inception_c(net, x, p, c7)
    if aux:  # runs in training mode only, right after Mixed_6e
        a = _basic(net, pool(net, x, 5, 3), "AuxLogits.conv0", 128, 1)
        a = _basic(net, a, "AuxLogits.conv1", 768, 5)
        linear(net, flatten(global_pool(net, a)), "AuxLogits.fc", classes)
    x = _inception_d(net, x, "Mixed_7a")
    x = _inception_e(net, x, "Mixed_7b")
    x = _inception_e(net, x, "Mixed_7c")
    linear(net, flatten(global_pool(net, x)), "fc", classes)
    return net


def _self_attention_qkv(net: Net, x: Act, p: str, d: int, heads: int, kv: Act | None = None) -> Act:
    """Separate query/key/value projections (BERT, fairseq) and the attention product."""
    src = x if kv is None else kv
    names = ("query", "key", "value") if p.endswith(".self") else ("q_proj", "k_proj", "v_proj")
    q = linear(net, x, f"{p}.{names[0]}", d)
    k = linear(net, src, f"{p}.{names[1]}", d)
    v = linear(net, src, f"{p}.{names[2]}", d)
    return attention(net, q, [k, v], heads, d, src.shape[0])


def bert(layers: int, d: int, heads: int, ffn: int, seq: int, vocab: int = 30522) -> Net:
    """Hugging Face BertModel (post-LN encoder, GELU, pooler on the first token)."""
    net = Net()
    x = embedding(net, "embeddings.word_embeddings", vocab, d, seq)
    x = add(net, x, embedding(net, "embeddings.position_embeddings", 512, d, seq))
    x = add(net, x, embedding(net, "embeddings.token_type_embeddings", 2, d, seq))
    x = layernorm(net, x, "embeddings.LayerNorm")
    for i in range(layers):
        p = f"encoder.layer.{i}"
        a = _self_attention_qkv(net, x, f"{p}.attention.self", d, heads)
        a = linear(net, a, f"{p}.attention.output.dense", d)
        x = layernorm(net, add(net, a, x), f"{p}.attention.output.LayerNorm")
        h = gelu(net, linear(net, x, f"{p}.intermediate.dense", ffn))
        h = linear(net, h, f"{p}.output.dense", d)
        x = layernorm(net, add(net, h, x), f"{p}.output.LayerNorm")
    first = Act(x.sources, (1, d))  # the pooler reads the [CLS] token only
    tanh(net, linear(net, first, "pooler.dense", d))
    return net


def gpt2(layers: int, d: int, heads: int, seq: int, vocab: int = 50257) -> Net:
    """Hugging Face GPT2Model (pre-LN, Conv1D weights stored (in, out), no LM head)."""
    net = Net()
    x = add(net, embedding(net, "wte", vocab, d, seq), embedding(net, "wpe", 1024, d, seq))
    for i in range(layers):
        p = f"h.{i}"
        a = linear(net, layernorm(net, x, f"{p}.ln_1"), f"{p}.attn.c_attn", 3 * d, transposed=True)
        a = attention(net, Act(a.sources, (seq, d)), [], heads, d, seq)
        a = linear(net, a, f"{p}.attn.c_proj", d, transposed=True)
        x = net.residual(a, x)
        m = linear(net, layernorm(net, x, f"{p}.ln_2"), f"{p}.mlp.c_fc", 4 * d, transposed=True)
        m = linear(net, gelu(net, m), f"{p}.mlp.c_proj", d, transposed=True)
        x = net.residual(m, x)
    layernorm(net, x, "ln_f")
    return net


def transformer(
    layers: int, d: int, heads: int, ffn: int, vocab: int, src_len: int, tgt_len: int
) -> Net:
    """Vaswani et al. (2017) encoder-decoder, post-LN, with fairseq's module names.

    One embedding matrix is shared by the encoder, the decoder and the pre-softmax projection.
    """
    net = Net()
    x = embed_scale_and_position(net, embedding(net, "encoder.embed_tokens", vocab, d, src_len))
    for i in range(layers):
        p = f"encoder.layers.{i}"
        a = linear(
            net,
            _self_attention_qkv(net, x, f"{p}.self_attn", d, heads),
            f"{p}.self_attn.out_proj",
            d,
        )
        x = layernorm(net, add(net, a, x), f"{p}.self_attn_layer_norm")
        h = relu(net, linear(net, x, f"{p}.fc1", ffn))
        x = layernorm(net, add(net, linear(net, h, f"{p}.fc2", d), x), f"{p}.final_layer_norm")
    memory = x
    y = embedding(net, "decoder.embed_tokens", vocab, d, tgt_len, tied=True)
    y = embed_scale_and_position(net, y)
    for i in range(layers):
        p = f"decoder.layers.{i}"
        a = linear(
            net,
            _self_attention_qkv(net, y, f"{p}.self_attn", d, heads),
            f"{p}.self_attn.out_proj",
            d,
        )
        y = layernorm(net, add(net, a, y), f"{p}.self_attn_layer_norm")
        c = _self_attention_qkv(net, y, f"{p}.encoder_attn", d, heads, kv=memory)
        c = linear(net, c, f"{p}.encoder_attn.out_proj", d)
        y = layernorm(net, add(net, c, y), f"{p}.encoder_attn_layer_norm")
        h = relu(net, linear(net, y, f"{p}.fc1", ffn))
        y = layernorm(net, add(net, linear(net, h, f"{p}.fc2", d), y), f"{p}.final_layer_norm")
    linear(net, y, "decoder.output_projection", vocab, bias=False, tied=True)
    return net


# ---------------------------------------------------------------------------------------------
# The shipped profiles
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """A shipped profile: names, the architecture builder, and the minibatch it is timed at."""

    display_name: str
    source: str
    build: Callable[[], Net]
    batch_size: int
    minibatch: str  # what one sample is, for the note


_TV = "torchvision.models.{} (torchvision >= 0.13 definition), 1000 classes, {} input"
_RESNET = "; Bottleneck blocks carry their stride on the 3x3 convolution (ResNet v1.5)"
_IMG = "{} images of 3x224x224"
_TRANSFORMER_SOURCE = (
    "Vaswani et al. (2017), 'Attention Is All You Need', base model: post-LN encoder-decoder, "
    "6+6 layers, d_model 512, d_ff 2048, 8 heads, ReLU, sinusoidal positions (no parameters). "
    "Choices the paper leaves open: a shared source-target BPE vocabulary of exactly 37,000 "
    "tokens (the paper says 'about 37000'); one embedding matrix tied between the encoder "
    "input, the decoder input and the pre-softmax projection (as the paper describes), listed "
    "once under its first user encoder.embed_tokens; biases in every projection and no bias on "
    "the output projection, no final LayerNorm (fairseq transformer_wmt_en_de with "
    "share_all_embeddings). Total 63,082,496 (the paper's Table 3 rounds a differently counted "
    "base model to 65M)"
)

MODELS: dict[str, ModelSpec] = {
    "resnet18": ModelSpec(
        "ResNet-18", _TV.format("resnet18", "224x224"), lambda: resnet(18), 32, _IMG
    ),
    "resnet34": ModelSpec(
        "ResNet-34", _TV.format("resnet34", "224x224"), lambda: resnet(34), 32, _IMG
    ),
    "resnet50": ModelSpec(
        "ResNet-50", _TV.format("resnet50", "224x224") + _RESNET, lambda: resnet(50), 32, _IMG
    ),
    "resnet101": ModelSpec(
        "ResNet-101", _TV.format("resnet101", "224x224") + _RESNET, lambda: resnet(101), 32, _IMG
    ),
    "resnet152": ModelSpec(
        "ResNet-152", _TV.format("resnet152", "224x224") + _RESNET, lambda: resnet(152), 32, _IMG
    ),
    "vgg16": ModelSpec(
        "VGG-16",
        _TV.format("vgg16", "224x224") + "; configuration D without batch normalisation",
        lambda: vgg("vgg16"),
        32,
        _IMG,
    ),
    "vgg19": ModelSpec(
        "VGG-19",
        _TV.format("vgg19", "224x224") + "; configuration E without batch normalisation",
        lambda: vgg("vgg19"),
        32,
        _IMG,
    ),
    "alexnet": ModelSpec(
        "AlexNet",
        _TV.format("alexnet", "224x224")
        + "; the single-tower variant of Krizhevsky (2014), 'One weird trick'",
        alexnet,
        32,
        _IMG,
    ),
    "inception_v3": ModelSpec(
        "Inception-v3",
        _TV.format("inception_v3", "299x299")
        + "; WITH the auxiliary classifier (aux_logits=True, the default, active in training): "
        "27,161,264 parameters, 23,834,568 without it",
        inception_v3,
        32,
        "{} images of 3x299x299",
    ),
    "bert_base": ModelSpec(
        "BERT-base",
        "Hugging Face transformers BertModel with the bert-base-uncased configuration: "
        "vocabulary 30522, 512 positions, 2 token types, hidden 768, 12 layers, 12 heads, "
        "intermediate 3072; includes the pooler, no pre-training heads",
        lambda: bert(12, 768, 12, 3072, seq=128),
        32,
        "{} sequences of 128 tokens",
    ),
    "bert_large": ModelSpec(
        "BERT-large",
        "Hugging Face transformers BertModel with the bert-large-uncased configuration: "
        "vocabulary 30522, 512 positions, 2 token types, hidden 1024, 24 layers, 16 heads, "
        "intermediate 4096; includes the pooler, no pre-training heads",
        lambda: bert(24, 1024, 16, 4096, seq=128),
        32,
        "{} sequences of 128 tokens",
    ),
    "gpt2_small": ModelSpec(
        "GPT-2 small",
        "Hugging Face transformers GPT2Model with the gpt2 configuration: vocabulary 50257, "
        "1024 positions, n_embd 768, 12 layers, 12 heads; no LM head (GPT2LMHeadModel ties it "
        "to wte, so it adds no parameters)",
        lambda: gpt2(12, 768, 12, seq=1024),
        8,
        "{} sequences of 1024 tokens",
    ),
    "gpt2_medium": ModelSpec(
        "GPT-2 medium",
        "Hugging Face transformers GPT2Model with the gpt2-medium configuration: vocabulary "
        "50257, 1024 positions, n_embd 1024, 24 layers, 16 heads; no LM head (tied to wte)",
        lambda: gpt2(24, 1024, 16, seq=1024),
        4,
        "{} sequences of 1024 tokens",
    ),
    "transformer_base": ModelSpec(
        "Transformer-base",
        _TRANSFORMER_SOURCE,
        lambda: transformer(6, 512, 8, 2048, vocab=37000, src_len=128, tgt_len=128),
        32,
        "{} sentence pairs of 128 source and 128 target tokens",
    ),
}


def _ms(flops: int, factor: int = 1) -> float:
    # FLOPs / (TFLOPS * 1e12) seconds, in milliseconds.
    return round(factor * flops / (THROUGHPUT_TFLOPS * 1e9), TIME_DECIMALS)


def profile_dict(name: str) -> dict[str, Any]:
    """The profile of model ``name`` as the dict written to ``optsched/models/<name>.toml``."""
    spec = MODELS[name]
    net = spec.build()
    layers: list[dict[str, Any]] = []
    for i, layer in enumerate(net.layers):
        flops = layer.flops * spec.batch_size
        entry: dict[str, Any] = {
            "name": layer.name,
            "forward_ms": _ms(flops),
            "backward_ms": _ms(flops, BACKWARD_FACTOR),
            "flops": flops,
        }
        default = [net.layers[i - 1].name] if i else []
        if layer.inputs != default:  # omitted inputs mean "the previous layer"
            entry["inputs"] = layer.inputs
        if layer.tensors:
            entry["tensors"] = [
                {"name": t, "params": math.prod(shape)} for t, shape in layer.tensors
            ]
        layers.append(entry)
    total = sum(math.prod(s) for layer in net.layers for _, s in layer.tensors)
    return {
        "name": name,
        "display_name": spec.display_name,
        "source": spec.source,
        "total_params": total,
        "dtype_bytes": DTYPE_BYTES,
        "compute": {
            "provenance": "estimated",
            "device": DEVICE,
            "throughput_tflops": THROUGHPUT_TFLOPS,
            "batch_size": spec.batch_size,
            "note": f"Minibatch: {spec.minibatch.format(spec.batch_size)}. {NOTE}",
        },
        "layers": layers,
    }


def render(name: str) -> str:
    """The exact text of ``optsched/models/<name>.toml`` (validated as a profile first)."""
    data = profile_dict(name)
    from optsched._validation import parse
    from optsched.profiles import Profile

    parse(Profile, data, prefix=f"<{name}>")  # never write a file that does not load
    header = (
        f"# {data['display_name']}: generated by scripts/generate_profiles.py from the "
        "architecture definition; do not edit by hand.\n"
    )
    return header + tomli_w.dumps(data)


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the profile files; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "models", nargs="*", help=f"models to write (default: all of {list(MODELS)})"
    )
    parser.add_argument("--out", type=Path, default=MODELS_DIR, help="output directory")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; known: {sorted(MODELS)}")
    stale = []
    for name in args.models or list(MODELS):
        text = render(name)
        path = args.out / f"{name}.toml"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
