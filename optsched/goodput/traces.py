"""Pollux's per-model measurements: step times by placement and gradient statistics by epoch.

Source: ``simulator/traces/<model>/`` of github.com/petuum/adaptdl, branch ``osdi21-artifact``
(Apache-2.0), for the six job types of the paper's simulator (``bert``, ``cifar10``,
``deepspeech2``, ``imagenet``, ``ncf``, ``yolov3``). Three kinds of CSV, each with a header:

``placements.csv`` (step times measured on a testbed of 4-GPU nodes)
    ``placement``: GPUs per node, one digit per node (``"22"``: 2 GPUs on each of 2 nodes);
    ``local_bsz``: the per-GPU batch; ``step_time``: seconds of one synchronizing step;
    ``sync_time``: the seconds of it spent in all-reduce.
``scalability.csv`` (larger allocations, by counts only)
    ``num_nodes``, ``num_replicas``, ``local_bsz``, ``step_time``, ``sync_time``.
``validation-<M>.csv`` (one training run at global batch ``M``, one row per epoch)
    ``progress``: cumulative progress at the end of the epoch, in :math:`M_0`-iterations
    (efficiency-weighted); ``iteration``: cumulative optimizer steps; ``metric``: the
    validation metric; ``grad_sqr``, ``grad_var``: the gradient statistics measured during
    the epoch (:class:`~optsched.goodput.efficiency.GradientStats`).

The artifact's simulator configures each type beyond its traces (:data:`ARTIFACT_APPLICATIONS`):
the epochs a job trains, and for ``yolov3`` a per-GPU batch limit of 8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError
from optsched.goodput.batch import BatchLimits
from optsched.traces._header import HeaderCSV
from optsched.traces._rows import Rows

__all__ = [
    "ARTIFACT_APPLICATIONS",
    "PLACEMENT_COLUMNS",
    "SCALABILITY_COLUMNS",
    "VALIDATION_COLUMNS",
    "ModelTraces",
    "ValidationRun",
    "read_model_traces",
    "write_model_traces",
]

FloatArray = npt.NDArray[np.float64]

PLACEMENT_COLUMNS = ["placement", "local_bsz", "step_time", "sync_time"]
SCALABILITY_COLUMNS = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
VALIDATION_COLUMNS = ["progress", "iteration", "metric", "grad_sqr", "grad_var"]

#: The artifact simulator's settings per job type: ``(max_epochs, max_local_bsz or None)``;
#: ``None`` takes the largest per-GPU batch of the type's ``placements.csv``.
ARTIFACT_APPLICATIONS: dict[str, tuple[int, int | None]] = {
    "bert": (2, None),
    "cifar10": (100, None),
    "ncf": (10, None),
    "imagenet": (90, None),
    "deepspeech2": (80, None),
    "yolov3": (50, 8),
}

_BOUND = 1e12
#: Gradient statistics reach 2e14 (bert); far below float overflow when squared.
_GRAD_BOUND = 1e100
_VALIDATION_NAME = re.compile(r"^validation-([0-9]+)\.csv$")


@dataclass(frozen=True)
class ValidationRun:
    """One ``validation-<M>.csv``: per-epoch progress and gradient statistics at batch ``M``."""

    batch_size: int
    progress: FloatArray
    iteration: FloatArray
    metric: FloatArray
    grad_sqr: FloatArray
    grad_var: FloatArray

    def __len__(self) -> int:
        return len(self.progress)


@dataclass(frozen=True)
class ModelTraces:
    """The measurements of one job type (see the module notes).

    Attributes
    ----------
    name : str
        The type (its folder's name).
    placement : tuple of str
        ``placements.csv``'s placements, one digit per node, with the arrays beside them.
    local_bsz, step_time, sync_time : ndarray
        Of ``placements.csv``, row by row.
    scalability : dict of str to ndarray
        ``scalability.csv``'s columns.
    validation : dict of int to ValidationRun
        By global batch size, ascending.
    """

    name: str
    placement: tuple[str, ...]
    local_bsz: FloatArray
    step_time: FloatArray
    sync_time: FloatArray
    scalability: dict[str, FloatArray]
    validation: dict[int, ValidationRun] = field(default_factory=dict)

    @property
    def num_nodes(self) -> FloatArray:
        """Nodes spanned by each ``placements.csv`` row (its non-zero digits)."""
        return np.array([sum(d != "0" for d in p) for p in self.placement], dtype=np.float64)

    @property
    def num_replicas(self) -> FloatArray:
        """GPUs of each ``placements.csv`` row (the sum of its digits)."""
        return np.array([sum(int(d) for d in p) for p in self.placement], dtype=np.float64)

    def limits(self) -> BatchLimits:
        r"""The type's batch limits as the artifact sets them.

        :math:`M_0` and :math:`M_\mathrm{max}` are the smallest and largest validated batches,
        :math:`m_\mathrm{min}, m_\mathrm{max}` the smallest and largest measured per-GPU
        batches (or the artifact's override, :data:`ARTIFACT_APPLICATIONS`).
        """
        override = ARTIFACT_APPLICATIONS.get(self.name, (0, None))[1]
        return BatchLimits(
            init_batch_size=float(min(self.validation)),
            max_batch_size=float(max(self.validation)),
            min_local_bsz=float(self.local_bsz.min()),
            max_local_bsz=float(override if override is not None else self.local_bsz.max()),
        )

    def max_epochs(self) -> int:
        """Epochs a job of this type trains: the artifact's setting, or the shortest run."""
        setting = ARTIFACT_APPLICATIONS.get(self.name)
        return setting[0] if setting else min(len(v) for v in self.validation.values())

    @classmethod
    def load(cls, directory: str | Path) -> ModelTraces:
        """Read a model's trace folder (:func:`read_model_traces`)."""
        return read_model_traces(directory)

    def save(self, directory: str | Path) -> None:
        """Write the folder (:func:`write_model_traces`); it reads back equal."""
        write_model_traces(self, directory)


def _placements(path: Path) -> tuple[tuple[str, ...], FloatArray, FloatArray, FloatArray]:
    rows = Rows(path)
    place: list[str] = []
    values: list[tuple[float, float, float]] = []
    for f in HeaderCSV(rows, required=PLACEMENT_COLUMNS):
        p = f["placement"].strip()
        if not p.isdigit() or not p.isascii() or int(p) == 0:
            raise rows.error("placement", f"must be GPUs per node as digits, got {p[:40]!r}")
        step = rows.number(f["step_time"], "step_time", bound=_BOUND, positive=True)
        sync = rows.number(f["sync_time"], "sync_time", bound=_BOUND)
        if sync >= step:
            raise rows.error("sync_time", f"must be < step_time {step:g}, got {sync:g}")
        place.append(p)
        values.append((rows.number(f["local_bsz"], "local_bsz", bound=_BOUND, positive=True),
                       step, sync))  # fmt: skip
    if not place:
        raise InvalidInstanceError("<file>", f"{path} has no rows", file=str(path))
    arr = np.array(values, dtype=np.float64)
    return tuple(place), arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()


def _scalability(path: Path) -> dict[str, FloatArray]:
    rows = Rows(path)
    cols: dict[str, list[float]] = {c: [] for c in SCALABILITY_COLUMNS}
    for f in HeaderCSV(rows, required=SCALABILITY_COLUMNS):
        nodes = rows.count(f["num_nodes"], "num_nodes")
        replicas = rows.count(f["num_replicas"], "num_replicas")
        if replicas < nodes:
            raise rows.error("num_replicas", f"must be >= num_nodes {nodes}, got {replicas}")
        step = rows.number(f["step_time"], "step_time", bound=_BOUND, positive=True)
        sync = rows.number(f["sync_time"], "sync_time", bound=_BOUND)
        if sync >= step:
            raise rows.error("sync_time", f"must be < step_time {step:g}, got {sync:g}")
        cols["num_nodes"].append(nodes)
        cols["num_replicas"].append(replicas)
        cols["local_bsz"].append(rows.number(f["local_bsz"], "local_bsz", bound=_BOUND,
                                             positive=True))  # fmt: skip
        cols["step_time"].append(step)
        cols["sync_time"].append(sync)
    return {c: np.array(v, dtype=np.float64) for c, v in cols.items()}


def _validation(path: Path, batch_size: int) -> ValidationRun:
    rows = Rows(path)
    cols: dict[str, list[float]] = {c: [] for c in VALIDATION_COLUMNS}
    last = -1.0
    for f in HeaderCSV(rows, required=VALIDATION_COLUMNS):
        progress = rows.number(f["progress"], "progress", bound=_BOUND, positive=True)
        if progress < last:
            raise rows.error("progress", f"must not decrease (previous row {last:g})")
        last = progress
        cols["progress"].append(progress)
        cols["iteration"].append(rows.number(f["iteration"], "iteration", bound=_BOUND))
        text = f["metric"].strip()
        cols["metric"].append(float("nan") if not text else rows.number(
            text, "metric", bound=_BOUND))  # fmt: skip
        cols["grad_sqr"].append(rows.number(f["grad_sqr"], "grad_sqr", bound=_GRAD_BOUND))
        cols["grad_var"].append(rows.number(f["grad_var"], "grad_var", bound=_GRAD_BOUND))
    if not cols["progress"]:
        raise InvalidInstanceError("<file>", f"{path} has no epochs", file=str(path))
    arrays = {c: np.array(v, dtype=np.float64) for c, v in cols.items()}
    return ValidationRun(batch_size=batch_size, **arrays)


def read_model_traces(
    directory: str | Path, name: str | None = None, *, suffix: str | None = None
) -> ModelTraces:
    """Read ``placements.csv``, ``scalability.csv`` and every ``validation-<M>.csv`` of a folder.

    Parameters
    ----------
    directory : path-like
        One model's folder of the artifact's ``traces/``.
    name : str, optional
        The job type (default: the folder's name).
    suffix : str, optional
        Read ``placements-<suffix>.csv`` and ``scalability-<suffix>.csv`` instead: Sia's
        simulator keeps one pair per GPU type (``aws``, ``rtx``, ``dgx-ext``...) beside the
        shared validation runs (:mod:`optsched.goodput.hetero`).

    Raises
    ------
    InvalidInstanceError
        Naming the file, row and column of the first bad value, or the missing file.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise InvalidInstanceError("<file>", f"{folder} is not a folder", file=str(folder))
    tail = f"-{suffix}" if suffix else ""
    place, local, step, sync = _placements(folder / f"placements{tail}.csv")
    scal = _scalability(folder / f"scalability{tail}.csv")
    runs: dict[int, ValidationRun] = {}
    for path in sorted(folder.iterdir()):
        match = _VALIDATION_NAME.match(path.name)
        if match:
            runs[int(match.group(1))] = _validation(path, int(match.group(1)))
    if not runs:
        raise InvalidInstanceError("<file>", f"{folder} has no validation-<M>.csv",
                                   file=str(folder))  # fmt: skip
    if min(runs) <= 0:
        raise InvalidInstanceError("<file>", "validation-0.csv: the batch size must be > 0",
                                   file=str(folder / "validation-0.csv"))  # fmt: skip
    validation = dict(sorted(runs.items()))
    return ModelTraces(name or folder.name, place, local, step, sync, scal, validation)


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_model_traces(traces: ModelTraces, directory: str | Path) -> None:
    """Write a model's folder in the artifact's layout (numbers written to round-trip)."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [",".join(PLACEMENT_COLUMNS)]
    for i, p in enumerate(traces.placement):
        lines.append(f"{p},{_fmt(traces.local_bsz[i])},{float(traces.step_time[i])!r},"
                     f"{float(traces.sync_time[i])!r}")  # fmt: skip
    (folder / "placements.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    scal = traces.scalability
    lines = [",".join(SCALABILITY_COLUMNS)]
    for i in range(len(scal["num_nodes"])):
        lines.append(",".join(_fmt(scal[c][i]) for c in SCALABILITY_COLUMNS))
    (folder / "scalability.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for bsz, run in traces.validation.items():
        lines = [",".join(VALIDATION_COLUMNS)]
        for i in range(len(run)):
            lines.append(",".join(
                "" if np.isnan(getattr(run, c)[i]) else repr(float(getattr(run, c)[i]))
                for c in VALIDATION_COLUMNS))  # fmt: skip
        (folder / f"validation-{bsz}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
