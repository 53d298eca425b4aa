"""The heterogeneous goodput world: Sia's simulator (SOSP'23 artifact) and its policies.

* :mod:`~optsched.goodput.hetero.apps`: job types per GPU type (traces, settings, batch split);
* :mod:`~optsched.goodput.hetero.job`: one job advanced as Sia's ``Job.step`` does;
* :mod:`~optsched.goodput.hetero.world`: the loop (:func:`simulate_hetero`) and its record;
* :mod:`~optsched.goodput.hetero.gavel`: Gavel's rounds as Sia's artifact runs them;
* :mod:`~optsched.goodput.hetero.sia`: Sia's policy, its rounds on optsched's ILP;
* :mod:`~optsched.goodput.hetero.pollux_unaware`: Pollux as Sia runs it, heterogeneity-unaware;
* :mod:`~optsched.goodput.hetero.replay`: the decisions of a Sia simulator log, replayed;
* :mod:`~optsched.goodput.hetero.validate`: an independent check of a run.
"""

from optsched.goodput.hetero.apps import SIA_CLUSTER, GpuType, HeteroApp, load_apps
from optsched.goodput.hetero.world import HeteroRun, simulate_hetero

__all__ = ["SIA_CLUSTER", "GpuType", "HeteroApp", "HeteroRun", "load_apps", "simulate_hetero"]
