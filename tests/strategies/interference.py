"""Hypothesis strategies for the interference predictors."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from optsched.interference import (
    RESOURCES,
    InterferenceTruth,
)

__all__ = ["truths"]

R = len(RESOURCES)


@st.composite
def truths(draw: Any, max_types: int = 6) -> InterferenceTruth:
    """Ground truths with random profiles, weights and over-subscription weight."""
    n = draw(st.integers(1, max_types))
    unit = st.floats(0.0, 1.0)
    profiles = [[draw(unit) for _ in range(R)] for _ in range(n)]
    weights = [draw(st.floats(0.0, 0.5)) for _ in range(R)]
    return InterferenceTruth(
        profiles=np.array(profiles),
        standalone_times=np.ones(n),
        weights=np.array(weights),
        overflow=draw(st.floats(0.0, 2.0)),
    )


def partners(truth: InterferenceTruth, max_size: int = 4) -> st.SearchStrategy[list[int]]:
    """Lists of up to ``max_size`` type indices of ``truth`` (co-located partners)."""
    return st.lists(st.integers(0, truth.n_types - 1), max_size=max_size)
