"""Hypothesis strategies of the solvers family."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from optsched.solvers.highs import LinearProgram


@st.composite
def bounded_lps(draw: st.DrawFn) -> LinearProgram:
    """Feasible, bounded LPs by construction: x in a box, rows satisfied by a drawn point."""
    n = draw(st.integers(1, 6))
    m = draw(st.integers(0, 5))
    coef = st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 2))
    c = np.array(draw(st.lists(coef, min_size=n, max_size=n)))
    a = np.array(draw(st.lists(st.lists(coef, min_size=n, max_size=n), min_size=m, max_size=m)))
    a = a.reshape(m, n)
    upper = np.array(draw(st.lists(st.floats(0.5, 10), min_size=n, max_size=n)))
    point = upper * np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    slack = np.array(draw(st.lists(st.floats(0, 3), min_size=m, max_size=m)))
    sense = draw(st.sampled_from(["min", "max"]))
    return LinearProgram(c, a, np.full(m, -np.inf), a @ point + slack, 0.0, upper, sense=sense)
