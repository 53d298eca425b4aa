"""Names a package re-exports from its heavy modules, imported on first use (PEP 562).

A package ``__init__`` that imports every module it re-exports makes ``import optsched.sim``
pay for SciPy, Numba and pandas even when the caller only simulates FIFO. With :func:`attach`
the package lists such names in a table instead; the module that defines a name is imported
the first time the name is read (``optsched.sim.FAMILY``, ``from optsched.sim import FAMILY``),
and the value is then stored on the package so that later reads are plain attribute reads.
``dir(package)`` still lists every name. The package imports the same names under
``if TYPE_CHECKING:`` so that type checkers and readers see where each one comes from.

A lazy name must not be the name of one of the package's submodules: importing the submodule
binds that name on the package to the submodule, and the table would never be consulted.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["EXPORTS", "attach"]

#: Every package's table of lazy names, by package name (read by the tests).
EXPORTS: dict[str, Mapping[str, str]] = {}


def attach(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for its lazy names.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Name -> ``"module"`` (the name is that module's attribute of the same name),
        ``"module:attr"`` (another attribute of it, for a name re-exported under an alias), or
        the package's submodule of that name (``"optsched.allocation.gavel"`` for ``gavel`` in
        ``optsched.allocation``): the module itself.

    Returns
    -------
    tuple of callables
        ``(__getattr__, __dir__)``, to assign at the package's module level.
    """
    EXPORTS[package] = exports

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = importlib.import_module(module)
        if module != f"{package}.{name}":
            value = getattr(value, attr or name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
