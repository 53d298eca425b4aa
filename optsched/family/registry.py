"""The declared protocol of a family (:class:`Family`) and the registry of families.

A *family* is one scheduling problem with the same shape everywhere (the docs page "Anatomy of
a family"): an instance type read and written as a file whose ``kind`` names the family, a seeded
generator, an exact ``solve`` returning an :class:`~optsched.results.ExactResult`, algorithms
and heuristics with one calling convention returning the same solution type, and an independent
``validate`` returning a :class:`~optsched.results.Report`. Each family package declares itself
as a :class:`Family` named ``FAMILY`` (in its module ``family``), and the registry maps names
and instance kinds to those declarations.

The built-in families are listed here by module path and kind only: a family package is
imported the first time its :class:`Family` is asked for, so importing one family (or asking
which kinds exist, as ``optsched schema --list`` does) never loads the others or their
dependencies.

>>> from optsched.family import FAMILIES, family_for_kind
>>> "oasis" in FAMILIES and family_for_kind("oasis-instance") == "oasis"
True
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from optsched.errors import InvalidInstanceError

__all__ = [
    "FAMILIES",
    "Algorithm",
    "Family",
    "family_for_kind",
    "family_kinds",
    "get_family",
    "kind_of",
    "register_family",
    "solution_kinds",
]

#: ``ALGORITHMS[name](instance, *, seed=0) -> Solution``: the one calling convention.
Algorithm = Callable[..., Any]

#: Objective and algorithm names: lower case words joined by hyphens (``weighted-jct``).
_HYPHENATED = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: Family names: one lower-case word (they name packages and command-line arguments).
_NAME = re.compile(r"^[a-z][a-z0-9]*$")


# eq=False: a declaration is one object, compared and hashed by identity (its fields hold
# functions and a read-only mapping, which have no useful equality).
@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class Family:
    """What a family declares: its types, entry points, algorithms and objectives.

    Attributes
    ----------
    name : str
        The family's name (``"oasis"``, ``"placement"``): one lower-case word.
    package : str
        The package that implements it (``"optsched.online.oasis"``).
    kind : str
        The instance file's ``kind`` string (the value ``optsched validate`` dispatches on).
    Instance : type
        The instance type, with ``load``/``save``/``schema``/``from_dict``.
    Solution : type
        The one solution type: what ``solve(...).solution`` and every algorithm return.
    generate_instance : callable
        ``generate_instance(..., seed=...) -> Instance``: seeded random instances.
    solve : callable
        ``solve(instance, ...) -> ExactResult[Solution]``: the exact entry point.
    validate : callable
        ``validate(instance, solution) -> Report``: the independent validator.
    algorithms : Mapping of str to callable
        Algorithm name -> ``algorithm(instance, *, seed=0) -> Solution``: the published
        online algorithms, heuristics and baselines of the family, with default settings.
    objectives : tuple of str
        The objectives the family's exact models optimise (hyphenated names).
    small_instance : callable
        ``small_instance() -> Instance``: a fixed, seeded instance small enough that ``solve``
        and every algorithm finish in well under a second (tests, the wheel's smoke run).
    summary : str
        One line saying what the family decides.
    describe : callable, optional
        ``describe(instance) -> dict``: the instance's sizes (JSON-ready) for
        ``optsched validate``, after any check beyond construction (e.g. size budgets of the
        solvers), which raises :class:`~optsched.errors.InvalidInstanceError`.
    """

    name: str
    package: str
    kind: str
    Instance: type
    Solution: type
    generate_instance: Callable[..., Any]
    solve: Callable[..., Any]
    validate: Callable[..., Any]
    algorithms: Mapping[str, Algorithm]
    objectives: tuple[str, ...]
    small_instance: Callable[[], Any]
    summary: str
    describe: Callable[[Any], Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise InvalidInstanceError("name", f"must be one lower-case word, got {self.name!r}")
        if not isinstance(self.kind, str) or not self.kind:
            raise InvalidInstanceError("kind", f"must be a non-empty string, got {self.kind!r}")
        for attr in ("generate_instance", "solve", "validate", "small_instance"):
            if not callable(getattr(self, attr)):
                raise InvalidInstanceError(attr, "must be callable")
        for attr in ("Instance", "Solution"):
            if not isinstance(getattr(self, attr), type):
                raise InvalidInstanceError(attr, "must be a type")
        if not self.objectives or isinstance(self.objectives, str):
            raise InvalidInstanceError("objectives", "must be a non-empty tuple of names")
        for name in self.objectives:
            if not isinstance(name, str) or not _HYPHENATED.match(name):
                raise InvalidInstanceError(
                    "objectives", f"{name!r}: objective names are hyphenated lower-case words"
                )
        for name, algorithm in self.algorithms.items():
            if not isinstance(name, str) or not _HYPHENATED.match(name):
                raise InvalidInstanceError(
                    "algorithms", f"{name!r}: algorithm names are hyphenated lower-case words"
                )
            if not callable(algorithm):
                raise InvalidInstanceError(f"algorithms.{name}", "must be callable")
        # Read-only copies: a declared family does not change under its users.
        object.__setattr__(self, "objectives", tuple(self.objectives))
        object.__setattr__(self, "algorithms", MappingProxyType(dict(self.algorithms)))

    @property
    def solution_kind(self) -> str | None:
        """The ``kind`` string of the solution's file format, or ``None`` when it has none.

        A solution type with ``load``/``schema`` whose ``kind`` field has a default (e.g.
        ``"oasis-schedule"``) is a file format of its own; ``optsched schema`` lists it.
        """
        fields = getattr(self.Solution, "model_fields", None)
        if not fields or "kind" not in fields:
            return None
        default = fields["kind"].default
        return default if isinstance(default, str) else None

    @property
    def solution_files(self) -> bool:
        """Whether solutions are files (``Solution.load``), so ``optsched validate`` takes one."""
        return callable(getattr(self.Solution, "load", None))

    def run(self, algorithm: str, instance: Any, *, seed: int = 0) -> Any:
        """Run the algorithm called ``algorithm`` on ``instance``.

        Raises
        ------
        InvalidInstanceError
            Unknown algorithm name (field ``algorithm``, listing the known ones).
        """
        if algorithm not in self.algorithms:
            raise InvalidInstanceError(
                "algorithm",
                f"unknown algorithm {algorithm!r} of {self.name}; known: {sorted(self.algorithms)}",
            )
        return self.algorithms[algorithm](instance, seed=seed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (what ``optsched families --json`` prints per family)."""
        return {
            "name": self.name,
            "package": self.package,
            "kind": self.kind,
            "instance": f"{self.Instance.__module__}.{self.Instance.__qualname__}",
            "solution": f"{self.Solution.__module__}.{self.Solution.__qualname__}",
            "solution_kind": self.solution_kind,
            "objectives": list(self.objectives),
            "algorithms": sorted(self.algorithms),
            "summary": self.summary,
        }

    def __repr__(self) -> str:
        return (
            f"Family({self.name!r}, kind={self.kind!r}, objectives={list(self.objectives)}, "
            f"algorithms={sorted(self.algorithms)})"
        )


@dataclass(frozen=True)
class _Entry:
    """A built-in family before its package is imported: where it lives and its file kinds."""

    package: str
    kind: str
    solution_kind: str | None = None


#: The built-in families: name -> (package, instance kind, solution kind if solutions are files
#: of their own). Each package has a module ``family`` defining ``FAMILY``; the kinds are
#: listed here too so that kinds resolve without importing any family (checked on import).
_BUILTIN: dict[str, _Entry] = {
    "oasis": _Entry("optsched.online.oasis", "oasis-instance", "oasis-schedule"),
    "aonline": _Entry("optsched.online.aonline", "aonline-instance"),
    "pace": _Entry("optsched.comm.pace", "comm-instance"),
    "tensorlights": _Entry("optsched.comm.tensorlights", "tensorlights-instance"),
    "gavel": _Entry("optsched.allocation.gavel", "allocation-instance"),
    "optimus": _Entry("optsched.allocation.optimus", "optimus-instance"),
    "chronus": _Entry("optsched.allocation.chronus", "chronus-instance"),
    "andreas": _Entry("optsched.allocation.andreas", "andreas-instance"),
    "placement": _Entry("optsched.placement", "placement-instance", "placement"),
    # A world document says what it is in ``format`` (see :func:`kind_of`).
    "sim": _Entry("optsched.sim", "optsched.sim.world"),
}


class _Registry(Mapping[str, Family]):
    """Family name -> :class:`Family`, importing a built-in family on first access."""

    def __init__(self) -> None:
        self._pending: dict[str, _Entry] = dict(_BUILTIN)
        self._loaded: dict[str, Family] = {}
        self._order: list[str] = list(_BUILTIN)

    def __getitem__(self, name: str) -> Family:
        family = self._loaded.get(name)
        if family is not None:
            return family
        entry = self._pending.get(name)
        if entry is None:
            raise KeyError(name)
        module = importlib.import_module(f"{entry.package}.family")
        family = module.FAMILY
        if not isinstance(family, Family) or (
            family.name,
            family.package,
            family.kind,
            family.solution_kind,
        ) != (name, entry.package, entry.kind, entry.solution_kind):
            # A defect in the declaration or in the table, not bad input: fail loudly.
            raise TypeError(
                f"{entry.package}.family.FAMILY must be the Family {name!r} of {entry.package} "
                f"with kinds {entry.kind!r} and {entry.solution_kind!r}, got {family!r}"
            )
        self._loaded[name] = family
        del self._pending[name]
        return family

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._pending or name in self._loaded

    def kinds(self) -> dict[str, str]:
        """Instance kind -> family name, for every family (imports none)."""
        out = {e.kind: n for n, e in self._pending.items()}
        out.update({f.kind: n for n, f in self._loaded.items()})
        return out

    def solution_kinds(self) -> dict[str, str]:
        """Solution kind -> family name, for the families whose solutions are files."""
        out = {e.solution_kind: n for n, e in self._pending.items() if e.solution_kind}
        out.update({f.solution_kind: n for n, f in self._loaded.items() if f.solution_kind})
        return out

    def add(self, family: Family, *, replace: bool) -> None:
        if not isinstance(family, Family):
            raise TypeError(f"expected a Family, got {type(family).__name__}")
        name = family.name
        if name in self and not replace:
            raise InvalidInstanceError("name", f"a family {name!r} is already registered")
        owner = self.kinds().get(family.kind)
        if owner is not None and owner != name:
            raise InvalidInstanceError(
                "kind", f"the kind {family.kind!r} already belongs to the family {owner!r}"
            )
        self._pending.pop(name, None)
        self._loaded[name] = family
        if name not in self._order:
            self._order.append(name)

    def __repr__(self) -> str:
        return f"FAMILIES({', '.join(self._order)})"


#: Every registered family, name -> :class:`Family`, in registration order (the built-in
#: families first). Reading an entry imports that family's package.
FAMILIES: Mapping[str, Family] = _Registry()


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Add ``family`` to :data:`FAMILIES` (for families defined outside optsched).

    Parameters
    ----------
    family : Family
    replace : bool
        Replace a family of the same name instead of refusing.

    Returns
    -------
    Family
        ``family``, so the call can be used in an assignment.

    Raises
    ------
    InvalidInstanceError
        The name is taken (and ``replace`` is false), or another family owns its ``kind``.
    """
    assert isinstance(FAMILIES, _Registry)
    FAMILIES.add(family, replace=replace)
    return family


def get_family(name: str) -> Family:
    """The registered family called ``name``.

    Raises
    ------
    InvalidInstanceError
        No such family (field ``family``, listing the known ones).
    """
    if not isinstance(name, str) or name not in FAMILIES:
        raise InvalidInstanceError("family", f"unknown family {name!r}; known: {list(FAMILIES)}")
    return FAMILIES[name]


def family_kinds() -> dict[str, str]:
    """Instance kind -> family name, for every registered family (imports none)."""
    assert isinstance(FAMILIES, _Registry)
    return FAMILIES.kinds()


def solution_kinds() -> dict[str, str]:
    """Solution file kind -> family name (``"oasis-schedule"``, ``"placement"``; imports none)."""
    assert isinstance(FAMILIES, _Registry)
    return FAMILIES.solution_kinds()


def family_for_kind(kind: str) -> str:
    """The name of the family whose instance files have ``kind`` (no family is imported).

    Raises
    ------
    InvalidInstanceError
        No family has this kind (field ``kind``, listing the known ones).
    """
    kinds = family_kinds()
    if not isinstance(kind, str) or kind not in kinds:
        raise InvalidInstanceError(
            "kind", f"unknown instance kind {kind!r}; known: {sorted(kinds)}"
        )
    return kinds[kind]


#: The kind of an instance file that does not say (the first family's files had no ``kind``).
DEFAULT_KIND = "oasis-instance"


def kind_of(data: Any) -> str:
    """The kind a parsed instance file declares.

    The ``kind`` field, else the ``format`` field (world documents of the simulator), else
    :data:`DEFAULT_KIND`.

    Raises
    ------
    InvalidInstanceError
        ``kind`` (or ``format``) is present but not a string.
    """
    if not isinstance(data, Mapping):
        return DEFAULT_KIND
    for key in ("kind", "format"):
        if key in data:
            value = data[key]
            if not isinstance(value, str):
                raise InvalidInstanceError(key, f"must be a string, got {value!r}")
            return value
    return DEFAULT_KIND
