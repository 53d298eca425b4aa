"""Families: the declared protocol every problem family follows, and their registry.

:class:`Family` is what a family declares (its instance and solution types, generator, exact
``solve``, ``validate``, algorithms with one calling convention, objectives, a small instance);
:data:`FAMILIES` maps each family's name to its declaration, importing a family's package only
when its entry is read; :func:`family_for_kind` finds the family of an instance file.
"""

from optsched.family.registry import (
    FAMILIES,
    Algorithm,
    Family,
    family_for_kind,
    family_kinds,
    get_family,
    kind_of,
    register_family,
    solution_kinds,
)

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
