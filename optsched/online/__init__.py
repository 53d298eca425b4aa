"""Online job scheduling: which jobs run when, decided as they arrive.

Systems
-------
oasis
    OASiS (INFOCOM'18): the offline ILP, the online primal-dual algorithm with its dual
    certificate, and the FIFO, DRF, RRH and Dorm-like baselines on one slot engine.
aonline
    Aonline: online gang scheduling on heterogeneous GPU pools by doubling intervals, beside
    its exact ILP.

"""

from optsched.online import aonline, oasis

__all__ = ["aonline", "oasis"]
