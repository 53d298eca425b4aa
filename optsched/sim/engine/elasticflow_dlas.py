r"""ElasticFlow's DLAS-GPU baseline: discretized least attained service in GPU time.

Read from ElasticFlow's simulator (``dlas_sim_jobs(gputime=True)``, its ``dlas-gpu``), which is
Tiresias's discretized 2D-LAS as ElasticFlow configures it; none of it copied. Three queues; a
job arrives at the end of queue 0 and moves to the end of the next queue when its attained
service, its executed seconds times its gang size, reaches ``3250`` GPU-seconds (queue 0) or
``7200`` (queue 1); queue 2 is the last. A job runs on its requested gang, always. At a
decision the running jobs that crossed their queue's limit are demoted first, then the queues are
walked in order, each front to back, and a job runs when its gang fits in the GPUs left
(*skipping*: a larger job that does not fit does not block a smaller one behind it); a running
job that does not fit is preempted. After the walk each queue puts its waiting jobs behind its
running ones (in their order), so a running job keeps its place and a preempted one goes back.
No starvation rule (ElasticFlow runs it with ``solve_starvation = 0``).

The next demotion is a decision point: for a running job of queue :math:`q < 2` with
:math:`e` executed seconds on :math:`n` GPUs, at :math:`t + \lceil (\mathrm{limit}_q - e)/n
\rceil` (ElasticFlow's formula, read as written), never earlier than one slot after the last
decision.

Complexity: a decision is :math:`O(J)` for :math:`J` active jobs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["DLAS_LIMITS", "DlasQueues"]

#: GPU-seconds of attained service at which a job leaves queue 0, then queue 1.
DLAS_LIMITS: tuple[float, ...] = (3250.0, 7200.0)


class DlasQueues:
    """The queues of ElasticFlow's DLAS-GPU (module notes)."""

    def __init__(
        self, gangs: Sequence[int], total: int, limits: Sequence[float] = DLAS_LIMITS
    ) -> None:
        self.gangs = list(gangs)
        self.total = total
        #: the GPU-seconds at which a job leaves queue ``q`` (one fewer than the queues)
        self.limits = tuple(limits)
        self.queues: list[list[int]] = [[] for _ in range(len(self.limits) + 1)]
        self.qid: dict[int, int] = {}
        self.executed: dict[int, float] = {}
        self.running: set[int] = set()

    def add(self, new: Sequence[int]) -> None:
        """Arrivals join the end of queue 0."""
        for i in new:
            self.queues[0].append(i)
            self.qid[i] = 0
            self.executed[i] = 0.0

    def remove(self, i: int) -> None:
        """A completed job leaves its queue."""
        self.queues[self.qid.pop(i)].remove(i)
        self.running.discard(i)

    def account(self, i: int, seconds: float) -> None:
        """``seconds`` of execution (overhead excluded) attained by job ``i``."""
        self.executed[i] += seconds

    def decide(self) -> dict[int, int]:
        """Demote, walk the queues, and return the gangs that run (job -> GPUs)."""
        for i in sorted(
            self.running, key=lambda k: (self.qid[k], self.queues[self.qid[k]].index(k))
        ):
            self.demote(i)
        return self.walk()

    def demote(self, i: int) -> bool:
        """Move job ``i`` to the end of the next queue if it reached its queue's limit."""
        q = self.qid[i]
        if q < len(self.limits) and self.executed[i] * self.gangs[i] >= self.limits[q]:
            self.move(i, q + 1)
            return True
        return False

    def move(self, i: int, q: int) -> None:
        """Job ``i`` leaves its queue for the end of queue ``q``."""
        self.queues[self.qid[i]].remove(i)
        self.queues[q].append(i)
        self.qid[i] = q

    def walk(self) -> dict[int, int]:
        """The walk of the queues and the re-partition after it (module notes): job -> GPUs."""
        free = self.total
        run: dict[int, int] = {}
        for queue in self.queues:
            for i in queue:
                if self.gangs[i] <= free:
                    run[i] = self.gangs[i]
                    free -= self.gangs[i]
        for k, queue in enumerate(self.queues):
            self.queues[k] = [i for i in queue if i in run] + [i for i in queue if i not in run]
        self.running = set(run)
        return run

    def next_demotion(self, t: float) -> float:
        """The earliest time a running job reaches its queue's limit (``inf``: none)."""
        best = math.inf
        for i in self.running:
            q = self.qid[i]
            if q < len(self.limits):
                best = min(best, t + math.ceil((self.limits[q] - self.executed[i]) / self.gangs[i]))
        return best
