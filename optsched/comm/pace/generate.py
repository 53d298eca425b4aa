"""Seeded synthetic DNN profiles and execution orders (chains and general DAGs).

Used by the property tests and handy for exploring the schedulers on shapes the shipped
profiles do not cover. Every profile is valid by construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.profiles import ComputeInfo, Layer, Profile, Tensor

if TYPE_CHECKING:
    from optsched.comm.pace.instance import CommInstance

__all__ = ["generate_instance", "random_order", "random_profile"]

#: Bandwidths (Gbit/s) and worker counts :func:`generate_instance` draws from.
GENERATED_BANDWIDTHS_GBPS = (1.0, 2.5, 10.0, 25.0, 40.0, 100.0)
GENERATED_WORKERS = (2, 4, 8, 16, 32)


def generate_instance(
    *,
    seed: int,
    layers: int = 8,
    max_tensors: int = 3,
    dag: bool = True,
    max_params: int = 4_000_000,
    max_ms: float = 5.0,
) -> CommInstance:
    """A random instance: a :func:`random_profile` (inline) on a random cluster.

    Workers are drawn from :data:`GENERATED_WORKERS`, the bandwidth from
    :data:`GENERATED_BANDWIDTHS_GBPS`, the latency uniformly in [1, 20] us and the per-call
    overhead in [0, 50] us. The same seed gives the same instance (byte-identical JSON).

    Parameters
    ----------
    seed : int
        Random seed (>= 0).
    layers, max_tensors, dag, max_params, max_ms
        Passed to :func:`random_profile`.

    Returns
    -------
    CommInstance

    Raises
    ------
    InvalidInstanceError
        A negative seed or a bad profile parameter (named).

    Examples
    --------
    >>> generate_instance(seed=1) == generate_instance(seed=1)
    True
    """
    from optsched.comm.pace.instance import CommInstance

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidInstanceError("seed", f"must be an integer >= 0, got {seed!r}")
    profile = random_profile(
        int(seed),
        layers=layers,
        max_tensors=max_tensors,
        dag=dag,
        max_params=max_params,
        max_ms=max_ms,
    )
    rng = np.random.default_rng([int(seed), 1])
    return CommInstance(
        profile=profile,
        workers=int(rng.choice(GENERATED_WORKERS)),
        bandwidth_gbps=float(rng.choice(GENERATED_BANDWIDTHS_GBPS)),
        latency_us=round(float(rng.uniform(1.0, 20.0)), 3),
        overhead_us=round(float(rng.uniform(0.0, 50.0)), 3),
    )


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
    if not (isinstance(max_ms, (int, float)) and 0 <= max_ms <= 1e8):
        raise InvalidInstanceError("max_ms", f"must be a number in [0, 1e8], got {max_ms!r}")
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
        source="optsched.comm.pace.generate.random_profile",
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
