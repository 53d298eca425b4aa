"""DNN workload profiles: gradient tensors and per-layer compute times (``optsched/models/``).

A profile lists a network's layers in forward (topological) order. Each layer carries the
gradient tensors it owns (in forward order, with exact parameter counts), its forward and
backward compute times with their provenance, and the layers whose outputs it reads (``inputs``;
omitted means "the previous layer", so chain models need no edges).

Profiles ship in the wheel as ``optsched.models/*.toml``; users load their own with
:func:`load_profile` on a path.
"""

from __future__ import annotations

import math
import re
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from optsched._validation import Frozen, load_data, parse
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "MAX_LAYER_MS",
    "MAX_PROFILE_MS",
    "MAX_TENSOR_PARAMS",
    "MAX_TOTAL_PARAMS",
    "ComputeInfo",
    "Layer",
    "Profile",
    "Tensor",
    "available_profiles",
    "load_profile",
    "profile_schema",
]

#: Largest compute time of one layer (ms) a profile may state: 10^9 ms is 11.6 days for one
#: op of one minibatch, far above any real network, and keeps every derived time (sums over
#: layers, channel times, simulator ticks) finite and exactly comparable in float64.
MAX_LAYER_MS = 1e9
#: Largest forward-plus-backward compute of a whole profile (ms), for the same reason.
MAX_PROFILE_MS = 1e12
#: Largest parameter count of one tensor (10^13: 40 TB of fp32 gradient).
MAX_TENSOR_PARAMS = 10**13
#: Largest parameter count of a profile; with at most 16 bytes per element the gradient bytes
#: stay below 2^53, so byte sums are exact in float64.
MAX_TOTAL_PARAMS = 10**14
#: Largest forward FLOPs of one layer (10^24); sums over layers stay finite.
MAX_LAYER_FLOPS = 1e24

LayerMs = Annotated[float, Field(ge=0, le=MAX_LAYER_MS, allow_inf_nan=False)]


class Tensor(Frozen):
    """One gradient tensor (= one parameter tensor).

    Attributes
    ----------
    name : str
        Unique within the profile, e.g. ``"layer1.0.conv1.weight"``.
    params : int
        Exact number of scalar parameters (>= 1); the gradient has ``params * dtype_bytes``
        bytes.
    """

    name: str = Field(min_length=1)
    params: int = Field(ge=1, le=MAX_TENSOR_PARAMS, description="Number of scalar parameters.")


class Layer(Frozen):
    """One layer (an op with parameters) of the network, in forward order.

    Parameter-free ops (activations, pooling, additions) are folded into a neighbouring layer's
    times; ``inputs`` keeps the DAG's real shape (residual edges, parallel branches).

    Attributes
    ----------
    name : str
        Unique layer name, e.g. ``"layer1.0.conv1"``.
    forward_ms, backward_ms : float
        Compute time of one minibatch in milliseconds (>= 0).
    flops : float or None
        Forward FLOPs of one minibatch, stated when the times are estimated from them.
    tensors : tuple of Tensor
        The gradient tensors this layer owns, in creation order (possibly none, e.g. a layer
        using a weight tied to an earlier layer's).
    inputs : tuple of str or None
        Earlier layers whose outputs this layer reads; ``None`` (omitted) means the previous
        layer, ``()`` a source that reads only the network's input.
    """

    name: str = Field(min_length=1)
    forward_ms: LayerMs = Field(description="Forward compute time of one minibatch (ms).")
    backward_ms: LayerMs = Field(description="Backward compute time of one minibatch (ms).")
    flops: Annotated[float, Field(ge=0, le=MAX_LAYER_FLOPS, allow_inf_nan=False)] | None = Field(
        default=None, description="Forward FLOPs per minibatch, when times are estimated."
    )
    tensors: tuple[Tensor, ...] = ()
    inputs: tuple[str, ...] | None = Field(
        default=None,
        description="Layers whose outputs this layer reads; omitted means the previous layer.",
    )


class ComputeInfo(Frozen):
    """Where the compute times come from.

    Attributes
    ----------
    provenance : {"measured", "estimated"}
        Timed on ``device``, or computed (``note`` says how).
    device : str
        The device the times are for, e.g. ``"NVIDIA V100-SXM2 (fp32)"``.
    throughput_tflops : float or None
        Sustained throughput (TFLOPS, > 0) assumed by times estimated from FLOPs.
    batch_size : int
        Per-worker minibatch size the times are for.
    note : str
        How the times were obtained.
    """

    provenance: Literal["measured", "estimated"]
    device: str = Field(min_length=1)
    throughput_tflops: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)] | None = Field(
        default=None, description="Sustained throughput assumed when times are estimated."
    )
    batch_size: int = Field(ge=1, le=10**9)
    note: str = ""


