"""Hypothesis strategies of the traces family: normalized traces within the schema's bounds,
and the cell texts and garbage the readers must parse or refuse."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from optsched.traces import (
    EXTRA_COLUMNS,
    Trace,
)
from optsched.traces.schema import BOUNDS, build_frame

#: Printable text (no surrogates or control characters), possibly empty.
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=12)


def bounded_floats(bound: float, positive: bool) -> st.SearchStrategy[float]:
    """Finite floats in ``[0, bound]`` (``(0, bound]`` when ``positive``)."""
    low = 5e-324 if positive else 0.0
    return st.floats(low, bound, allow_nan=False, allow_infinity=False)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(0, 12))
    ids = draw(st.lists(TEXT.filter(bool), min_size=n, max_size=n, unique=True))
    arrival = sorted(
        draw(st.lists(bounded_floats(BOUNDS["arrival"] / 2, False), min_size=n, max_size=n))
    )
    columns: dict[str, list[object]] = {"job_id": ids, "arrival": arrival}
    columns["num_gpus"] = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n))
    columns["model"] = draw(st.lists(TEXT, min_size=n, max_size=n))
    for name in ("total_steps", "duration", "batch_size"):
        columns[name] = [
            draw(st.one_of(st.just(math.nan), bounded_floats(BOUNDS[name], True))) for _ in range(n)
        ]
    for i in range(n):  # every job needs one measure of its work
        if math.isnan(columns["total_steps"][i]) and math.isnan(columns["duration"][i]):  # type: ignore[arg-type]
            columns["duration"][i] = draw(bounded_floats(BOUNDS["duration"], True))
    columns["weight"] = draw(
        st.lists(bounded_floats(BOUNDS["weight"], True), min_size=n, max_size=n)
    )
    columns["deadline"] = [
        draw(st.one_of(st.just(math.nan), st.floats(a, BOUNDS["deadline"]))) for a in arrival
    ]
    columns["user"] = draw(st.lists(TEXT, min_size=n, max_size=n))
    extras = draw(st.lists(st.sampled_from(sorted(EXTRA_COLUMNS)), unique=True, max_size=3))
    extra: dict[str, list[object]] = {}
    for name in extras:
        if EXTRA_COLUMNS[name][0] == "str":
            extra[name] = draw(st.lists(TEXT, min_size=n, max_size=n))
        else:
            positive = name in {"slo_factor", "gpu_fraction"}
            extra[name] = [
                draw(st.one_of(st.just(math.nan), bounded_floats(BOUNDS[name], positive)))
                for _ in range(n)
            ]
    return Trace(build_frame(columns, extra), source="generated")


CSV_CELLS = st.one_of(
    st.sampled_from(
        ["", " ", "0", "-0", "1e3", "+2", "2.5", "1e999", "nan", "x", "a,b", '"q"', '"open']
    ),
    st.integers(-5, 10**7).map(str),
    st.floats(0, 1e13, allow_nan=False).map(repr),
)


READER_CELLS = st.one_of(
    st.sampled_from(["", " 5", "5 ", "0", "-0", "1e3", "1E3", "2.5", "1e999", "1_000", "nan", "x"]),
    st.integers(-5, 10**7).map(str),
    st.floats(0, 1e13, allow_nan=False).map(repr),
)


GARBAGE_TEXT = st.text(
    alphabet=st.sampled_from(list('0123456789.,-+eE\t "abcnaifINF:x\r')), max_size=60
)


HOSTILE_CELLS = st.one_of(
    st.sampled_from(
        ["", " ", " 1", "1 ", "0", "-0", "+2", "1e3", "1E-3", "1.", ".5", "5.e2", "1e", "e5",
         "1_000", "0x10", "nan", "NaN", "inf", "-inf", "1e999", "1e-999", "4.9e-324",
         "9007199254740993", "1" * 33, "0." + "0" * 40 + "1", "x", "a,b", '"q"', '"open',
         "\t", "a\rb", "\x00", "\x7f", "\u00a0", "\u2003", "\ufeff", "é", "\x1c"]
    ),
    st.integers(-5, 10**7).map(str),
    st.floats(0, 1e13, allow_nan=False).map(repr),
    st.text(max_size=6),
)  # fmt: skip


HOSTILE_LINES = st.sampled_from(
    ["", " ", "\t", "\u00a0", "\r", ",,,,,,,,,", "a,b", "\ufeff", "\x0c"]
)
