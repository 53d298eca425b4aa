"""Hypothesis strategies for the placement family: valid instances and placements by construction.

One definition of each strategy; every placement test module imports them from here.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from optsched.placement import Placement, PlacementInstance, generate_instance

__all__ = [
    "EXTREME",
    "EXTREME_BANDWIDTH",
    "extreme_instances",
    "generated_instances",
    "placements",
    "server_choices",
    "tiny_instances",
]


@st.composite
def tiny_instances(
    draw: Any, max_tasks: int = 5, max_servers: int = 3, gpu_level: bool = False
) -> PlacementInstance:
    """Valid tiny instances by construction, often with interchangeable servers."""
    n_servers = draw(st.integers(1 if gpu_level else 2, max_servers))
    racks = not gpu_level and n_servers >= 2 and draw(st.booleans())
    servers: list[dict] = []
    for h in range(n_servers):
        if servers and draw(st.booleans()):
            server = {**servers[-1], "name": f"s{h}"}  # interchangeable with the previous one
        else:
            server = {
                "name": f"s{h}",
                "capacity": {
                    "gpu": float(draw(st.integers(1, 2))),
                    "cpu": float(draw(st.integers(3, 8))),
                },
                "nic_bandwidth_gbps": float(draw(st.sampled_from([10, 25]))),
                "nic_load_gbit": float(draw(st.sampled_from([0, 0, 0.5]))),
                "gpu_bandwidth_gbps": float(draw(st.sampled_from([16, 64]))),
                "residents": draw(st.sampled_from([[], [], ["A"]])),
            }
            if gpu_level and server["capacity"]["gpu"] == 2 and draw(st.booleans()):
                server["gpu_links"] = [{"a": 0, "b": 1, "bandwidth_gbps": 128.0}]
        if racks:
            server = {**server, "rack": f"r{h % 2}"}
        servers.append(server)
    cluster: dict = {"servers": servers}
    if racks:
        cluster["racks"] = [
            {"name": "r0", "uplink_bandwidth_gbps": float(draw(st.sampled_from([5, 10])))},
            {
                "name": "r1",
                "uplink_bandwidth_gbps": 5.0,
                "uplink_load_gbit": float(draw(st.sampled_from([0, 1]))),
            },
        ]
    jobs = []
    budget = max_tasks
    n_jobs = draw(st.integers(1, 3))
    for j in range(n_jobs):
        if budget <= 0:
            break
        workers = draw(st.integers(1, min(2, budget)))
        budget -= workers
        share = draw(st.sampled_from([0.5, 1.0]))
        job: dict = {
            "name": f"j{j}",
            "type": draw(st.sampled_from(["A", "B"])),
            "weight": float(draw(st.integers(1, 2))),
            "standalone_time_s": 1.0,
            "spread_penalty_s": float(draw(st.sampled_from([0, 0.2]))),
            "tasks": [
                {
                    "name": "w",
                    "count": workers,
                    "demand": {"gpu": share, "cpu": float(draw(st.integers(1, 3)))},
                }
            ],
        }
        pattern = draw(st.sampled_from(["ps", "ring", "none"]))
        if pattern == "ps" and budget >= 1:
            budget -= 1
            job["tasks"].append({"name": "ps", "role": "ps", "demand": {"cpu": 1.0}})
            job["communication"] = {"pattern": "ps", "volume_gbit": float(draw(st.integers(1, 4)))}
        elif pattern == "ring" and workers >= 2:
            job["communication"] = {
                "pattern": "ring",
                "volume_gbit": float(draw(st.integers(1, 4))),
            }
        jobs.append(job)
    names = [j["name"] for j in jobs]
    coefficients = []
    for a in names:
        for b in names:
            value = draw(st.sampled_from([0, 0, 0.1, 0.3])) if a != b else 0
            if value:
                coefficients.append({"a": a, "b": b, "coefficient": float(value)})
    types = {j["type"] for j in jobs} | {r for s in servers for r in s.get("residents", [])}
    typed = [
        {"a": a, "b": b, "coefficient": 0.05 * (1 + (a == b))}
        for a in sorted(types)
        for b in sorted(types)
        if draw(st.booleans())
    ]
    data = {
        "cluster": cluster,
        "jobs": jobs,
        "interference": coefficients,
        "type_interference": typed,
        "comm_weight": float(draw(st.sampled_from([0.5, 1.0]))),
    }
    return PlacementInstance.from_dict(data)


@st.composite
def generated_instances(
    draw: Any, max_jobs: int = 4, max_servers: int = 3, gpus: int = 2
) -> PlacementInstance:
    """Instances of :func:`~optsched.placement.generate_instance` with a drawn seed and size."""
    return generate_instance(
        draw(st.integers(1, max_jobs)),
        n_servers=draw(st.integers(1, max_servers)),
        gpus=gpus,
        seed=draw(st.integers(0, 10_000)),
    )


def server_choices(instance: PlacementInstance) -> st.SearchStrategy[list[int]]:
    """A server index per task (feasible or not), in ``instance.tasks`` order."""
    n = len(instance.tasks)
    return st.lists(st.integers(0, len(instance.servers) - 1), min_size=n, max_size=n)


@st.composite
def placements(draw: Any, instance: PlacementInstance) -> Placement:
    """Any assignment of every task to a server of ``instance`` (not necessarily feasible)."""
    return Placement.from_indices(instance, draw(server_choices(instance)), method="drawn")


#: Magnitudes at the edges of what a placement instance accepts (MAX_VALUE = 1e9).
EXTREME = (0.0, 1e-9, 1e-3, 1.0, 7.0, 1e6, 1e9)
#: Bandwidths at the edges of what a placement instance accepts (MIN_BANDWIDTH = 1e-3).
EXTREME_BANDWIDTH = (1e-3, 1.0, 1e9)


@st.composite
def extreme_instances(draw: Any, max_jobs: int = 3) -> PlacementInstance:
    """Valid instances whose numbers sit at the limits the instance accepts.

    Every demand fits (capacities are drawn first and demands as fractions of them), so the
    instance validates; the numbers span 18 orders of magnitude.
    """
    magnitude = st.sampled_from(EXTREME)
    bandwidth = st.sampled_from(EXTREME_BANDWIDTH)
    n_servers = draw(st.integers(1, 3))
    gpus = float(draw(st.integers(0, 2)))
    cpu = draw(st.sampled_from(EXTREME[1:]))
    servers = [
        {
            "name": f"s{h}",
            "capacity": {"gpu": gpus, "cpu": cpu},
            "nic_bandwidth_gbps": draw(bandwidth),
            "nic_load_gbit": draw(magnitude),
            "gpu_bandwidth_gbps": draw(bandwidth),
        }
        for h in range(n_servers)
    ]
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        count = draw(st.integers(1, 2))
        demand = {"cpu": cpu * draw(st.sampled_from([0.0, 0.25, 0.5]))}
        if gpus >= 1:
            demand["gpu"] = 1.0
        job: dict[str, Any] = {
            "name": f"j{j}",
            "type": draw(st.sampled_from(["A", "B"])),
            "weight": draw(magnitude),
            "standalone_time_s": draw(magnitude),
            "spread_penalty_s": draw(magnitude),
            "tasks": [{"name": "w", "count": count, "demand": demand}],
        }
        if count >= 2:
            job["communication"] = {"pattern": "ring", "volume_gbit": draw(magnitude)}
        jobs.append(job)
    names = [j["name"] for j in jobs]
    interference = [
        {"a": a, "b": b, "coefficient": c}
        for a in names
        for b in names
        if a != b and (c := draw(magnitude)) > 0
    ]
    data = {
        "cluster": {"servers": servers},
        "jobs": jobs,
        "interference": interference,
        "type_interference": [{"a": "A", "b": "B", "coefficient": draw(magnitude) or 1.0}]
        if {"A", "B"} <= {j["type"] for j in jobs}
        else [],
    }
    return PlacementInstance.from_dict(data)
