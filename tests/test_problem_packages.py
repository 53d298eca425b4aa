"""Each problem package re-exports its systems' public names (those no two systems share)."""

from __future__ import annotations

import importlib
from collections import Counter

import pytest

PROBLEMS = {
    "online": ("oasis", "aonline"),
    "comm": ("pace", "tensorlights"),
    "allocation": ("gavel", "themis", "optimus", "chronus", "andreas"),
}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_a_problem_package_re_exports_every_unshared_name(problem: str) -> None:
    package = importlib.import_module(f"optsched.{problem}")
    systems = PROBLEMS[problem]
    exports = {s: set(importlib.import_module(f"optsched.{problem}.{s}").__all__) for s in systems}
    counts = Counter(name for names in exports.values() for name in names)
    shared = {name for name, count in counts.items() if count > 1} - set(systems)
    assert shared == set(package.SHARED_NAMES)
    for system, names in exports.items():
        # the system itself, as a module (``from optsched.allocation import themis``)
        assert getattr(package, system).__name__ == f"optsched.{problem}.{system}"
        module = getattr(package, system)
        for name in names - shared - set(systems):
            assert name in package.__all__, (system, name)
            assert getattr(package, name) is getattr(module, name), (system, name)
    assert set(package.__all__) <= {*systems, *counts, "SHARED_NAMES"}
