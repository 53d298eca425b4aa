r"""Board power of the GPU types optsched's traces and clusters name, per GPU, in watts.

One table, read by the energy-aware models (:mod:`optsched.allocation.andreas`) and, independently
of any
policy, by the simulator's energy metric (:func:`optsched.sim.measure.metrics.energy_kwh`). The
values
are the vendors' maximum board power (thermal design power, TDP) of one GPU, from the product
briefs and datasheets:

============== ======= =====================================================================
GPU type       W/GPU   source
============== ======= =====================================================================
``v100``       300     NVIDIA Tesla V100 SXM2 (NVIDIA Tesla V100 GPU Accelerator datasheet,
                       2017: 300 W for SXM2, 250 W for PCIe); the V100s of the published
                       testbeds (AWS p3, DGX-1) are SXM2.
``v100-pcie``  250     NVIDIA Tesla V100 PCIe product brief PB-08744-001 (250 W).
``p100``       250     NVIDIA Tesla P100 PCIe product brief PB-08248-001 (250 W; the SXM2 part
                       is 300 W).
``k80``        150     NVIDIA Tesla K80 board specification BD-07317-001 (300 W per board
                       holding two GK210 GPUs, each scheduled as one GPU: 150 W per GPU).
``p40``        250     NVIDIA Tesla P40 product brief PB-08338-001 (250 W).
``t4``         70      NVIDIA T4 datasheet (70 W).
``a100``       400     NVIDIA A100 SXM4 datasheet (400 W; the PCIe part is 250-300 W).
============== ======= =====================================================================

The figure is a *maximum*: a training job near full utilization draws close to it, an idle GPU
far less (tens of watts). optsched charges a GPU's board power while a job holds it and
**nothing for idle GPUs** (no idle power is modelled); host CPUs, memory, cooling and power
supply losses are not counted either. Type names are matched case-insensitively.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from optsched.errors import InvalidInstanceError

__all__ = ["GPU_POWER_WATTS", "JOULES_PER_KWH", "gpu_power"]

#: Maximum board power per GPU in watts, by GPU type (see the module notes for the sources).
GPU_POWER_WATTS: Mapping[str, float] = {
    "v100": 300.0,
    "v100-pcie": 250.0,
    "p100": 250.0,
    "k80": 150.0,
    "p40": 250.0,
    "t4": 70.0,
    "a100": 400.0,
}

#: Joules in one kilowatt-hour.
JOULES_PER_KWH = 3.6e6


def gpu_power(gpu_type: str, table: Mapping[str, float] | None = None, *, field: str = "") -> float:
    """Board power of one GPU of ``gpu_type`` in watts.

    Parameters
    ----------
    gpu_type : str
        A GPU type name (case-insensitive).
    table : mapping, optional
        Overrides or extends :data:`GPU_POWER_WATTS` (same units).
    field : str
        The field to name in the error.

    Raises
    ------
    InvalidInstanceError
        The type is in neither table, or its power is not a finite positive number.

    Examples
    --------
    >>> gpu_power("V100"), gpu_power("k80")
    (300.0, 150.0)
    """
    key = gpu_type.lower()
    merged = {k.lower(): v for k, v in GPU_POWER_WATTS.items()}
    if table is not None:
        merged.update({k.lower(): v for k, v in table.items()})
    value = merged.get(key)
    if value is None:
        raise InvalidInstanceError(
            field or "gpu_type",
            f"no power figure for GPU type {gpu_type!r}; known: {', '.join(sorted(merged))}",
        )
    if not (math.isfinite(value) and value > 0):
        raise InvalidInstanceError(field or "gpu_type", f"power of {gpu_type!r} must be > 0 W")
    return float(value)
