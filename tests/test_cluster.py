"""Cluster topology: validation with field names, builders, resource vectors, graph and paths."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched._validation import parse
from optsched.cluster import CORE, SWITCH, Cluster, Server, two_tier_cluster, uniform_cluster
from optsched.errors import InvalidInstanceError


def _cluster(data: dict) -> Cluster:
    return parse(Cluster, data)


def test_uniform_cluster_shape_and_resources():
    c = uniform_cluster(3, 4, cpus=32, memory=256, nic_bandwidth_gbps=10)
    assert [s.name for s in c.servers] == ["s0", "s1", "s2"]
    assert c.resources == ("gpu", "cpu", "memory")
    np.testing.assert_array_equal(c.capacity_matrix(), [[4, 32, 256]] * 3)
    assert all(s.gpus == 4 for s in c.servers)
    # A resource no server lists has capacity 0.
    np.testing.assert_array_equal(c.capacity_matrix(["disk", "gpu"]), [[0, 4]] * 3)


def test_resources_order_standard_first_then_alphabetical():
    c = _cluster(
        {"servers": [{"name": "a", "capacity": {"zeta": 1, "memory": 2, "alpha": 3, "gpu": 1}}]}
    )
    assert c.resources == ("gpu", "memory", "alpha", "zeta")


def test_two_tier_graph_is_a_tree_with_bandwidths():
    c = two_tier_cluster(2, 3, gpus=2, nic_bandwidth_gbps=25, uplink_bandwidth_gbps=40)
    g = c.graph()
    assert nx.is_tree(g)
    assert g.number_of_nodes() == 6 + 2 + 1
    assert g.edges["r0s1", "r0"]["bandwidth_gbps"] == 25
    assert g.edges["r1", CORE]["bandwidth_gbps"] == 40
    assert {d["kind"] for _, _, d in g.edges(data=True)} == {"nic", "uplink"}


def test_single_switch_graph():
    g = uniform_cluster(2).graph()
    assert set(g.nodes) == {"s0", "s1", SWITCH}
    assert nx.is_tree(g)


def test_graph_with_gpus_uses_pair_bandwidths():
    c = _cluster(
        {
            "servers": [
                {
                    "name": "n",
                    "capacity": {"gpu": 3},
                    "gpu_bandwidth_gbps": 16,
                    "gpu_links": [{"a": 0, "b": 1, "bandwidth_gbps": 300}],
                }
            ]
        }
    )
    g = c.graph(gpus=True)
    assert g.edges["n/gpu0", "n/gpu1"]["bandwidth_gbps"] == 300
    assert g.edges["n/gpu1", "n/gpu2"]["bandwidth_gbps"] == 16
    assert g.edges["n", "n/gpu2"]["kind"] == "gpu"
    server = c.servers[0]
    assert server.gpu_pair_bandwidth(1, 0) == 300
    assert server.gpu_pair_bandwidth(0, 2) == 16
    assert not server.gpus_interchangeable
    with pytest.raises(ValueError):
        server.gpu_pair_bandwidth(1, 1)


def test_path_crosses_uplinks_only_between_racks():
    c = two_tier_cluster(2, 2)
    assert [link.key for link in c.path("r0s0", "r0s1")] == [("nic", "r0s0"), ("nic", "r0s1")]
    assert [link.key for link in c.path("r1s1", "r0s0")] == [
        ("nic", "r1s1"),
        ("uplink", "r1"),
        ("uplink", "r0"),
        ("nic", "r0s0"),
    ]
    assert c.path("r0s0", "r0s0") == []


@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_path_matches_networkx_shortest_path(racks, per_rack, data):
    c = two_tier_cluster(racks, per_rack)
    names = [s.name for s in c.servers]
    a = data.draw(st.sampled_from(names))
    b = data.draw(st.sampled_from(names))
    g = c.graph()
    expected = nx.shortest_path(g, a, b)
    hops = c.path(a, b)
    # Every link on our path joins consecutive nodes of networkx's path.
    walked = {frozenset(e) for e in itertools.pairwise(expected)}
    assert {frozenset((link.lower, link.upper)) for link in hops} == walked


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"servers": []}, "servers"),
        ({"servers": [{"name": "a", "capacity": {"gpu": 1.5}}]}, "servers[0].capacity.gpu"),
        ({"servers": [{"name": "a", "capacity": {"cpu": -1}}]}, "servers[0].capacity.cpu"),
        (
            {"servers": [{"name": "a", "capacity": {}}, {"name": "a", "capacity": {}}]},
            "servers[1].name",
        ),
        ({"servers": [{"name": "a", "capacity": {}, "rack": "r"}]}, "servers[0].rack"),
        (
            {
                "servers": [{"name": "a", "capacity": {}}],
                "racks": [{"name": "r", "uplink_bandwidth_gbps": 1}],
            },
            "servers[0].rack",
        ),
        (
            {
                "servers": [{"name": "a", "capacity": {}, "rack": "q"}],
                "racks": [{"name": "r", "uplink_bandwidth_gbps": 1}],
            },
            "servers[0].rack",
        ),
        (
            {
                "servers": [{"name": "a", "capacity": {}, "rack": "r"}],
                "racks": [
                    {"name": "r", "uplink_bandwidth_gbps": 1},
                    {"name": "idle", "uplink_bandwidth_gbps": 1},
                ],
            },
            "racks[1]",
        ),
        (
            {"servers": [{"name": "a", "capacity": {}, "nic_bandwidth_gbps": 0}]},
            "servers[0].nic_bandwidth_gbps",
        ),
        (
            {
                "servers": [
                    {
                        "name": "a",
                        "capacity": {"gpu": 2},
                        "gpu_links": [{"a": 0, "b": 2, "bandwidth_gbps": 1}],
                    }
                ]
            },
            "servers[0].gpu_links[0].b",
        ),
        (
            {
                "servers": [
                    {
                        "name": "a",
                        "capacity": {"gpu": 2},
                        "gpu_links": [{"a": 1, "b": 1, "bandwidth_gbps": 1}],
                    }
                ]
            },
            "servers[0].gpu_links[0].b",
        ),
        ({"servers": [{"name": SWITCH, "capacity": {}}]}, "servers[0].name"),
        ({"servers": [{"name": "a", "capacity": {}, "colour": "red"}]}, "servers[0].colour"),
    ],
)
def test_invalid_clusters_name_the_field(data, field):
    with pytest.raises(InvalidInstanceError) as info:
        _cluster(data)
    assert info.value.field == field
    assert str(info.value).startswith(field)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: uniform_cluster(0), "n_servers"),
        (lambda: uniform_cluster(2, -1), "gpus"),
        (lambda: two_tier_cluster(0, 2), "n_racks"),
        (lambda: two_tier_cluster(2, 0), "servers_per_rack"),
    ],
)
def test_builders_reject_bad_sizes(call, field):
    with pytest.raises(InvalidInstanceError) as info:
        call()
    assert info.value.field == field


def test_links_cover_every_edge_once():
    c = two_tier_cluster(3, 2)
    keys = [link.key for link in c.links]
    assert len(keys) == len(set(keys)) == 6 + 3
    assert len(c.links) == c.graph().number_of_edges()
    assert Server(name="x", capacity={}).gpus == 0
