r"""Weighted shortest remaining processing time with gang awareness (``smith-gang``).

A preemptive order policy (:class:`~optsched.sim.policies.basic.OrderPolicy`) whose key is

.. math::

    k_j = \frac{R_j\, n_j^{\beta}}{w_j}, \qquad R_j = \frac{\text{remaining}_j}{\rho^*_j},

with :math:`R_j` the remaining time on the job's fastest type, :math:`n_j` its gang and
:math:`w_j` its weight. :math:`\beta = 0` is weighted SRTF (Smith's ratio rule, 1956, on the
remaining time: optimal for one machine without release dates); :math:`\beta = 1` is Smith's
rule on the remaining GPU-seconds, the order of the mean-busy-time relaxation's preemptive WSPT
on the aggregated machine (Goemans 1997). A wide gang blocks as many GPUs as it uses: counting
the gang in full favours narrow jobs too much (they fill the machine and starve the wide
ones), ignoring it lets one wide job preempt a crowd of short narrow ones; the default
:math:`\beta = 1/2` sits between the two. Ties break by arrival, then job position; jobs are
granted greedily down the order (a job that does not fit is skipped: work-conserving).

On ElasticFlow's ``cluster04`` trace on 128 GPUs at offered load 0.8 (weights 1) it is below
SRTF by 2-3% on total weighted JCT at 4,000 and 15,802 jobs
(``benchmarks/bench_sim_bounds.py``).

References
----------
W. E. Smith, "Various optimizers for single-stage production", Naval Res. Logist. Q. 3, 1956.
M. X. Goemans, "Improved approximation algorithms for scheduling with release dates", SODA 1997.
"""

from __future__ import annotations

import math

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import JobState, SimState
from optsched.sim.policies.basic import OrderPolicy

__all__ = ["SmithGang"]


class SmithGang(OrderPolicy):
    r"""Preemptive order by :math:`R_j n_j^\beta / w_j` (see the module notes).

    Parameters
    ----------
    gang_exponent : float, default 0.5
        :math:`\beta`, in :math:`[0, 1]`.
    aware, round_seconds, reference, elastic
        As for :class:`~optsched.sim.policies.basic.OrderPolicy`.

    Raises
    ------
    InvalidInstanceError
        ``gang_exponent`` outside :math:`[0, 1]` (field ``gang_exponent``).
    """

    base_name = "smith-gang"

    def __init__(
        self,
        *,
        gang_exponent: float = 0.5,
        aware: bool = False,
        round_seconds: float | None = None,
        reference: bool = False,
        elastic: bool = False,
    ) -> None:
        if (
            isinstance(gang_exponent, bool)
            or not isinstance(gang_exponent, int | float)
            or not (0.0 <= gang_exponent <= 1.0)
        ):
            raise InvalidInstanceError(
                "gang_exponent", f"must be a number in [0, 1], got {gang_exponent!r}"
            )
        super().__init__(
            aware=aware, round_seconds=round_seconds, reference=reference, elastic=elastic
        )
        self.gang_exponent = float(gang_exponent)

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Remaining time on the best type, times the gang to the power beta, over the weight."""
        rate = self.best_rate(state, s)
        if rate <= 0:
            return (math.inf,)
        # weights are > 0 (the world checks them): the ratio is finite
        return (s.remaining / rate * s.job.num_gpus**self.gang_exponent / s.job.weight,)
