"""Hypothesis strategies for rounds of Pollux's problem (:mod:`optsched.goodput.round_model`).

One definition of each strategy; the round-model and Pollux-policy tests import them from here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from optsched.goodput.round_model import RoundInstance, generate_instance

__all__ = ["FAIRNESS_EXPONENTS", "any_states", "tiny_rounds"]

#: Fairness exponents tried: Pollux's -1, fairer and less fair, and a positive one.
FAIRNESS_EXPONENTS = (-1.0, -2.0, -0.5, 1.0)


@st.composite
def tiny_rounds(
    draw: Any, max_jobs: int = 3, max_nodes: int = 3, max_gpus: int = 4
) -> RoundInstance:
    """Rounds small enough to enumerate (random speedups, bounds, penalties, previous allocation).

    1 to ``max_jobs`` jobs on 2 to ``max_nodes`` nodes of 2 to ``max_gpus`` GPUs (2 GPUs when
    there are more than 2 nodes, to keep the enumeration small).
    """
    num_nodes = draw(st.integers(2, max_nodes))
    # three nodes of two GPUs already make two spanning jobs compete for a node
    gpus = draw(st.integers(2, max_gpus if num_nodes == 2 else 2))
    return generate_instance(
        draw(st.integers(1, max_jobs)),
        num_nodes=num_nodes,
        gpus_per_node=gpus,
        seed=draw(st.integers(0, 2**31 - 1)),
        p=draw(st.sampled_from(FAIRNESS_EXPONENTS)),
    )


@st.composite
def any_states(draw: Any, instance: RoundInstance, count: int = 8) -> np.ndarray:
    """``count`` arbitrary (mostly infeasible) ``(J, n)`` matrices with entries in ``[0, G]``."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    shape = (count, instance.num_jobs, instance.num_nodes)
    return rng.integers(0, instance.gpus_per_node + 1, size=shape).astype(np.int64)
