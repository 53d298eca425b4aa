r"""A wall-clock deadline shared by every solve of one command.

A time limit given to the command line bounds the *whole* command: reading the input, building
each model, handing it to the solver, solving, and writing. A family's ``solve(time_limit=...)``
bounds one solve; when several solves (``sim compare --exact`` solves one model per objective)
or a long load run under one command, each solve must only get what is left. The command
enters :func:`deadline` once; every solve path then clips its own limit with :func:`clip`:

.. math::

    \\text{limit}_\\text{solve} = \\min(\\text{limit}_\\text{asked},\\;
    t_\\text{deadline} - t_\\text{now}).

Outside a :func:`deadline` block :func:`clip` returns the limit asked, unchanged, so library
calls behave as documented on each ``solve``.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

__all__ = ["clip", "deadline", "remaining", "suspended"]

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "optsched_deadline", default=None
)


@contextlib.contextmanager
def deadline(seconds: float | None, *, started: float | None = None) -> Iterator[None]:
    """Bound every solve inside the block to ``seconds`` after ``started``.

    Parameters
    ----------
    seconds : float or None
        The budget; ``None`` sets no deadline (an enclosing one still holds).
    started : float, optional
        :func:`time.monotonic` at which the budget began (default: now), e.g. when the command
        started, so that reading its input counts.

    Examples
    --------
    >>> with deadline(60.0):
    ...     0 < remaining() <= 60.0
    True
    >>> remaining() is None
    True
    """
    if seconds is None:
        yield
        return
    start = time.monotonic() if started is None else started
    end = start + float(seconds)
    outer = _deadline.get()
    token = _deadline.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline in force (negative once passed), or ``None``."""
    end = _deadline.get()
    return None if end is None else end - time.monotonic()


def clip(time_limit: float | None) -> float | None:
    """``time_limit`` cut to what the deadline leaves (it may come back <= 0: nothing left).

    Examples
    --------
    >>> clip(5.0)
    5.0
    >>> with deadline(1.0):
    ...     clip(5.0) <= 1.0 and clip(None) <= 1.0
    True
    """
    left = remaining()
    if left is None:
        return time_limit
    return left if time_limit is None else min(float(time_limit), left)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Lift the deadline inside the block (work that must finish whatever the budget).

    ``sim compare`` runs its policies under it: a policy's round LPs are part of the policy,
    not of the exact solve the time limit is for, and cutting them short would lose rows.

    Examples
    --------
    >>> with deadline(1.0), suspended():
    ...     remaining() is None
    True
    """
    token = _deadline.set(None)
    try:
        yield
    finally:
        _deadline.reset(token)