class Profile(Frozen):
    """A DNN workload profile.

    Attributes
    ----------
    name : str
        Identifier (file stem), e.g. ``"resnet50"``.
    display_name : str
        Human name, e.g. ``"ResNet-50"``.
    source : str
        The architecture definition the tensors were derived from.
    total_params : int
        Declared parameter total; validated to equal the sum over tensors.
    dtype_bytes : int
        Bytes per gradient element (4 for fp32).
    compute : ComputeInfo
        Provenance of the compute times.
    layers : tuple of Layer
        Layers in forward order.
    """

    name: str = Field(min_length=1)
    display_name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    total_params: int = Field(ge=1, le=MAX_TOTAL_PARAMS)
    dtype_bytes: int = Field(default=4, ge=1, le=16)
    compute: ComputeInfo
    layers: tuple[Layer, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        seen: dict[str, int] = {}
        tensor_names: set[str] = set()
        for i, layer in enumerate(self.layers):
            if layer.name in seen:
                raise InvalidInstanceError(
                    f"layers[{i}].name", f"duplicate layer name {layer.name!r}"
                )
            for j, src in enumerate(layer.inputs or ()):
                if src in (layer.inputs or ())[:j]:
                    raise InvalidInstanceError(
                        f"layers[{i}].inputs[{j}]", f"{src!r} is listed twice"
                    )
                if src not in seen:
                    raise InvalidInstanceError(
                        f"layers[{i}].inputs[{j}]",
                        f"{src!r} is not an earlier layer (layers are in forward order)",
                    )
            for j, t in enumerate(layer.tensors):
                if t.name in tensor_names:
                    raise InvalidInstanceError(
                        f"layers[{i}].tensors[{j}].name", f"duplicate tensor name {t.name!r}"
                    )
                tensor_names.add(t.name)
            seen[layer.name] = i
        total = sum(t.params for layer in self.layers for t in layer.tensors)
        if total != self.total_params:
            raise InvalidInstanceError(
                "total_params", f"declares {self.total_params} but the tensors sum to {total}"
            )
        # Each time is at most MAX_LAYER_MS, so these sums are finite (no overflow); their total
        # bounds every derived compute time.
        compute = math.fsum(x.forward_ms for x in self.layers) + math.fsum(
            x.backward_ms for x in self.layers
        )
        if compute > MAX_PROFILE_MS:
            raise InvalidInstanceError(
                "layers",
                f"forward_ms + backward_ms over all layers sum to {compute:.6g} ms, over the "
                f"limit {MAX_PROFILE_MS:g} ms of one iteration",
            )
        return self

    @cached_property
    def tensors(self) -> tuple[Tensor, ...]:
        """All gradient tensors in forward order."""
        return tuple(t for layer in self.layers for t in layer.tensors)

    @cached_property
    def tensor_layer(self) -> np.ndarray:
        """Index of the owning layer of each tensor (aligned with :attr:`tensors`)."""
        return np.array(
            [i for i, layer in enumerate(self.layers) for _ in layer.tensors], dtype=np.int64
        )

    @cached_property
    def tensor_bytes(self) -> np.ndarray:
        """Gradient size of each tensor in bytes (aligned with :attr:`tensors`)."""
        return np.array([t.params * self.dtype_bytes for t in self.tensors], dtype=np.float64)

    def layer_inputs(self, i: int) -> tuple[str, ...]:
        """Input layers of layer ``i`` (the previous layer when not given)."""
        layer = self.layers[i]
        if layer.inputs is not None:
            return layer.inputs
        return (self.layers[i - 1].name,) if i > 0 else ()

    @property
    def is_chain(self) -> bool:
        """Whether every layer reads exactly the previous one."""
        return all(
            self.layer_inputs(i) == ((self.layers[i - 1].name,) if i else ())
            for i in range(len(self.layers))
        )

    def graph(self) -> nx.DiGraph:
        """The forward layer DAG (nodes are layer names, in forward order)."""
        import networkx as nx

        g = nx.DiGraph()
        for i, layer in enumerate(self.layers):
            g.add_node(layer.name, index=i)
            for src in self.layer_inputs(i):
                g.add_edge(src, layer.name)
        return g

    @cached_property
    def layer_index(self) -> dict[str, int]:
        """Position of each layer in forward order, by name."""
        return {layer.name: i for i, layer in enumerate(self.layers)}

    @property
    def total_bytes(self) -> int:
        """Gradient bytes all-reduced per iteration, ``total_params * dtype_bytes``."""
        return self.total_params * self.dtype_bytes

    @property
    def forward_ms(self) -> float:
        """Forward compute time of one minibatch (sum over layers, ms)."""
        return math.fsum(layer.forward_ms for layer in self.layers)

    @property
    def backward_ms(self) -> float:
        """Backward compute time of one minibatch (sum over layers, ms)."""
        return math.fsum(layer.backward_ms for layer in self.layers)

    @property
    def flops(self) -> float | None:
        """Forward FLOPs of one minibatch, or ``None`` when a layer does not state its FLOPs."""
        if any(layer.flops is None for layer in self.layers):
            return None
        return math.fsum(layer.flops or 0.0 for layer in self.layers)

    def __repr__(self) -> str:
        return (
            f"Profile({self.name!r}, {len(self.layers)} layers, {len(self.tensors)} tensors, "
            f"{self.total_params:,} parameters)"
        )

    __str__ = __repr__

    def summary(self) -> dict[str, object]:
        """Headline figures, JSON-ready.

        Returns
        -------
        dict
            ``name``, ``display_name``, ``source``, ``total_params``, ``dtype_bytes``,
            ``total_bytes``, ``n_tensors``, ``n_layers``, ``is_chain``, ``largest_tensor``
            (name and params), ``forward_ms``, ``backward_ms``, ``flops`` (forward, per
            minibatch; ``None`` when not stated) and ``compute`` (the provenance block).
        """
        largest = max(self.tensors, key=lambda t: t.params, default=None)
        return {
            "name": self.name,
            "display_name": self.display_name,
            "source": self.source,
            "total_params": self.total_params,
            "dtype_bytes": self.dtype_bytes,
            "total_bytes": self.total_bytes,
            "n_tensors": len(self.tensors),
            "n_layers": len(self.layers),
            "is_chain": self.is_chain,
            "largest_tensor": (
                {"name": largest.name, "params": largest.params} if largest else None
            ),
            "forward_ms": self.forward_ms,
            "backward_ms": self.backward_ms,
            "flops": self.flops,
            "compute": self.compute.model_dump(),
        }


def _key(name: str) -> str:
    # "ResNet-50", "resnet_50" and "resnet50" all name the same profile.
    return re.sub(r"[^0-9a-z]", "", name.lower())


def available_profiles() -> list[str]:
    """Names of the profiles shipped in ``optsched/models/``."""
    root = resources.files("optsched.models")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """Load a shipped profile by name, or a profile file by path.

    Parameters
    ----------
    name_or_path : str or Path
        A name from :func:`available_profiles` (e.g. ``"resnet50"``) or a path to a ``.toml`` or
        ``.json`` file.

    Returns
    -------
    Profile

    Raises
    ------
    InvalidInstanceError
        Unknown name, unreadable file, or a field that fails validation (the message names it).

    Notes
    -----
    Names match loosely: case and punctuation are ignored, so ``"ResNet-50"`` finds
    ``resnet50``.

    Examples
    --------
    >>> p = load_profile("resnet50")
    >>> p.total_params, len(p.tensors), p.is_chain
    (25557032, 161, False)
    """
    path = Path(name_or_path)
    if path.suffix.lower() in {".toml", ".json"} or path.is_file():
        data = load_data(path)
    else:
        names = {_key(n): n for n in available_profiles()}
        name = names.get(_key(str(name_or_path)))
        if name is None:
            raise InvalidInstanceError(
                "model",
                f"unknown profile {str(name_or_path)!r} (and no such file); "
                f"known: {', '.join(available_profiles())}",
            )
        with resources.as_file(resources.files("optsched.models") / f"{name}.toml") as shipped:
            data = load_data(shipped)
        return parse(Profile, data)
    try:
        return parse(Profile, data)
    except InvalidInstanceError as exc:
        if exc.file is None:
            raise InvalidInstanceError(exc.field, exc.message, exc.errors, file=str(path)) from None
        raise


def profile_schema() -> dict[str, object]:
    """JSON Schema of a profile file."""
    return Profile.model_json_schema()
