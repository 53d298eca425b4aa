"""Communication scheduling: how gradients are sent.

Systems
-------
pace
    PACE (INFOCOM'20): preemptive all-reduce scheduling of one training iteration, its totally
    unimodular LP, the fusion DP and the published policies in one event simulator.
tensorlights
    TensorLights: NIC priorities for parameter-server jobs sharing a host, in a fluid simulator.

"""

from optsched.comm import pace, tensorlights

__all__ = ["pace", "tensorlights"]
