"""Hypothesis strategies of the solver layer: bounded LPs, small-box MILPs brute force can
enumerate, and the seeds of the HiGHS/SCIP cross-checks."""

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


@st.composite
def small_milps(draw: st.DrawFn) -> LinearProgram:
    """MILPs over a few variables with small integer boxes (so brute force is exact)."""
    n = draw(st.integers(1, 4))
    m = draw(st.integers(0, 4))
    coef = st.integers(-4, 4).map(float)
    c = np.array(draw(st.lists(coef, min_size=n, max_size=n)))
    a = np.array(draw(st.lists(coef, min_size=n * m, max_size=n * m))).reshape(m, n)
    lower = np.array(draw(st.lists(st.integers(-2, 0), min_size=n, max_size=n)), dtype=float)
    upper = lower + np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    kinds = draw(st.lists(st.sampled_from(["le", "ge", "eq", "free"]), min_size=m, max_size=m))
    rhs = np.array(draw(st.lists(st.integers(-3, 6), min_size=m, max_size=m)), dtype=float)
    row_lower = np.array(
        [r if k in ("ge", "eq") else -np.inf for k, r in zip(kinds, rhs, strict=True)]
    )
    row_upper = np.array(
        [r if k in ("le", "eq") else np.inf for k, r in zip(kinds, rhs, strict=True)]
    )
    return LinearProgram(
        c,
        a,
        row_lower,
        row_upper,
        lower,
        upper,
        sense=draw(st.sampled_from(["min", "max"])),
        integrality=np.ones(n, bool),
        offset=float(draw(st.integers(-5, 5))),
    )


seeds = st.integers(min_value=0, max_value=2**16)
