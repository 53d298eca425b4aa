"""Where Pollux's artifact data is, and reading all of it at once.

The artifact's ``simulator/`` folder (github.com/petuum/adaptdl, branch ``osdi21-artifact``,
Apache-2.0) is not shipped with optsched beyond a test slice; a copy is named by an argument,
else by the environment variable :data:`ENV_VAR`, else found at :data:`DEFAULT_DIR` (where the
project's benchmarks unpack it). Its layout:

================================  ===============================================================
path                              content
================================  ===============================================================
``traces/<type>/``                one job type's measurements (:mod:`~optsched.goodput.traces`)
``workloads/workload-<n>.csv``    the 8 evaluation workloads (:mod:`~optsched.goodput.workload`)
``workloads-<load>/...``          the same at relative job load 0.5, 1.5 and 2.0
``workloads-realistic/...``       a variant the README does not describe (jobs as above)
================================  ===============================================================
"""

from __future__ import annotations

import os
from pathlib import Path

from optsched.errors import InvalidInstanceError
from optsched.goodput.traces import ARTIFACT_APPLICATIONS, ModelTraces, read_model_traces
from optsched.goodput.workload import PolluxWorkload, read_workload

__all__ = [
    "DEFAULT_DIR",
    "ENV_VAR",
    "WORKLOAD_VARIANTS",
    "read_job_types",
    "read_workload_of",
    "simulator_dir",
]

#: The environment variable naming a copy of the artifact's ``simulator/`` folder.
ENV_VAR = "OPTSCHED_POLLUX_SIMULATOR"
#: Where the project's benchmarks unpack it when no other copy is named.
DEFAULT_DIR = Path.home() / ".cache" / "optsched" / "pollux-src" / "simulator"
#: Workload variants: name -> folder.
WORKLOAD_VARIANTS: dict[str, str] = {
    "1.0": "workloads",
    "0.5": "workloads-0.5",
    "1.5": "workloads-1.5",
    "2.0": "workloads-2.0",
    "realistic": "workloads-realistic",
}


def simulator_dir(path: str | Path | None = None) -> Path:
    """The artifact's ``simulator/`` folder.

    ``path``, else ``$OPTSCHED_POLLUX_SIMULATOR``, else :data:`DEFAULT_DIR`.

    Raises
    ------
    InvalidInstanceError
        When the folder chosen has no ``traces/``, saying how to make a copy.
    """
    chosen = Path(path) if path is not None else Path(os.environ.get(ENV_VAR, DEFAULT_DIR))
    if not (chosen / "traces").is_dir():
        raise InvalidInstanceError(
            "<file>",
            f"{chosen} is not Pollux's simulator folder (no traces/ in it): name a copy of "
            "simulator/ from github.com/petuum/adaptdl, branch osdi21-artifact, with an "
            f"argument or {ENV_VAR}",
            file=str(chosen),
        )
    return chosen


def read_job_types(path: str | Path | None = None) -> dict[str, ModelTraces]:
    """Every job type the artifact's simulator runs, by name (see :func:`simulator_dir`)."""
    root = simulator_dir(path)
    return {name: read_model_traces(root / "traces" / name) for name in ARTIFACT_APPLICATIONS}


def read_workload_of(
    number: int, variant: str = "1.0", path: str | Path | None = None
) -> PolluxWorkload:
    """Workload ``number`` (1-8) of a variant of :data:`WORKLOAD_VARIANTS`."""
    if variant not in WORKLOAD_VARIANTS:
        raise InvalidInstanceError(
            "variant", f"must be one of {', '.join(WORKLOAD_VARIANTS)}, got {variant!r}"
        )
    if not 1 <= number <= 8:
        raise InvalidInstanceError("number", f"must be 1-8, got {number}")
    root = simulator_dir(path)
    return read_workload(root / WORKLOAD_VARIANTS[variant] / f"workload-{number}.csv")
