"""The one definition of every Hypothesis strategy of the communication (PACE) family.

Every strategy builds valid inputs by construction (profiles from
:func:`optsched.comm.pace.generate.random_profile`, orders from ``random_order``, instances from
``generate_instance``), so a failing example is a defect of the code under test, not of the
strategy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from optsched.comm.pace import CommInstance, generate_instance
from optsched.comm.pace.cost import MB, CostModel
from optsched.comm.pace.dag import IterationDAG, build_dag
from optsched.comm.pace.generate import random_order, random_profile
from optsched.comm.pace.policies import CommPolicy, default_policies
from optsched.profiles import MAX_LAYER_MS, ComputeInfo, Layer, Profile, Tensor

Data = dict[str, Any]

__all__ = [
    "channel_inputs",
    "cost_models",
    "dag_cases",
    "float_jobs",
    "fusion_cases",
    "instances",
    "integer_jobs",
    "partition_dags",
    "policy_cases",
    "profile_dags",
    "profile_dicts",
]

SEEDS = st.integers(0, 2**31 - 1)


@st.composite
def float_jobs(draw: st.DrawFn, max_n: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(release, work, tail)`` of 1..max_n jobs; work at least 0.05 (LP conditioning)."""
    n = draw(st.integers(1, max_n))
    r = draw(st.lists(st.floats(0, 10), min_size=n, max_size=n))
    w = draw(st.lists(st.floats(0.05, 5), min_size=n, max_size=n))
    q = draw(st.lists(st.floats(0, 10), min_size=n, max_size=n))
    return np.array(r), np.array(w), np.array(q)


