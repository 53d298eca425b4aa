"""Which solvers exist, found without importing them.

Availability is decided with :func:`importlib.util.find_spec` (Python packages) and
:func:`shutil.which` (executables), so asking is cheap and never loads a native library.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from functools import cache

__all__ = ["SOLVERS", "SolverInfo", "available_solvers", "require"]


@dataclass(frozen=True)
class SolverInfo:
    """A solver optsched knows how to call.

    Attributes
    ----------
    name : str
        The name users pass as ``solver=``.
    frontends : tuple of str
        The paths that reach it: ``"pyomo"`` (Pyomo models, :func:`optsched.solvers.solve`),
        ``"cvxpy"`` (cvxpy problems, the same function) and ``"matrix"``
        (:class:`~optsched.solvers.LinearProgram` through
        :func:`~optsched.solvers.solve_matrix`).
    mip : bool
        Whether it handles integer variables.
    module : str or None
        Python package that must be importable.
    executable : str or None
        Executable that must be on ``PATH``.
    install : str
        How to install it, shown when it is missing.
    """

    name: str
    frontends: tuple[str, ...]
    mip: bool
    module: str | None
    executable: str | None
    install: str


SOLVERS: dict[str, SolverInfo] = {
    info.name: info
    for info in (
        SolverInfo(
            "highs", ("pyomo", "cvxpy", "matrix"), True, "highspy", None, "pip install highspy"
        ),
        SolverInfo("appsi_highs", ("pyomo",), True, "highspy", None, "pip install highspy"),
        SolverInfo(
            "scip",
            ("pyomo", "cvxpy", "matrix"),
            True,
            "pyscipopt",
            None,
            "pip install 'optsched[scip]'",
        ),
        SolverInfo("cbc", ("pyomo",), True, None, "cbc", "apt-get install coinor-cbc"),
        SolverInfo("glpk", ("pyomo",), True, None, "glpsol", "apt-get install glpk-utils"),
        SolverInfo("clarabel", ("cvxpy",), False, "clarabel", None, "pip install clarabel"),
        SolverInfo("scs", ("cvxpy",), False, "scs", None, "pip install scs"),
    )
}


@cache
def _present(name: str) -> bool:
    info = SOLVERS[name]
    if info.module is not None and importlib.util.find_spec(info.module) is None:
        return False
    return not (info.executable is not None and shutil.which(info.executable) is None)


def available_solvers(frontend: str | None = None, mip: bool | None = None) -> list[str]:
    """Names of installed solvers, in preference order.

    Parameters
    ----------
    frontend : {"pyomo", "cvxpy", "matrix"}, optional
        Keep only solvers usable from this path.
    mip : bool, optional
        Keep only solvers that do (``True``) or need not (``None``) handle integers.

    Returns
    -------
    list of str

    Notes
    -----
    Imports nothing heavy: packages are looked up with ``importlib.util.find_spec``.
    """
    out = []
    for name, info in SOLVERS.items():
        if frontend is not None and frontend not in info.frontends:
            continue
        if mip and not info.mip:
            continue
        if _present(name):
            out.append(name)
    return out


def require(name: str, frontend: str) -> SolverInfo | None:
    """Check a solver can be used from ``frontend``; raise if it is known but missing.

    Returns the :class:`SolverInfo` for a known solver and ``None`` for a name optsched does not
    know (the frontend may still know it, e.g. any Pyomo ``SolverFactory`` name); the
    ``"matrix"`` path knows only its own backends, so there an unknown name raises.

    Raises
    ------
    SolverUnavailableError
        The solver is known but not installed, or cannot be used from ``frontend``.
    """
    from optsched.errors import SolverUnavailableError

    info = SOLVERS.get(name)
    if info is None:
        if frontend == "matrix":
            raise SolverUnavailableError(
                f"solver {name!r} cannot solve matrix models; use one of "
                f"{[n for n, i in SOLVERS.items() if frontend in i.frontends]}"
            )
        return None
    if frontend not in info.frontends:
        raise SolverUnavailableError(
            f"solver {name!r} cannot solve {frontend} models; use one of "
            f"{[n for n, i in SOLVERS.items() if frontend in i.frontends]}"
        )
    if not _present(name):
        raise SolverUnavailableError(
            f"solver {name!r} is not installed; install it with: {info.install}"
        )
    return info
