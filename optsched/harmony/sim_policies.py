r"""Placement policies of the colocation mode: where each worker and parameter server goes.

These run on a world in the colocation mode (:mod:`optsched.sim.world.colocation`) only (any other
is refused, :meth:`Policy.refuses <optsched.sim.Policy.refuses>`). At every decision point
(event-driven: arrivals and completions) they take the waiting jobs in arrival order (FIFO)
and place each whose tasks first-fit-decreasing packing can still fit on the free GPUs and
CPUs, stopping at the first that cannot (strict FIFO, no backfilling: Harmony's queue). A job
is placed task by task, workers first then parameter servers, each on a server the action
mask allows (:meth:`optsched.harmony.world.ClusterState.mask`: the task fits and the job's
remaining tasks can still be packed), on the view of the cluster the running jobs leave
(:func:`optsched.harmony.world.cluster_view`). Running jobs are never moved (``keep_running``).

========================= ===============================================================
name                      rule for each task
========================= ===============================================================
``harmony``               the trained policy network's most probable server (greedy
                          inference; :func:`optsched.harmony.load_model`, the shipped model
                          by default)
``interference-greedy``   the valid server adding the least true slowdown (0 where the job
                          already is; reads the ground truth)
``consolidate-first``     a valid server already holding the job, else the one with the fewest
                          other jobs
``first-fit``             the lowest-numbered valid server
``load-balance``          the valid server with the most free GPUs, then CPUs
``tetris``                the valid server maximising the alignment of demand and free
                          capacity :math:`\langle d/C, f_h/C\rangle` (Tetris)
``random-placement``      a uniformly random valid server (seeded)
``pairwise-ilp``          the whole job at once: the exact optimum of the snapshot's *pairwise
                          approximation* (``interference`` ILP, :mod:`optsched.harmony.snapshot`),
                          per arrival
``true-exact``            the whole job at once: the exact optimum of the decision's *true*
                          group-slowdown cost (:mod:`optsched.harmony.exact`), per arrival
========================= ===============================================================

The rules are those of :mod:`optsched.harmony.policies` (the same code places the tasks).

The simulator knows these names without importing Harmony: its registry holds each as a
*provided* built-in (:data:`optsched.sim.policies.PROVIDED`: the name and
``"optsched.harmony.sim_policies:PlacementPolicy"``), and imports this module the first time one
of them is made (``make_policy("first-fit")``, ``--policies harmony``), so that the simulator's
packages never import :mod:`optsched.harmony` while Harmony builds on the simulator's engine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.harmony.policies import place_job
from optsched.harmony.world import ClusterState, HarmonyWorld, JobArrival, cluster_view, ffd_fits
from optsched.sim.engine.policy import Grant, GrantPlacement, Policy, PolicyDecision, SimState

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["PLACEMENT_POLICIES", "PlacementPolicy", "harmony_world_of", "job_arrivals"]

#: Registry name -> the rule's name in :mod:`optsched.harmony.policies`.
PLACEMENT_POLICIES: dict[str, str] = {
    "harmony": "harmony",
    "interference-greedy": "interference-greedy",
    "consolidate-first": "consolidate-first",
    "first-fit": "first-fit",
    "load-balance": "load-balance",
    "tetris": "tetris",
    "random-placement": "random",
    "pairwise-ilp": "pairwise-ilp",
    "true-exact": "true-exact",
}

_HOW = (
    "build one with optsched.sim.world.colocation.colocation_world_from_trace(trace), or on the "
    "command line: optsched sim compare TRACE --policies harmony,first-fit (a placement "
    "policy makes the trace a colocation world)"
)


def harmony_world_of(world: World) -> HarmonyWorld:
    """The Harmony world (servers, truth, sizes) of a colocation ``world``."""
    coloc = world.colocation
    if coloc is None:
        raise InvalidInstanceError("world", f"is not in the colocation mode; {_HOW}")
    t = world.cluster.gpu_types[0]
    return HarmonyWorld(
        n_servers=t.num_servers,
        gpus=t.gpus_per_server,
        cpus=int(coloc.cpus_per_server),
        truth=coloc.truth,
        spread_penalty=coloc.spread_penalty,
        max_workers=coloc.max_workers,
        max_ps=coloc.max_ps,
    )


def job_arrivals(world: World) -> list[JobArrival]:
    """Every job of a colocation ``world`` as a Harmony arrival (id: its index)."""
    coloc = world.colocation
    assert coloc is not None
    return [
        JobArrival(
            j.index, j.arrival, coloc.job_types[j.job_id], j.num_gpus, coloc.ps[j.job_id], j.work
        )
        for j in world.jobs
    ]


class PlacementPolicy(Policy):
    """One placement rule of the table above, as a simulator policy.

    Parameters
    ----------
    rule : str
        A key of :data:`PLACEMENT_POLICIES`.
    model : str or Path, optional
        ``harmony``: the checkpoint (default: the shipped model), read by the guarded loader.
    seed : int, default 0
        ``random-placement``: the seed of its draws (reset at every run).
    time_limit : float, optional
        ``pairwise-ilp``: seconds per snapshot solve.

    Raises
    ------
    InvalidInstanceError
        Unknown rule.
    """

    round_seconds = None

    def __init__(
        self,
        rule: str,
        *,
        model: str | Path | None = None,
        seed: int = 0,
        time_limit: float | None = None,
    ) -> None:
        if rule not in PLACEMENT_POLICIES:
            raise InvalidInstanceError(
                "policy", f"unknown placement policy {rule!r}; known: {list(PLACEMENT_POLICIES)}"
            )
        self.name = rule
        self.rule = PLACEMENT_POLICIES[rule]
        self.model = model
        self.seed = seed
        self.time_limit = time_limit
        self._params: Mapping[str, np.ndarray] | None = None
        self._model_types: int | None = None
        self._hworld: HarmonyWorld | None = None
        self._arrivals: list[JobArrival] = []
        self._rng = np.random.default_rng(seed)

    def _load(self) -> Mapping[str, np.ndarray]:
        if self._params is None:
            from optsched.harmony.agent import load_model, world_from_meta

            params, meta = load_model(self.model)
            self._params = params
            self._model_types = world_from_meta(meta).n_types
        return self._params

    def refuses(self, world: World) -> str | None:
        """A world outside the colocation mode, or one the rule's model does not describe."""
        coloc = world.colocation
        if coloc is None:
            return f"{self.name} places parameter-server jobs in the colocation mode only; {_HOW}"
        if (coloc.worker_cpus, coloc.ps_cpus) != (2.0, 4.0):
            return (
                f"{self.name} places tasks of Harmony's demands (workers 2 CPUs, PSs 4), got "
                f"{coloc.worker_cpus:g} and {coloc.ps_cpus:g}"
            )
        if self.rule == "harmony":
            self._load()
            if self._model_types != coloc.n_types:
                return (
                    f"the harmony model was trained on {self._model_types} interference types, "
                    f"the world has {coloc.n_types}"
                )
        return None

    def reset(self, world: World) -> None:
        """Build the world's Harmony view; refuse a world :meth:`refuses` names."""
        reason = self.refuses(world)
        if reason is not None:
            raise InvalidInstanceError("world", reason)
        self._hworld = harmony_world_of(world)
        self._arrivals = job_arrivals(world)
        self._rng = np.random.default_rng(self.seed)

    def place(self, view: ClusterState, job: JobArrival) -> list[int]:
        """The server of every task of ``job`` (workers, then PSs) on ``view`` (unchanged)."""
        params = self._load() if self.rule == "harmony" else None
        return place_job(
            self.rule, view, job, params=params, rng=self._rng, time_limit=self.time_limit
        )

    def allocate(self, state: SimState) -> PolicyDecision:
        """Place the FIFO heads that fit (see the module notes)."""
        assert self._hworld is not None, "reset() first"
        view = cluster_view(state, self._hworld, self._arrivals)
        gpu_type = state.world.cluster.gpu_types[0].name
        grants: list[Grant] = []
        for s in state.active:
            if s.placement is not None:
                continue
            job = self._arrivals[s.job.index]
            demands = job.demands()
            if not ffd_fits(demands, view.free):
                break  # strict FIFO: the head waits, and every job behind it
            servers = self.place(view, job)
            for d, h in zip(demands, servers, strict=True):
                view.place_task(job, d, h)
            workers = Counter(servers[: job.n_workers])
            grants.append(
                Grant(
                    job=s.job_id,
                    gpu_type=gpu_type,
                    placement=GrantPlacement(gpu_type, tuple(sorted(workers.items()))),
                    ps_servers=tuple(servers[job.n_workers :]),
                )
            )
        return PolicyDecision(grants=tuple(grants), keep_running=True)

    def run_facts(self) -> dict[str, Any]:
        """The checkpoint of ``harmony`` (``None``: the shipped one)."""
        return (
            {"model": None if self.model is None else str(self.model)}
            if self.rule == "harmony"
            else {}
        )
