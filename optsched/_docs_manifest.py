"""What of the repository ships inside the wheel, beside the package: the docs and examples.

The files stay where they are in the repository (``docs/``, ``examples/``: one source of truth,
read by the tests, the README and the docs build); ``setup.py`` copies them at wheel-build time
into ``optsched/_docs/`` with the same layout, so that the relative paths between them keep
working (``literalinclude:: ../../examples/my_policy.py``, a figure's code reading
``tests/data/...`` from the docs' working directory, an experiment file's
``../../tests/data/...`` trace). ``optsched docs`` builds the HTML from that copy and
``optsched examples`` writes its ``examples/`` out. In a source checkout the repository itself
is that tree.

This module holds constants only: ``setup.py`` reads it by path (``runpy``) in a build
environment where optsched's dependencies are not installed.
"""

from __future__ import annotations

#: The package directory (under ``optsched/``) the wheel holds the tree in.
SHIPPED_DIR = "_docs"

#: Whole directories copied, relative to the repository's root.
TREES: tuple[str, ...] = ("docs", "examples")

#: Names never copied from :data:`TREES` (build products, caches, a study's outputs).
EXCLUDED: tuple[str, ...] = ("_build", "__pycache__", "runs", ".ipynb_checkpoints")

#: Single files the docs include or read (figures drawn at build time read the test data; the
#: Harmony guide includes a benchmark table), with the license and source note of each data set.
FILES: tuple[str, ...] = (
    "benchmarks/results/harmony.md",
    "tests/data/gavel/LICENSE",
    "tests/data/gavel/SOURCE.md",
    "tests/data/gavel/simulation_throughputs_alone.json",
    "tests/data/traces/elasticflow/LICENSE",
    "tests/data/traces/elasticflow/SOURCE.md",
    "tests/data/traces/elasticflow/cluster10_head40.csv",
    "tests/data/traces/gavel/LICENSE",
    "tests/data/traces/gavel/SOURCE.md",
    "tests/data/traces/gavel/msr_seed0_0e4a51_head40.trace",
    "tests/data/traces/gavel/physical_cluster_small_test.trace",
)
