"""The generic solver options every path checks the same way (limits, gap, threads)."""

from __future__ import annotations

__all__ = ["DEFAULT_MIP_GAP", "check_options"]

#: Relative MIP gap requested from the solver when the caller passes none: ten times tighter
#: than :data:`~optsched.tolerances.OPTIMALITY_GAP`, so that a solver stopping at its requested
#: gap is always within the tolerance at which optsched calls a result optimal.
DEFAULT_MIP_GAP = 1e-7


def check_options(time_limit: float | None, mip_gap: float | None, threads: int | None) -> None:
    """Refuse solver options that are not finite and in range, naming the option.

    Raises
    ------
    InvalidInstanceError
        ``time_limit`` not finite and > 0, ``mip_gap`` not finite and >= 0, ``threads`` not an
        integer >= 1.
    """
    import math

    from optsched.errors import InvalidInstanceError

    if time_limit is not None and not (
        isinstance(time_limit, (int, float)) and math.isfinite(time_limit) and time_limit > 0
    ):
        raise InvalidInstanceError("time_limit", f"must be a finite number > 0, got {time_limit!r}")
    if mip_gap is not None and not (
        isinstance(mip_gap, (int, float)) and math.isfinite(mip_gap) and mip_gap >= 0
    ):
        raise InvalidInstanceError("mip_gap", f"must be a finite number >= 0, got {mip_gap!r}")
    if threads is not None and not (
        isinstance(threads, int) and not isinstance(threads, bool) and threads >= 1
    ):
        raise InvalidInstanceError("threads", f"must be an integer >= 1, got {threads!r}")
