r"""Pollux's per-job agent: it profiles the job, refits its goodput model and picks its batch.

Each job carries an agent (Qiao et al., OSDI'21, §4.1). As the job runs, the agent records the
step and all-reduce times of every configuration :math:`(N, K, m)` it has run (its *profile*:
the first measurement of each configuration is kept) and the current gradient statistics;
whenever the profile grows it refits :math:`\theta_\mathrm{sys}`
(:func:`~optsched.goodput.fit.fit_throughput`). Given the GPUs the scheduler hands the job, it
then picks the goodput-maximizing :math:`(m, s)` (:func:`~optsched.goodput.batch.best_batch`).
Before the first measurement there is no model: the job runs its smallest admissible batch,
:math:`\max(M_0, K m_\mathrm{min})`, split as a fixed batch. As in the artifact's simulator, the
per-GPU batch is finally capped at :math:`\lfloor M_\mathrm{max}/(K(s+1)) \rfloor`.

The agent's model is what the *scheduler* believes (Pollux's policy reads it through
:meth:`PolluxAgent.goodput_model`); the job itself progresses by the measured times
(:func:`~optsched.goodput.job.advance`).
"""

from __future__ import annotations

from optsched.goodput.batch import BatchLimits, best_batch
from optsched.goodput.efficiency import GradientStats
from optsched.goodput.fit import StepMeasurements, fit_throughput
from optsched.goodput.goodput import GoodputModel
from optsched.goodput.job import fixed_batch_split
from optsched.goodput.progress import normalize_placement
from optsched.goodput.throughput import ThroughputParams

__all__ = ["PolluxAgent"]


class PolluxAgent:
    """One job's profile, fitted model and batch choice (a :class:`~optsched.goodput.job.Batcher`).

    Parameters
    ----------
    limits : BatchLimits
        The job type's batch limits.

    Attributes
    ----------
    profile : dict
        ``(num_nodes, num_replicas, atomic_bsz) -> (step_time, sync_time)``, first measurement of
        each configuration, in the order seen.
    params : ThroughputParams or None
        The model fitted to the profile (None before any measurement).
    stats : GradientStats or None
        The latest gradient statistics.
    """

    def __init__(self, limits: BatchLimits) -> None:
        self.limits = limits
        self.profile: dict[tuple[int, int, int], tuple[float, float]] = {}
        self.params: ThroughputParams | None = None
        self.stats: GradientStats | None = None

    def observe(
        self,
        num_nodes: int,
        num_replicas: int,
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Take the statistics; on a configuration not profiled yet, profile it and refit."""
        self.stats = stats
        key = (num_nodes, num_replicas, atomic_bsz)
        if key in self.profile:
            return
        self.profile[key] = (step_time, sync_time)
        keys = list(self.profile)
        times = list(self.profile.values())
        self.params = fit_throughput(
            StepMeasurements.of(
                [k[0] for k in keys],
                [k[1] for k in keys],
                [k[2] for k in keys],
                [t[0] - t[1] for t in times],
                [t[0] for t in times],
            )
        )

    def goodput_model(self) -> GoodputModel | None:
        """The job's current goodput model, once it has one."""
        if self.params is None or self.stats is None:
            return None
        return GoodputModel(self.params, self.stats, self.limits.init_batch_size)

    def choose(self, placement: str) -> tuple[int, int]:
        """The ``(m, s)`` for ``placement``: the goodput optimum, or the smallest batch unfitted."""
        key = normalize_placement(placement)
        nodes, replicas = len(key), sum(int(d) for d in key)
        model = self.goodput_model()
        if model is None:
            low = max(self.limits.init_batch_size, self.limits.min_local_bsz * replicas)
            return fixed_batch_split(self.limits, low, replicas)
        choice = best_batch(model, self.limits, nodes, replicas)
        cap = int(self.limits.max_batch_size / (replicas * (choice.accum_steps + 1)))
        return min(choice.atomic_bsz, cap), choice.accum_steps
