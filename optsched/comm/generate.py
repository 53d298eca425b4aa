"""Seeded synthetic DNN profiles and execution orders (chains and general DAGs).

Used by the property tests and handy for exploring the schedulers on shapes the shipped
profiles do not cover. Every profile is valid by construction.
"""

from __future__ import annotations

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.profiles import ComputeInfo, Layer, Profile, Tensor

__all__ = ["random_order", "random_profile"]


def random_profile(
    seed: int,
    *,
    layers: int = 8,
    max_tensors: int = 3,
    dag: bool = True,
    max_params: int = 4_000_000,
    max_ms: float = 5.0,
) -> Profile:
    """A random profile.

    Parameters
    ----------
    seed : int
        Random seed; the same seed gives the same profile.
    layers : int, default 8
        Number of layers (>= 1).
    max_tensors : int, default 3
        Each layer owns 0..max_tensors tensors; the first layer owns at least one, so every
        profile has a tensor.
    dag : bool, default True
        ``False`` gives a chain; ``True`` lets each layer read one to three earlier layers.
    max_params : int, default 4,000,000
        Parameters per tensor are drawn log-uniformly in ``[1, max_params]``.
    max_ms : float, default 5
        Forward times are uniform in ``[0, max_ms]``; backward is 1 to 3 times forward.

    Returns
    -------
    Profile

    Raises
    ------
    InvalidInstanceError
        ``layers < 1``, ``max_tensors < 1`` or ``max_params < 1``.
    """
    if layers < 1:
        raise InvalidInstanceError("layers", f"must be >= 1, got {layers}")
    if max_tensors < 1:
        raise InvalidInstanceError("max_tensors", f"must be >= 1, got {max_tensors}")
    if max_params < 1:
        raise InvalidInstanceError("max_params", f"must be >= 1, got {max_params}")
    rng = np.random.default_rng(seed)
    out: list[Layer] = []
    total = 0
    for i in range(layers):
        k = int(rng.integers(1 if i == 0 else 0, max_tensors + 1))
        tensors = []
        for t in range(k):
            params = int(np.exp(rng.uniform(0.0, np.log(max_params))))
            params = min(max(params, 1), max_params)
            total += params
            tensors.append(Tensor(name=f"layer{i}.t{t}", params=params))
        inputs: tuple[str, ...] | None = None
        if dag and i > 0:
            count = int(rng.integers(1, min(3, i) + 1))
            picks = sorted(rng.choice(i, size=count, replace=False).tolist())
            inputs = tuple(f"layer{p}" for p in picks)
        fwd = float(rng.uniform(0.0, max_ms))
        out.append(
            Layer(
                name=f"layer{i}",
                forward_ms=fwd,
                backward_ms=fwd * float(rng.uniform(1.0, 3.0)),
                tensors=tuple(tensors),
                inputs=inputs,
            )
        )
    return Profile(
        name=f"random{seed}",
        display_name=f"Random {'DAG' if dag else 'chain'} {seed}",
        source="optsched.comm.generate.random_profile",
        total_params=total,
        compute=ComputeInfo(provenance="estimated", device="synthetic", batch_size=1),
        layers=tuple(out),
    )


def random_order(profile: Profile, seed: int) -> list[str]:
    """A random topological order of ``profile``'s layers (uniform choice among ready layers).

    Parameters
    ----------
    profile : Profile
    seed : int

    Returns
    -------
    list of str
        Layer names.
    """
    rng = np.random.default_rng(seed)
    names = [layer.name for layer in profile.layers]
    preds = [set(profile.layer_inputs(i)) for i in range(len(names))]
    done: set[str] = set()
    order: list[str] = []
    while len(order) < len(names):
        ready = [n for i, n in enumerate(names) if n not in done and preds[i] <= done]
        pick = ready[int(rng.integers(len(ready)))]
        order.append(pick)
        done.add(pick)
    return order
