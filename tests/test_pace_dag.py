"""The iteration DAG: execution orders, release/tail times, and the networkx view."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.pace import profile_dags

from optsched.comm.pace.cost import MB
from optsched.comm.pace.dag import build_dag, execution_order
from optsched.errors import InvalidInstanceError
from optsched.profiles import ComputeInfo, Layer, Profile, Tensor, available_profiles, load_profile

TOL = 1e-9


def small_profile() -> Profile:
    # a -> b -> d and a -> c -> d (diamond); c has no parameters.
    layers = (
        Layer(name="a", forward_ms=1, backward_ms=2, tensors=(Tensor(name="a.w", params=10),)),
        Layer(
            name="b",
            forward_ms=2,
            backward_ms=4,
            tensors=(Tensor(name="b.w", params=20), Tensor(name="b.b", params=5)),
            inputs=("a",),
        ),
        Layer(name="c", forward_ms=3, backward_ms=6, inputs=("a",)),
        Layer(
            name="d",
            forward_ms=4,
            backward_ms=8,
            tensors=(Tensor(name="d.w", params=40),),
            inputs=("b", "c"),
        ),
    )
    return Profile(
        name="diamond",
        display_name="Diamond",
        source="test",
        total_params=75,
        compute=ComputeInfo(provenance="estimated", device="test", batch_size=1),
        layers=layers,
    )


def test_release_and_tail_by_hand():
    dag = build_dag(small_profile(), order=["a", "c", "b", "d"])
    assert dag.layers == ("a", "c", "b", "d")
    assert dag.tensors == ("a.w", "b.w", "b.b", "d.w")
    # Backward runs d, b, c, a: ends at 8, 12, 18, 20 (positions 3, 2, 1, 0).
    assert np.allclose(dag.release, [20, 12, 12, 8])
    # Stream after backward: a(1) c(3) b(2) d(4); tails from each tensor's layer.
    assert np.allclose(dag.tail, [10, 6, 6, 4])
    assert dag.compute_ms == pytest.approx(30)
    assert np.array_equal(dag.tensor_declared, [0, 1, 2, 3])
    assert np.allclose(dag.tensor_bytes, [40, 80, 20, 160])


def test_orders():
    p = small_profile()
    assert execution_order(p) == [0, 1, 2, 3]
    assert execution_order(p, "kahn") == [0, 1, 2, 3]
    with pytest.raises(InvalidInstanceError) as err:
        execution_order(p, ["a", "d", "b", "c"])
    assert err.value.field == "order[1]"
    with pytest.raises(InvalidInstanceError) as err:
        execution_order(p, ["a", "b", "x", "d"])
    assert err.value.field == "order[2]"
    with pytest.raises(InvalidInstanceError) as err:
        execution_order(p, ["a", "a", "b", "c", "d"])
    assert err.value.field == "order[1]"
    with pytest.raises(InvalidInstanceError) as err:
        execution_order(p, ["a", "b", "c"])
    assert err.value.field == "order"
    with pytest.raises(InvalidInstanceError) as err:
        execution_order(p, "bfs")
    assert err.value.field == "order"
    with pytest.raises(InvalidInstanceError) as err:
        build_dag(p, update_ms_per_mb=-1)
    assert err.value.field == "update_ms_per_mb"


@given(profile_dags())
def test_windows_are_nested(case):
    _, dag = case
    # Releases and tails both fall along consumption order (the fusion DP relies on it).
    assert np.all(np.diff(dag.release) <= TOL)
    assert np.all(np.diff(dag.tail) <= TOL)
    assert np.all(dag.release <= dag.backward_total + TOL)


@given(profile_dags())
def test_kahn_order_is_topological(case):
    profile, _ = case
    order = execution_order(profile, "kahn")
    g = profile.graph()
    names = [profile.layers[i].name for i in order]
    pos = {n: k for k, n in enumerate(names)}
    assert sorted(order) == list(range(len(profile.layers)))
    assert all(pos[u] < pos[v] for u, v in g.edges)


@settings(max_examples=30)
@given(profile_dags(), st.integers(0, 2**31 - 1))
def test_graph_longest_path_matches_stream_recurrence(case, seed):
    _, dag = case
    rng = np.random.default_rng(seed)
    completion = dag.release + rng.exponential(5.0, dag.n_tensors)
    stream = dag.iteration_time(completion)
    graph = dag.graph_makespan(completion)
    assert math.isclose(stream, graph, rel_tol=1e-12, abs_tol=1e-9)
    # The closed form of the module docstring.
    closed = max(dag.compute_ms, float(np.max(completion + dag.tail)))
    assert math.isclose(stream, closed, rel_tol=1e-12, abs_tol=1e-9)


@given(profile_dags())
def test_graph_structure(case):
    profile, dag = case
    g = dag.graph
    assert nx.is_directed_acyclic_graph(g)
    kinds = [d["kind"] for _, d in g.nodes(data=True)]
    n_layers, n = len(profile.layers), len(profile.tensors)
    assert kinds.count("B") == kinds.count("F") == n_layers
    assert kinds.count("A") == n
    assert kinds.count("U") == (n if np.any(dag.tensor_update_ms > 0) else 0)
    for j, name in enumerate(dag.tensors):
        layer = dag.layers[int(dag.tensor_position[j])]
        assert nx.has_path(g, ("B", layer), ("A", name))
        assert nx.has_path(g, ("A", name), ("F", layer))


def test_makespan_rejects_early_completion():
    dag = build_dag(small_profile())
    with pytest.raises(ValueError, match="before its gradient"):
        dag.graph_makespan(dag.release - 1.0)


def test_update_ops_run_before_the_consumer():
    dag = build_dag(small_profile(), update_ms_per_mb=MB)  # 1 ms per byte
    assert np.allclose(dag.tensor_update_ms, dag.tensor_bytes)
    assert dag.compute_ms == pytest.approx(30 + dag.tensor_bytes.sum())
    assert dag.stream_ops == (
        ("U", 0),
        ("F", 0),
        ("U", 1),
        ("U", 2),
        ("F", 1),
        ("F", 2),
        ("U", 3),
        ("F", 3),
    )
    # b.w's update may start as soon as b.w is reduced, before b.b arrives.
    completion = np.array([0.0, 0.0, 150.0, 0.0])
    sched = dag.stream_schedule(completion)
    # Backward ends at 20; U(a.w) 20-60; F(a) 60-61; U(b.w) 61-141; U(b.b) waits for 150.
    assert np.allclose(sched[:4], [[20, 60], [60, 61], [61, 141], [150, 170]])
    assert dag.iteration_time(completion) == pytest.approx(170 + 2 + 3 + 160 + 4)


@pytest.mark.parametrize("name", available_profiles())
def test_bundled_profiles_build(name):
    profile = load_profile(name)
    dag = build_dag(profile)
    assert dag.n_tensors == len(profile.tensors)
    assert dag.total_bytes == profile.total_params * profile.dtype_bytes
    assert dag.compute_ms == pytest.approx(profile.forward_ms + profile.backward_ms)
    kahn = build_dag(profile, order="kahn")
    assert sorted(kahn.tensors) == sorted(dag.tensors)