@st.composite
def integer_jobs(
    draw: st.DrawFn, max_n: int = 7, max_units: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer ``(release, work, tail)``: total work at most ``max_units`` unit slots."""
    n = draw(st.integers(1, max_n))
    budget = draw(st.integers(n, max(n, max_units)))
    w = np.ones(n)
    for _ in range(budget - n):
        w[draw(st.integers(0, n - 1))] += 1
    r = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=float)
    q = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=float)
    return r, w, q


def cost_models(max_alpha: float = 3.0) -> st.SearchStrategy[CostModel]:
    """Affine cost models: ``alpha`` in [0, max_alpha] ms, 0.01..5 ms per MB."""
    return st.builds(lambda a, b: CostModel(a, b / MB), st.floats(0, max_alpha), st.floats(0.01, 5))


@st.composite
def profile_dags(
    draw: st.DrawFn,
    max_layers: int = 10,
    max_tensors: int = 3,
    updates: tuple[float, ...] = (0.0, 0.3, 1.0),
) -> tuple[Profile, IterationDAG]:
    """A random chain or DAG profile, a random topological order, and its iteration DAG."""
    profile = random_profile(
        draw(SEEDS),
        layers=draw(st.integers(1, max_layers)),
        max_tensors=max_tensors,
        dag=draw(st.booleans()),
    )
    order = random_order(profile, draw(SEEDS))
    update = draw(st.sampled_from(updates))
    return profile, build_dag(profile, order=order, update_ms_per_mb=update)


@st.composite
def dag_cases(
    draw: st.DrawFn, max_layers: int = 10, max_tensors: int = 3
) -> tuple[IterationDAG, CostModel]:
    """An iteration DAG and a cost model."""
    _, dag = draw(profile_dags(max_layers=max_layers, max_tensors=max_tensors))
    return dag, draw(cost_models())


@st.composite
def fusion_cases(
    draw: st.DrawFn, max_layers: int = 4, max_tensors: int = 2
) -> tuple[IterationDAG, CostModel, float | None, int | None]:
    """A small DAG (brute force over groupings stays cheap), a cost model and fusion limits."""
    dag, cost = draw(dag_cases(max_layers=max_layers, max_tensors=max_tensors))
    limit_mb = draw(st.sampled_from([None, 1.0, 4.0, 16.0]))
    limit_tensors = draw(st.sampled_from([None, 1, 2, 3]))
    return dag, cost, limit_mb, limit_tensors


@st.composite
def channel_inputs(draw: st.DrawFn) -> tuple:
    """Raw arguments of the channel kernel (ties and tick-aligned releases are common)."""
    n = draw(st.integers(1, 25))
    rel = np.array(draw(st.lists(st.floats(0, 20), min_size=n, max_size=n)))
    if draw(st.booleans()):
        rel = np.round(rel)
    size = np.array(draw(st.lists(st.floats(0.1, 8), min_size=n, max_size=n)))
    prio = np.array(draw(st.permutations(range(n))), dtype=float)
    alpha = draw(st.floats(0, 1))
    beta = draw(st.floats(0, 2))
    preemptive = draw(st.booleans())
    fuse = draw(st.sampled_from([0.0, 5.0, 20.0]))
    cycle = draw(st.sampled_from([0.0, 0.0, 1.0, 2.5]))
    window = draw(st.sampled_from([0.0, 4.0, 12.0, math.inf]))
    return rel, size, prio, alpha, beta, preemptive, fuse, cycle, window


@st.composite
def partition_dags(draw: st.DrawFn) -> tuple[IterationDAG, CostModel]:
    """Integer instances: compute times in whole ms, tensors of whole 1 ms partitions.

    Each tensor is ``250 * s`` fp32 parameters (``1000 * s`` bytes) and the cost is 1 ms per
    1000 bytes with no fixed cost, so every release, tail and work is a whole number.
    """
    n_layers = draw(st.integers(1, 4))
    layers = []
    for i in range(n_layers):
        k = draw(st.integers(1 if i == 0 else 0, 2))
        sizes = [draw(st.integers(1, 2)) for _ in range(k)]
        layers.append(
            Layer(
                name=f"l{i}",
                forward_ms=draw(st.integers(0, 3)),
                backward_ms=draw(st.integers(0, 4)),
                tensors=tuple(
                    Tensor(name=f"l{i}.t{t}", params=250 * s) for t, s in enumerate(sizes)
                ),
            )
        )
    total = sum(t.params for layer in layers for t in layer.tensors)
    profile = Profile(
        name="p",
        display_name="p",
        source="test",
        total_params=total,
        compute=ComputeInfo(provenance="estimated", device="test", batch_size=1),
        layers=tuple(layers),
    )
    return build_dag(profile), CostModel(alpha_ms=0.0, beta_ms_per_byte=1e-3)


@st.composite
def policy_cases(draw: st.DrawFn) -> tuple[IterationDAG, CostModel, list[CommPolicy]]:
    """A DAG, a cost model and the six policies configured on equal terms."""
    profile = random_profile(
        draw(SEEDS),
        layers=draw(st.integers(1, 12)),
        max_tensors=draw(st.integers(1, 4)),
        dag=draw(st.booleans()),
        max_params=draw(st.sampled_from([10_000, 1_000_000, 20_000_000])),
    )
    order = random_order(profile, draw(SEEDS))
    dag = build_dag(profile, order=order, update_ms_per_mb=draw(st.sampled_from([0.0, 0.05])))
    cost = CostModel(draw(st.floats(0, 3)), draw(st.floats(0.001, 3)) / MB)
    policies = default_policies(
        partition_mb=draw(st.sampled_from([None, 0.5, 4.0])),
        fusion_mb=draw(st.sampled_from([1.0, 16.0, 64.0])),
        cycle_ms=draw(st.sampled_from([0.5, 5.0])),
    )
    return dag, cost, policies


@st.composite
def instances(draw: st.DrawFn, max_layers: int = 10) -> CommInstance:
    """A :func:`~optsched.comm.pace.generate_instance` (random inline profile, random cluster)."""
    return generate_instance(
        seed=draw(st.integers(0, 2**20)),
        layers=draw(st.integers(1, max_layers)),
        dag=draw(st.booleans()),
    )


@st.composite
def profile_dicts(draw: st.DrawFn) -> Data:
    """Valid profiles by construction: every input names an earlier layer, totals add up."""
    n = draw(st.integers(1, 12))
    layers: list[Data] = []
    total = 0
    for i in range(n):
        layer: Data = {
            "name": f"L{i}",
            "forward_ms": draw(st.floats(0, 50, allow_nan=False)),
            "backward_ms": draw(st.floats(0, 100, allow_nan=False)),
        }
        k = draw(st.integers(0, 3))
        params = draw(st.lists(st.integers(1, 10**7), min_size=k, max_size=k))
        if params:
            layer["tensors"] = [{"name": f"L{i}.t{j}", "params": q} for j, q in enumerate(params)]
        total += sum(params)
        if i and draw(st.booleans()):
            earlier = draw(st.sets(st.integers(0, i - 1), max_size=3))
            layer["inputs"] = [f"L{j}" for j in sorted(earlier)]
        layers.append(layer)
    if total == 0:  # a profile has at least one parameter
        layers[-1]["tensors"] = [{"name": "last.weight", "params": 1}]
        total = 1
    return {
        "name": "random",
        "display_name": "Random",
        "source": "hypothesis",
        "total_params": total,
        "dtype_bytes": draw(st.sampled_from([2, 4])),
        "compute": {"provenance": "measured", "device": "test", "batch_size": 8},
        "layers": layers,
    }


EXTREME_MS = st.sampled_from([0.0, 1e-300, 1e-6, 1.0, 1e6, MAX_LAYER_MS])


@st.composite
def extreme_instances(draw: st.DrawFn) -> dict[str, Any]:
    """Instances at the edges of every accepted range (some over the derived limits)."""
    n = draw(st.integers(1, 4))
    layers = []
    total = 0
    for i in range(n):
        k = draw(st.integers(1 if i == 0 else 0, 2))
        params = [draw(st.sampled_from([1, 10**6, 10**13])) for _ in range(k)]
        total += sum(params)
        layers.append(
            {
                "name": f"l{i}",
                "forward_ms": draw(EXTREME_MS),
                "backward_ms": draw(EXTREME_MS),
                "tensors": [{"name": f"l{i}.t{j}", "params": p} for j, p in enumerate(params)],
            }
        )
    profile = {
        "name": "edge",
        "display_name": "Edge",
        "source": "test",
        "total_params": total,
        "dtype_bytes": draw(st.sampled_from([1, 16])),
        "compute": {"provenance": "estimated", "device": "test", "batch_size": 1},
        "layers": layers,
    }
    return {
        "profile": profile,
        "workers": draw(st.sampled_from([1, 2, 10**6])),
        "bandwidth_gbps": draw(st.sampled_from([1e-6, 1.0, 1e6])),
        "latency_us": draw(st.sampled_from([0.0, 5.0, 1e9])),
        "overhead_us": draw(st.sampled_from([0.0, 1e9])),
        "update_ms_per_mb": draw(st.sampled_from([0.0, 1e6])),
        "max_group_mb": draw(st.sampled_from([None, 1e-300, 64.0, 1e12])),
    }


@st.composite
def dp_inputs(draw: st.DrawFn) -> tuple:
    """Raw kernel arguments; integer draws make ties (equal candidates) frequent."""
    n = draw(st.integers(1, 40))
    integer = draw(st.booleans())
    if integer:
        h = np.array(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)), dtype=float)
        nbytes = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=float)
        alpha = float(draw(st.integers(0, 3)))
        beta = float(draw(st.integers(0, 2)))
        max_bytes = draw(st.sampled_from([math.inf, 0.0, 3.0, 8.0, 20.0]))
    else:
        h = np.array(draw(st.lists(st.floats(0, 100), min_size=n, max_size=n)))
        if draw(st.booleans()):  # compute-dominated: h decreasing along consumption order
            h = np.sort(h)[::-1].copy()
        nbytes = np.array(draw(st.lists(st.floats(0, 50), min_size=n, max_size=n)))
        alpha = draw(st.sampled_from([0.0, 0.07, 1.0, 7.5]))
        beta = draw(st.sampled_from([0.0, 0.013, 0.5, 2.0]))
        max_bytes = draw(st.sampled_from([math.inf, 10.0, 60.0, 200.0]))
    max_tensors = draw(st.sampled_from([n, 1, 2, 3, 5]))
    prefix = np.concatenate([[0.0], np.cumsum(nbytes)])
    return h, prefix, alpha, beta, float(max_bytes), int(max_tensors)
