"""The house: what importing the placement family brings in, and its protocol names."""

from __future__ import annotations

import subprocess
import sys

import optsched.placement as placement

#: The family protocol (DESIGN "Anatomy of a family").
PROTOCOL = ("PlacementInstance", "generate_instance", "solve", "validate", "Placement")


def test_importing_placement_brings_in_neither_tensorlights_nor_scikit_learn():
    code = (
        "import sys, optsched.placement\n"
        "bad = sorted(m for m in sys.modules if m == 'sklearn' or m.startswith('sklearn.')"
        " or 'tensorlights' in m or m.startswith('optsched.interference'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert done.stdout.strip() == "", done.stdout


def test_importing_the_predictors_does_not_import_scikit_learn():
    code = "import sys, optsched.interference; print('sklearn' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert done.stdout.strip() == "False"


def test_the_family_exports_the_protocol():
    for name in PROTOCOL:
        assert name in placement.__all__ and hasattr(placement, name), name
    instance_type = placement.PlacementInstance
    for method in ("load", "save", "schema", "from_dict"):
        assert callable(getattr(instance_type, method)), method
    assert not hasattr(placement, "TensorLightsInstance")
    assert not hasattr(placement, "MatrixCompletion")
