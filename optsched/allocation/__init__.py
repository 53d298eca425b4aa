"""Allocation: what each job gets in a round or a lease.

Systems
-------
gavel
    Gavel's heterogeneity-aware round LPs: max-min, finish-time fairness, makespan, total
    throughput, their space-sharing ("packed") forms and the cost/SLO forms.
themis
    Themis's partial-allocation auction over one lease (a heuristic returning Gavel's
    :class:`~optsched.allocation.gavel.Allocation`).
optimus
    Optimus: fitted convergence and speed models, marginal-gain allocation, exact MILP.
chronus
    Chronus: lease-based deadline scheduling, SLO admission and lease grants as a MILP.
andreas
    ANDREAS: energy cost plus weighted tardiness per scheduling point (MILP, randomised greedy).

"""

from optsched.allocation import andreas, chronus, gavel, optimus, themis

__all__ = ["andreas", "chronus", "gavel", "optimus", "themis"]
