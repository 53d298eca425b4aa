r"""Sia's job types on each GPU type: measurements, settings, and the fixed-batch split.

Sia's simulator (``sia-simulator/`` of github.com/siasosp23/artifacts, ``applications.py``)
keeps, per job type, one validation set (``validation-<M>.csv``, shared by every GPU type) and
per GPU type a ``placements-<type>.csv`` and ``scalability-<type>.csv`` measured on that type's
nodes (``aws``: 4 T4 a node; ``dgx-ext``: 8 A100; ``rtx``: 8 RTX 2080 Ti; ``azure``, ``dgx``,
``quad``). :func:`load_apps` reads them into one :class:`HeteroApp` per (type, GPU type), with
the simulator's settings beyond the files (:data:`SIA_SETTINGS`):

* the epochs a job trains (as in Pollux's artifact: bert 2, cifar10 100, deepspeech2 80,
  imagenet 90, ncf 10, yolov3 50);
* the checkpoint-restore delay after each (re)allocation, per job type (bert 120 s, cifar10
  50, deepspeech2 25, imagenet 250, ncf 15, yolov3 80) -- Pollux's artifact uses 30 s for all;
* a *calibration* slowdown dividing every job's simulated goodput (``SLOWDOWNS`` of
  ``simulator_config.py``: cifar10 1.8, ncf 1.5, the others 1.2), fitted there to testbed runs;
* batch limits from that GPU type's own placements file (its smallest and largest per-GPU
  batch), except deepspeech2 on ``rtx``, whose largest per-GPU batch is set to 57; Pollux's
  yolov3 limit of 8 does not apply.

:func:`fixed_split` is the simulator's ``Job.update_local_bsz`` for a job whose global batch is
fixed (Gavel's jobs, and Sia's before it has a goodput model): per-GPU batch
:math:`\lceil M/K \rceil`, accumulation steps :math:`s = \lceil (M/K)/\bar m(p) \rceil - 1`
with :math:`\bar m(p)` the largest batch measured at that placement (:func:`max_local_bsz`),
at least one accumulation step on a single GPU when :math:`M` exceeds the initial batch, then
the per-GPU batch capped by the largest measured at :math:`K` GPUs and by
:math:`\lfloor M_\mathrm{max}/(K(s+1)) \rfloor`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.goodput.batch import BatchLimits
from optsched.goodput.progress import normalize_placement
from optsched.goodput.traces import ModelTraces, read_model_traces

__all__ = [
    "SIA_CLUSTER",
    "SIA_SETTINGS",
    "GpuType",
    "HeteroApp",
    "fixed_split",
    "hetero_app",
    "load_apps",
    "max_local_bsz",
]


@dataclass(frozen=True)
class GpuType:
    """``num_nodes`` nodes of ``gpus_per_node`` GPUs of one type (a traces suffix)."""

    name: str
    num_nodes: int
    gpus_per_node: int

    @property
    def num_gpus(self) -> int:
        """All GPUs of the type."""
        return self.num_nodes * self.gpus_per_node


#: Sia's default cluster (``simulator_config.py``): 6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080 Ti.
SIA_CLUSTER: tuple[GpuType, ...] = (
    GpuType("aws", 6, 4),
    GpuType("dgx-ext", 2, 8),
    GpuType("rtx", 3, 8),
)

#: Per job type: ``(max_epochs, restart seconds, calibration slowdown)`` as Sia's simulator sets.
SIA_SETTINGS: dict[str, tuple[int, float, float]] = {
    "bert": (2, 120.0, 1.2),
    "cifar10": (100, 50.0, 1.8),
    "deepspeech2": (80, 25.0, 1.2),
    "imagenet": (90, 250.0, 1.2),
    "ncf": (10, 15.0, 1.5),
    "yolov3": (50, 80.0, 1.2),
}

#: Largest per-GPU batch overrides: ``(job type, GPU type) -> m_max``.
_MAX_LOCAL_OVERRIDES: dict[tuple[str, str], float] = {("deepspeech2", "rtx"): 57.0}


@dataclass(frozen=True)
class HeteroApp:
    """One job type's measurements and settings on one GPU type (module notes).

    Attributes
    ----------
    traces : ModelTraces
        Placements and scalability of the GPU type; the shared validation runs.
    gpu_type : str
    limits : BatchLimits
    max_epochs : int
    restart_delay : float
        Seconds of checkpoint-restore after each (re)allocation.
    slowdown : float
        The calibration divisor of the simulated goodput.
    """

    traces: ModelTraces
    gpu_type: str
    limits: BatchLimits
    max_epochs: int
    restart_delay: float
    slowdown: float

    @property
    def name(self) -> str:
        """The job type."""
        return self.traces.name

    @property
    def calibration(self) -> float:
        """The factor multiplying the goodput, ``1 / slowdown`` (as the simulator computes it)."""
        return 1 / self.slowdown


def hetero_app(traces: ModelTraces, gpu_type: str) -> HeteroApp:
    """One job type on one GPU type with Sia's settings (module notes).

    Raises
    ------
    InvalidInstanceError
        A job type Sia's simulator does not configure, or validation runs too short.
    """
    if traces.name not in SIA_SETTINGS:
        raise InvalidInstanceError(
            "application",
            f"{traces.name!r} is not a job type of Sia's simulator ({', '.join(SIA_SETTINGS)})",
        )
    epochs, restart, slowdown = SIA_SETTINGS[traces.name]
    limits = BatchLimits(
        init_batch_size=float(min(traces.validation)),
        max_batch_size=float(max(traces.validation)),
        min_local_bsz=float(traces.local_bsz.min()),
        max_local_bsz=_MAX_LOCAL_OVERRIDES.get(
            (traces.name, gpu_type), float(traces.local_bsz.max())
        ),
    )
    if min(len(v) for v in traces.validation.values()) < epochs:
        raise InvalidInstanceError(
            "validation", f"{traces.name}: the validation runs have fewer than {epochs} epochs"
        )
    return HeteroApp(traces, gpu_type, limits, epochs, restart, slowdown)


def load_apps(
    root: str | Path, applications: Iterable[str], gpu_types: Iterable[str]
) -> dict[str, dict[str, HeteroApp]]:
    """Read ``root/<type>/placements-<gpu>.csv`` etc.: ``{job type: {GPU type: HeteroApp}}``.

    Raises
    ------
    InvalidInstanceError
        A job type Sia's simulator does not configure, or (from the reader) the file, row and
        column of the first bad value, or a missing file.
    """
    folder = Path(root)
    out: dict[str, dict[str, HeteroApp]] = {}
    for app in sorted(set(applications)):
        if app not in SIA_SETTINGS:
            raise InvalidInstanceError(
                "application",
                f"{app!r} is not a job type of Sia's simulator ({', '.join(SIA_SETTINGS)})",
            )
        out[app] = {
            g: hetero_app(read_model_traces(folder / app, app, suffix=g), g) for g in gpu_types
        }
    return out


def max_local_bsz(app: HeteroApp, placement: tuple[int, ...] | str) -> float:
    """Largest per-GPU batch measured at ``placement`` (Sia's ``get_max_local_bsz``).

    A measured placement (up to rotation): its largest ``local_bsz``. Otherwise the largest of
    the scalability rows with at least as many nodes and GPUs.
    """
    t = app.traces
    key = normalize_placement(placement)
    rows = [i for i, p in enumerate(t.placement) if p == key]
    if rows:
        return float(t.local_bsz[rows].max())
    nodes, gpus = len(key), sum(int(d) for d in key)
    sel = (t.scalability["num_nodes"] >= nodes) & (t.scalability["num_replicas"] >= gpus)
    if not np.any(sel):
        raise InvalidInstanceError(
            "placement", f"{t.name} on {app.gpu_type}: no measurement covers placement {key}"
        )
    return float(t.scalability["local_bsz"][sel].max())


def fixed_split(app: HeteroApp, placement: tuple[int, ...], batch_size: float) -> tuple[int, int]:
    """``(atomic_bsz, accum_steps)`` of a fixed global batch on ``placement`` (module notes)."""
    k = sum(placement)
    if k < 1:
        raise InvalidInstanceError("placement", f"must hold at least one GPU, got {placement}")
    lim = app.limits
    local = math.ceil(batch_size / k - 1e-8)
    accum = math.ceil(local / max_local_bsz(app, placement) - 1e-8) - 1
    if k == 1 and batch_size > lim.init_batch_size:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    measured = app.traces.num_replicas == k
    if np.any(measured):
        atomic = int(min(atomic, app.traces.local_bsz[measured].max()))
    return min(atomic, int(lim.max_batch_size / (k * (accum + 1)))), accum
