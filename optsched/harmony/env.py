r"""A Gymnasium environment of placement over time (needs ``pip install 'optsched[rl]'``).

One episode is one seeded arrival trace (:func:`~optsched.harmony.world.generate_arrivals`). Each
step places one task of the job at the head of the queue:

* **observation** (``Box``, float32): the per-server features of
  :func:`optsched.harmony.network.features` (free GPUs and CPUs, jobs of each type present, the
  job's own tasks so far, type-pair counts, and with ``feature_model`` the predicted added
  slowdown) flattened, then the job's features (type, task role, size, progress);
* **action** (``Discrete(servers)``): the server of the task; ``info["action_mask"]`` marks the
  valid ones (the task fits and the job's remaining tasks can still be packed). An invalid
  action is replaced by the first valid server and costs :data:`INVALID_ACTION_PENALTY`
  (``info["invalid_action"]`` is set), so a policy that ignores the mask learns to respect it;
* **reward**: 0 for a job's first tasks; when its last task is placed, the cluster's normalised
  training speed :math:`\frac{1}{|J|}\sum_{j} 1/(1+\text{slowdown}_j)` over running jobs, from
  the true world or from a learned reward model (``reward_model``);
* **termination**: every job of the trace is placed (``info["avg_jct_s"]`` then reports the
  trace's average JCT in the true world).

Time runs on the simulator's engine in its colocation mode
(:class:`~optsched.harmony.world.EngineDriver` over
:func:`optsched.sim.engine.core.simulate_steps`): at each of the engine's decision points the
episode places the FIFO heads that fit, task by task, and sends the decision when no further
head fits; the reward is computed on the cluster as that decision leaves it, with the
colocation physics (:mod:`optsched.sim.world.colocation`) or the reward model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError, MissingExtraError
from optsched.harmony.network import feature_sizes, features, input_bound, predicted_costs
from optsched.harmony.world import (
    EngineDriver,
    HarmonyWorld,
    JobArrival,
    SlowdownFn,
    generate_arrivals,
)

try:
    import gymnasium as gym
    from gymnasium import spaces

    _Env: Any = gym.Env
except ImportError:  # pragma: no cover - exercised only without the extra
    # The module stays importable (documentation, doctest collection); building an
    # environment says what to install.
    gym = None  # type: ignore[assignment]
    _Env = object

__all__ = ["INVALID_ACTION_PENALTY", "PlacementEnv"]

#: Reward charged for choosing a server the mask forbids.
INVALID_ACTION_PENALTY = 1.0


class PlacementEnv(_Env):
    """Place the tasks of arriving PS jobs, one per step.

    Parameters
    ----------
    world : HarmonyWorld, optional
        Default :class:`~optsched.harmony.world.HarmonyWorld()`.
    n_jobs : int, default 20
        Jobs per episode.
    reward_model : callable, optional
        ``slowdown_fn(job_type, partner_counts)`` used for the reward instead of the truth
        (e.g. :meth:`optsched.harmony.reward.RewardNet.slowdown`).
    mean_interarrival_s : float or (float, float), default 60
        Mean time between arrivals (s); a pair draws it uniformly per episode (a mix of loads).
    feature_model : callable, optional
        The policy's slowdown model: adds the predicted added slowdown of every server to the
        observation (:func:`optsched.harmony.network.features`).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        world: HarmonyWorld | None = None,
        *,
        n_jobs: int = 20,
        reward_model: SlowdownFn | None = None,
        mean_interarrival_s: float | tuple[float, float] = 60.0,
        feature_model: SlowdownFn | None = None,
    ) -> None:
        if gym is None:
            raise MissingExtraError("PlacementEnv needs gymnasium: pip install 'optsched[rl]'")
        if n_jobs < 1:
            raise InvalidInstanceError("n_jobs", f"must be >= 1, got {n_jobs}")
        self.world = HarmonyWorld() if world is None else world
        self.n_jobs = n_jobs
        self.reward_model = reward_model
        if isinstance(mean_interarrival_s, tuple):
            lo, hi = mean_interarrival_s
            if not (0 < lo <= hi and np.isfinite(hi)):
                raise InvalidInstanceError(
                    "mean_interarrival_s", f"must be 0 < low <= high, got {mean_interarrival_s}"
                )
        self.mean_interarrival_s = mean_interarrival_s
        self.feature_model = feature_model
        self._costs: np.ndarray | None = None
        fs, fj = feature_sizes(self.world, feature_model is not None)
        high = input_bound(self.world.cpus)
        self.observation_space = spaces.Box(
            low=0.0, high=high, shape=(self.world.n_servers * fs + fj,), dtype=np.float32
        )
        self._obs_size = self.world.n_servers * fs + fj
        self.action_space = spaces.Discrete(self.world.n_servers)
        self._sim: EngineDriver | None = None
        self._job: JobArrival | None = None
        self._placed: list[int] = []

    # ----- helpers -----------------------------------------------------------------------------

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        assert self._sim is not None
        if self._job is None:
            mask = np.zeros(self.world.n_servers, dtype=np.int8)
            return np.zeros(self._obs_size, np.float32), {"action_mask": mask}
        work = self._work
        k = len(self._placed)
        server, jobf = features(work, self._job, k, self._placed, costs=self._costs)
        obs = np.concatenate([server.ravel(), jobf]).astype(np.float32)
        mask = work.mask(self._job.demands(), k).astype(np.int8)
        return obs, {"action_mask": mask, "job": self._job.id, "task": k}

    def _next(self) -> None:
        assert self._sim is not None
        self._job = self._sim.next_job()
        self._placed = []
        self._work = self._sim.state.copy()
        if self.feature_model is not None and self._job is not None:
            self._costs = predicted_costs(self._work, self._job, self.feature_model)

    # ----- the Gymnasium API -------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode on a fresh trace drawn from the environment's generator."""
        super().reset(seed=seed)
        trace_seed = int(self.np_random.integers(0, 2**31 - 1))
        mean = self.mean_interarrival_s
        if isinstance(mean, tuple):
            mean = float(self.np_random.uniform(*mean))
        arrivals = generate_arrivals(
            self.world, self.n_jobs, seed=trace_seed, mean_interarrival_s=mean
        )
        self._sim = EngineDriver(self.world, arrivals)
        self._next()
        return self._observe()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Place the current task on server ``action``."""
        if self._sim is None or self._job is None:
            raise InvalidInstanceError("action", "call reset() before step() (episode over)")
        job = self._job
        demands = job.demands()
        k = len(self._placed)
        mask = self._work.mask(demands, k)
        h = int(action)
        reward = 0.0
        invalid = not (0 <= h < self.world.n_servers and mask[h])
        if invalid:
            h = int(np.flatnonzero(mask)[0])
            reward -= INVALID_ACTION_PENALTY
        self._work.place_task(job, demands[k], h)
        self._placed.append(h)
        terminated = False
        extra: dict[str, Any] = {"invalid_action": invalid}
        if len(self._placed) == job.n_tasks:
            self._sim.commit(job, self._placed)
            reward += self._sim.state.cluster_speed(self.reward_model)
            self._next()
            if self._job is None:
                self._sim.finish()
                terminated = True
                extra["avg_jct_s"] = float(np.mean(self._sim.jcts()))
                extra["makespan_s"] = float(self._sim.makespan())
        obs, info = self._observe()
        info.update(extra)
        return obs, float(reward), terminated, False, info
