r"""Harmony: learned placement of parameter-server jobs by deep reinforcement learning.

Harmony [H1]_ places the workers and parameter servers of arriving training jobs so that
co-located jobs interfere little. A policy network chooses a server for every task; it is
trained offline, by policy gradient, on rewards from an auxiliary network that has learned to
simulate the cluster's interference; decisions are online inference. optsched judges it against
the exact optimum of every decision's *true* cost and against strong baselines on whole traces,
in and out of the training distribution.

===================================== ===========================================================
module                                one idea
===================================== ===========================================================
:mod:`~optsched.harmony.world`        jobs arrive, are placed, slow each other per the
                                      interference truth, finish: the simulator's engine in
                                      its colocation mode (:class:`EngineDriver`)
:mod:`~optsched.harmony.exact`        the exact optimum of one decision's true group-slowdown
                                      cost (a MILP over the servers' job sets), trivial and
                                      non-trivial decisions
:mod:`~optsched.harmony.snapshot`     one decision as a placement instance: the validator checks
                                      every policy; the pairwise-approximation ILP
:mod:`~optsched.harmony.policies`     ``harmony``, ``interference-greedy``,
                                      ``consolidate-first``, ``first-fit``, ``load-balance``,
                                      ``tetris``, ``random``, ``pairwise-ilp``, ``true-exact``;
                                      :func:`run_policy`
:mod:`~optsched.harmony.sim_policies` the rules as simulator policies (``optsched sim compare
                                      --policies first-fit``), named by the simulator's
                                      registry and made here
:mod:`~optsched.harmony.network`      features and the NumPy forward pass of the policy
:mod:`~optsched.harmony.env`          the Gymnasium environment (``rl`` extra)
:mod:`~optsched.harmony.reward`       the auxiliary reward network: sampling and fitting (JAX,
                                      ``rl`` extra)
:mod:`~optsched.harmony.reward_net`   its NumPy inference, which the policy network reads
:mod:`~optsched.harmony.agent`        actor-critic training (JAX + optax), checkpoints
:mod:`~optsched.harmony.compare`      every policy on the same arrivals; per-decision ratios to
                                      the true optimum
===================================== ===========================================================

Placing with the shipped model (:func:`load_model`) needs only NumPy; training, the environment
and the reward network need ``pip install 'optsched[rl]'`` (JAX, optax, gymnasium), imported
only when used.

References
----------
.. [H1] Y. Bao, Y. Peng, C. Wu. "Deep learning-based job placement in distributed machine
   learning clusters." IEEE INFOCOM 2019. doi:10.1109/INFOCOM.2019.8737460
"""

from __future__ import annotations

from optsched.harmony.agent import load_model, save_model, train
from optsched.harmony.checkpoint import CheckpointError
from optsched.harmony.policies import POLICIES, PolicyRun, place_job, run_policy
from optsched.harmony.world import EngineDriver, HarmonyWorld, JobArrival, generate_arrivals

__all__ = [
    "POLICIES",
    "CheckpointError",
    "EngineDriver",
    "HarmonyWorld",
    "JobArrival",
    "PolicyRun",
    "generate_arrivals",
    "load_model",
    "place_job",
    "run_policy",
    "save_model",
    "train",
]
