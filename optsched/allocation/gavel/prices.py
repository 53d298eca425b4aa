r"""GPU prices per type for the cost policies (``min-cost``, ``min-cost-slo`` and their perf forms).

:data:`GPU_PRICES_PER_HOUR` holds public-cloud **on-demand** list prices in US dollars per
GPU-hour: Google Cloud Compute Engine's GPU price list (https://cloud.google.com/compute/gpus-pricing,
region us-central1, the per-GPU price charged on top of the machine type, as published in 2020,
the year of Gavel's paper):

=========  =============  ==========================
type       $ / GPU-hour   Compute Engine name
=========  =============  ==========================
``k80``    0.45           ``nvidia-tesla-k80``
``p100``   1.46           ``nvidia-tesla-p100``
``v100``   2.48           ``nvidia-tesla-v100``
``t4``     0.35           ``nvidia-tesla-t4``
=========  =============  ==========================

Gavel's artifact uses the same three types with Google Cloud's *preemptible* prices (0.135, 0.43,
0.74 for k80, p100, v100) and AWS spot price logs; on-demand prices are what a cluster owner
without preemption pays, and only their ratios matter to the allocation (the objective is a
positive multiple of the same sum). Any other type, or other prices, are given per instance in
:attr:`~optsched.allocation.gavel.AllocationInstance.prices`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from optsched.errors import InvalidInstanceError

__all__ = ["GPU_PRICES_PER_HOUR", "gpu_prices"]

#: On-demand US$ per GPU-hour by GPU type name (lower case); sources in the module notes.
GPU_PRICES_PER_HOUR: dict[str, float] = {
    "k80": 0.45,
    "p100": 1.46,
    "v100": 2.48,
    "t4": 0.35,
}


def gpu_prices(gpu_types: tuple[str, ...], prices: tuple[float, ...] | None) -> NDArray[np.float64]:
    """Price per GPU-hour of each type: ``prices`` if given, else :data:`GPU_PRICES_PER_HOUR`.

    Raises
    ------
    InvalidInstanceError
        ``prices`` is absent and a type is not in the table (field ``prices``).
    """
    if prices is not None:
        return np.asarray(prices, dtype=np.float64)
    unknown = [name for name in gpu_types if name.lower() not in GPU_PRICES_PER_HOUR]
    if unknown:
        raise InvalidInstanceError(
            "prices",
            f"no price known for GPU type(s) {unknown}; give the instance's prices "
            f"(US$ per GPU-hour, one per type) or use {sorted(GPU_PRICES_PER_HOUR)}",
        )
    return np.array([GPU_PRICES_PER_HOUR[name.lower()] for name in gpu_types])
