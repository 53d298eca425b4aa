"""The engine's state: the world, the running jobs, the free-server picture, the record.

:class:`EngineState` holds every field the engine's parts read and write; the parts add the
behaviour on top of it, each in a module of its own (the notes of
:mod:`optsched.sim.engine.core` describe the engine as a whole):

* :mod:`~optsched.sim.engine.progress`: progress between decision points (eager or lazy, the
  catch-up), record segments, rates and the completion/phase-boundary events;
* :mod:`~optsched.sim.engine.colocation`: the colocation mode's parameter servers and rates;
* :mod:`~optsched.sim.engine.placement`: admission and placement of a decision's grants on the
  free-server book (:mod:`~optsched.sim.engine.servers`);
* :mod:`~optsched.sim.engine.apply`: carrying a placed decision out (stop, keep, start);
* :mod:`~optsched.sim.engine.loop`: the event loop itself.
"""

from __future__ import annotations

import math
from array import array

from optsched.sim.engine.jobstate import Run
from optsched.sim.engine.policy import GrantPlacement, JobState, Policy
from optsched.sim.engine.servers import FreeServers
from optsched.sim.measure.record import empty_intervals
from optsched.sim.world.jobs import World

__all__ = ["EngineState"]


class EngineState:
    """The fields of one run of the engine (set up for ``world`` and ``policy``)."""

    def __init__(
        self,
        world: World,
        policy: Policy,
        round_seconds: float | None,
        horizon: float,
        wake_budget: int,
        bound: float,
    ) -> None:
        self.world = world
        self.policy = policy
        self.L = round_seconds
        self.horizon = horizon
        self.wake_budget = wake_budget
        self.bound = bound
        self.jobs = world.jobs
        # lazy progress (a policy that reads the progress of few jobs per decision says so):
        # the running jobs' progress is brought up to date when read, not at every decision
        self.lazy = bool(getattr(policy, "lazy_progress", False))
        # the job states policies read (made by the progress part, which keeps them current)
        self.states: list[JobState] = []
        self._times: list[float] = []  # the decision times, in order (lazy progress)
        # the gaps between them (``_gaps[k] = _times[k] - _times[k - 1]``, 0.0 first), shared by
        # every catch-up that steps over them (8 bytes each; read as a buffer by numpy)
        self._gaps = array("d")
        self._last_time = -math.inf  # the last of them
        self.index = {j.job_id: j.index for j in world.jobs}
        self.active: dict[int, JobState] = {}
        self.running: dict[int, Run] = {}
        # the states of ``active`` and ``running`` as the tuples a decision's SimState shows,
        # kept until either changes (``None``: to be rebuilt), so that a decision at which the
        # jobs are those of the last one (a policy's wake-up) costs no pass over them
        self._active_view: tuple[JobState, ...] | None = None
        self._running_view: tuple[JobState, ...] | None = None
        # the states of ``running``, in its order, kept with it: the view is their values,
        # taken in one C pass (a preemptive policy changes the running jobs at most decisions)
        self._running_states: dict[int, JobState] = {}
        self.heap: list[tuple[float, int, int]] = []
        self.table = empty_intervals()
        self.completion = [math.nan] * len(world.jobs)
        self.first_start = [math.nan] * len(world.jobs)
        self.ever_ran = [False] * len(world.jobs)
        self.types = {t.name: t for t in world.cluster.gpu_types}
        self.server_caps = {
            t.name: [t.server_capacity(s) for s in range(t.num_servers)]
            for t in world.cluster.gpu_types
        }
        self._empty = {
            t.name: FreeServers(self.server_caps[t.name], t.gpus_per_server)
            for t in world.cluster.gpu_types
        }
        # the cluster as the running jobs leave it, and what each running job holds (placement,
        # partner): kept across decisions, so that a decision that keeps every running job
        # costs the changes, not the cluster's size
        self._free = {name: fr.copy() for name, fr in self._empty.items()}
        self._holds: dict[int, tuple[GrantPlacement, int]] = {}
        self._gone: list[int] = []  # jobs completed since the last placement
        self._changed: list[int] = []  # jobs whose placement the current placement sets
        self._released: list[int] = []  # running jobs the current placement lets go (``stop``)
        # the placement and rate of each job the current placement fits on free servers, for
        # its start (the rate found when the fit was checked for a zero rate)
        self._fit_rates: dict[int, tuple[GrantPlacement, float]] = {}
        # whether a job progresses on a consolidated gang of a type and size, by (job, type, size)
        self._runs: dict[tuple[int, str, int], bool] = {}
        # a lone job's rate without batch phases, by (job, type, consolidated, size)
        self._rates: dict[tuple[int, str, bool, int], float] = {}
        self._fast = False  # the current decision is carried out at the cost of its changes
        self._seq = 0  # entries into the running jobs so far
        # the decisions carried out incrementally so far; each running job
        # kept by one received a round there, counted in its state when read (``_credit``)
        self._kept = 0
        self.type_order = {t.name: k for k, t in enumerate(world.cluster.gpu_types)}
        self.restore = world.restore_s
        self.first_restore = world.restore_on_first_start
        # running gangs placed on more servers than they need: re-placed consolidated at every
        # decision where a server (or set of servers) has room for them
        self.spread: set[int] = set()
        self.zero_rate_grants = 0
        self.decisions = 0
        self.new_arrivals: list[int] = []
        self.finished_ids: list[str] = []
        self.wakeups = 0
        self.wake_at = math.inf
        self.version = 0
        self.coloc = world.colocation
        if self.coloc is not None:
            # colocation mode: the running jobs with any task on each server (workers or PSs)
            self.on_server: list[dict[int, None]] = [
                {} for _ in range(world.cluster.gpu_types[0].num_servers)
            ]
            self.cpu_dropped = 0
