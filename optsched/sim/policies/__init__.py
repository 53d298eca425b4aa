"""The queueing policies of the survey, and the registry of policy names."""

from optsched.sim.policies.basic import EDF, FIFO, SJF, SRTF, OrderPolicy, greedy_allocation

__all__ = ["EDF", "FIFO", "SJF", "SRTF", "OrderPolicy", "greedy_allocation"]
