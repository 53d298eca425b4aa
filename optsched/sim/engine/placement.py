"""Admission and placement of a decision's grants (see :mod:`optsched.sim.engine.policy`).

At every decision the grants are checked, admitted by count (in order; ``blocking`` stops at the
first that does not fit), and placed: explicit placements as given, jobs keeping their GPUs where
they are, the others by the placement rule of :mod:`~optsched.sim.engine.servers` on the engine's
free-server book (largest gang first), sharers on their partner's GPUs. A running gang spread over
more servers than it needs moves onto the fewest servers as soon as they have room for it whole
(Gavel's behaviour). Under ``keep_running`` the placement starts from the cluster as the running
jobs leave it (the book kept across decisions), otherwise from the empty cluster.
"""

from __future__ import annotations

from optsched.errors import PolicyError
from optsched.sim.engine.colocation import Colocation
from optsched.sim.engine.jobstate import Seen
from optsched.sim.engine.policy import Grant, GrantPlacement, PolicyDecision
from optsched.sim.engine.servers import FreeServers
from optsched.sim.engine.servers import fit as fit_rule

__all__ = ["Placement"]

#: what each placed job holds: its placement and its partner (-1 when alone)
Placed = dict[int, tuple[GrantPlacement, int]]


class Placement(Colocation):
    """The engine's placement part (module notes)."""

    def _check_grant(self, g: Grant, seen: set[int] | Seen) -> int:
        if not isinstance(g, Grant):
            raise PolicyError(f"{self.policy.name}: grants must be Grant, got {type(g).__name__}")
        i = self.index.get(g.job, -1)
        if i < 0 or i not in self.active:
            raise PolicyError(f"{self.policy.name}: granted job {g.job!r} is not active")
        if i in seen:
            raise PolicyError(f"{self.policy.name}: job {g.job!r} granted twice")
        if g.gpu_type not in self.types:
            raise PolicyError(f"{self.policy.name}: unknown GPU type {g.gpu_type!r}")
        if g.num_gpus is not None:
            job = self.jobs[i]
            n = g.num_gpus
            if (
                isinstance(n, bool)
                or not isinstance(n, int)
                or not (job.min_gpus <= n <= job.max_gpus)
            ):
                raise PolicyError(
                    f"{self.policy.name}: job {g.job!r} granted {n!r} GPUs outside its gang "
                    f"sizes {job.min_gpus}..{job.max_gpus}"
                )
        seen.add(i)
        return i

    def _need(self, i: int, g: Grant) -> int:
        return self.jobs[i].num_gpus if g.num_gpus is None else g.num_gpus

    def _place(self, alloc: PolicyDecision, incremental: bool) -> Placed:
        """Admission by count, then placement (see :mod:`optsched.sim.engine.policy`).

        The free servers are the engine's running picture of the cluster (:class:`FreeServers`
        per type): under ``keep_running`` the placement starts from it as the running jobs
        leave it, with no pass over them; otherwise from the empty cluster. Either way the
        result is the cluster the returned placement leaves, kept for the next decision.
        """
        free = self._release_gone()
        keep = alloc.keep_running
        changed: list[int] = []
        self._changed = changed
        released: list[int] = []
        seen: set[int] | Seen
        self._fast = fast = keep and incremental and self.coloc is None
        if keep:
            # every running job keeps its GPUs and partner; the grants only add jobs
            # (incremental: the kept holdings are the placement, updated in place)
            placed = self._holds if fast else dict(self._holds)
            if alloc.stop is not None:
                # ... except those that stop and those granted again (placed as in the full form)
                released = self._release_listed(alloc, placed, free)
            seen = Seen(placed) if fast else set(placed)
            free_count = {name: fr.total for name, fr in free.items()}
            self._reconsolidate_kept(placed, free)
        else:
            free = self._free = {name: fr.copy() for name, fr in self._empty.items()}
            placed = {}
            seen = set()
            free_count = {name: t.count for name, t in self.types.items()}
        admitted, sharers = self._admit(alloc, seen, free_count)
        rest = self._place_explicit(admitted, free, placed)
        self._place_free(self._keep_current(rest, free, placed), free, placed)
        self._place_sharers(sharers, placed)
        self._released = released
        if fast:
            pass  # the holdings are the placement
        elif keep:
            holds = self._holds
            for i in released:
                del holds[i]
            for i in changed:
                holds[i] = placed[i]
        else:
            self._holds = dict(placed)
        if self.lazy:
            # the jobs whose run changes are brought up to now under their old run
            for i in (*released, *changed) if keep else list(self.running):
                run = self.running.get(i)
                if run is not None:
                    self._catch_up(i, run)
        return placed

    def _place_free(
        self,
        others: list[tuple[int, Grant]],
        free: dict[str, FreeServers],
        placed: Placed,
    ) -> None:
        """Place the other admitted grants on free servers, largest gang first."""
        fit_rates = self._fit_rates
        if fit_rates:
            fit_rates.clear()  # (left by jobs placed but not started: the colocation mode)
        others.sort(key=lambda ig: -self._need(*ig))
        for i, g in others:
            fr = free[g.gpu_type]
            fit = self._fit(fr, g.gpu_type, self._need(i, g), g.consolidate)
            if fit is None:
                continue
            rate = self._rate(i, fit, -1)
            if rate <= 0:
                # spread where the table's unconsolidated rate is 0: it would not progress
                for s, k in fit.servers:
                    fr.give(s, k)
                self.zero_rate_grants += 1
                continue
            if i not in self.running:
                # the rate its run starts with, unless it is paired (``_start``): a waiting
                # job's progress, and so its batch phase, does not change before it starts
                fit_rates[i] = (fit, rate)
            placed[i] = (fit, -1)
            self._changed.append(i)

    def _admit(
        self, alloc: PolicyDecision, seen: set[int] | Seen, free_count: dict[str, int]
    ) -> tuple[list[tuple[int, Grant]], list[tuple[int, Grant]]]:
        """The grants admitted by count (``free_count`` taken from) and the sharers, checked."""
        admitted: list[tuple[int, Grant]] = []
        sharers: list[tuple[int, Grant]] = []
        for g in alloc.grants:
            i = self._check_grant(g, seen)
            if not self._runs_on(i, g):
                # never place a job where it cannot progress: the grant is dropped (counted in
                # the record) and the job waits, whichever policy asked for it
                self.zero_rate_grants += 1
                continue
            if g.share_with is not None:
                sharers.append((i, g))
                continue
            need = self._need(i, g)
            if free_count[g.gpu_type] >= need:
                free_count[g.gpu_type] -= need
                admitted.append((i, g))
            elif alloc.blocking:
                break
        return admitted, sharers

    def _release_listed(
        self,
        alloc: PolicyDecision,
        placed: Placed,
        free: dict[str, FreeServers],
    ) -> list[int]:
        """Free the GPUs of the running jobs that stop or are granted again (``stop`` form)."""
        released: list[int] = []
        stopping = set()
        for job in alloc.stop or ():
            i = self.index.get(job, -1)
            if i not in placed:
                raise PolicyError(f"{self.policy.name}: stopped job {job!r} is not running")
            stopping.add(i)
            released.append(i)
        for g in alloc.grants:
            i = self.index.get(g.job, -1) if isinstance(g, Grant) else -1
            if i in stopping:
                raise PolicyError(f"{self.policy.name}: job {g.job!r} both stopped and granted")
            if i in placed and i not in released:
                released.append(i)
        for i in released:
            placement, partner = placed.pop(i)
            if partner >= 0:
                raise PolicyError(
                    f"{self.policy.name}: {self.jobs[i].job_id!r} shares its GPUs: it cannot "
                    "be stopped or granted again under keep_running"
                )
            fr = free[placement.gpu_type]
            for s, k in placement.servers:
                fr.give(s, k)
        return released

    def _release_gone(self) -> dict[str, FreeServers]:
        """Give back the GPUs of the jobs completed since the last placement."""
        if self.coloc is not None:
            # the colocation mode drops placed jobs whose tasks miss CPUs after the placement:
            # the picture is rebuilt from the running jobs
            self._gone = []
            self._holds = {i: (r.placement, r.partner) for i, r in self.running.items()}
            self._free = {name: fr.copy() for name, fr in self._empty.items()}
            for i, (placement, partner) in self._holds.items():
                if 0 <= partner < i:
                    continue  # a shared pair holds its GPUs once
                for s, k in placement.servers:
                    self._free[placement.gpu_type].take(s, k)
            return self._free
        holds, free = self._holds, self._free
        for i in self._gone:
            held = holds.pop(i, None)
            if held is None:
                continue
            placement, partner = held
            if partner >= 0 and partner in holds:
                if partner in self.running:
                    holds[partner] = (placement, -1)  # it runs on alone on the pair's GPUs
                    continue
                del holds[partner]
            fr = free[placement.gpu_type]
            for s, k in placement.servers:
                fr.give(s, k)
        self._gone = []
        return free

    def _runs_on(self, i: int, g: Grant) -> bool:
        """Whether job ``i`` progresses on a consolidated gang of the grant's type and size.

        A function of the job, the type and the size (the world does not change during a
        run): kept, since a preemptive policy grants the same job again and again.
        """
        n = self.jobs[i].num_gpus if g.num_gpus is None else g.num_gpus
        key = (i, g.gpu_type, n)
        runs = self._runs.get(key)
        if runs is None:
            runs = self._runs[key] = self.world.rate(self.jobs[i], g.gpu_type, True, num_gpus=n) > 0
        return runs

    def _consolidated_room(self, fr: FreeServers, gpu_type: str, n: int) -> GrantPlacement | None:
        """A consolidated placement of ``n`` GPUs in ``fr`` (taken from it), or ``None``."""
        return self._fit(fr, gpu_type, n, "require")

    def _reconsolidate_kept(self, placed: Placed, free: dict[str, FreeServers]) -> None:
        """Move every kept spread gang onto servers with room for it whole (Gavel's rule)."""
        moved: list[int] = []
        for i in sorted(self.spread):
            run = self.running.get(i)
            if run is None or run.partner >= 0 or i not in placed:
                # a shared pair moves only with its partner's grant; a job stopped or granted
                # again (``stop`` form) is placed with the grants
                continue
            p = run.placement
            fr = free[p.gpu_type]
            for s, k in p.servers:
                fr.give(s, k)
            fit = self._consolidated_room(fr, p.gpu_type, p.num_gpus)
            if fit is None or self._rate(i, fit, -1) <= 0:
                if fit is not None:
                    for s, k in fit.servers:
                        fr.give(s, k)
                for s, k in p.servers:
                    fr.take(s, k)
                continue
            placed[i] = (fit, -1)
            moved.append(i)
        if moved:
            # the moved jobs restart in the order of the running jobs (their completion events
            # are scheduled in that order), ahead of the jobs started now
            ids = set(moved)
            for i in [i for i in self.running if i in ids]:
                placed[i] = placed.pop(i)
                self._changed.append(i)

    def _place_explicit(
        self,
        admitted: list[tuple[int, Grant]],
        free: dict[str, FreeServers],
        placed: Placed,
    ) -> list[tuple[int, Grant]]:
        """Carry out the explicit placements; the other admitted grants are returned."""
        rest: list[tuple[int, Grant]] = []
        for i, g in admitted:
            if g.placement is None:
                rest.append((i, g))
                continue
            p = g.placement
            if p.gpu_type != g.gpu_type or p.num_gpus != self._need(i, g):
                raise PolicyError(
                    f"{self.policy.name}: placement of {g.job!r} is not {self._need(i, g)} "
                    f"GPUs of {g.gpu_type}"
                )
            fr = free[g.gpu_type]
            cap = fr.cap
            for s, k in p.servers:
                if not (0 <= s < len(cap)) or k < 1 or cap[s] < k:
                    raise PolicyError(
                        f"{self.policy.name}: placement of {g.job!r} asks {k} GPUs of "
                        f"{g.gpu_type} server {s}, which has "
                        f"{cap[s] if 0 <= s < len(cap) else 0} free"
                    )
            for s, k in p.servers:
                fr.take(s, k)
            placed[i] = (p, -1)
            self._changed.append(i)
        return rest

    def _keep_current(
        self,
        rest: list[tuple[int, Grant]],
        free: dict[str, FreeServers],
        placed: Placed,
    ) -> list[tuple[int, Grant]]:
        """Jobs keeping their GPUs: consolidated gangs first, then spread ones.

        A spread gang is re-placed consolidated when servers have room for it whole (a
        migration, with the restore cost), and keeps its servers only otherwise. The jobs
        left to place are returned.
        """
        others: list[tuple[int, Grant]] = []
        spread: list[tuple[int, Grant, GrantPlacement]] = []
        for i, g in rest:
            cur = self.states[i].placement
            if cur is None or cur.gpu_type != g.gpu_type or cur.num_gpus != self._need(i, g):
                others.append((i, g))
            elif i in self.spread:
                spread.append((i, g, cur))
            elif self._take_if_free(free[g.gpu_type], cur):
                placed[i] = (cur, -1)
                self._changed.append(i)
            else:
                others.append((i, g))
        for i, g, cur in spread:
            fr = free[g.gpu_type]
            fit = self._consolidated_room(fr, g.gpu_type, cur.num_gpus)
            if fit is not None:
                placed[i] = (fit, -1)
                self._changed.append(i)
            elif self._take_if_free(fr, cur):
                placed[i] = (cur, -1)
                self._changed.append(i)
            else:
                others.append((i, g))
        return others

    @staticmethod
    def _take_if_free(fr: FreeServers, placement: GrantPlacement) -> bool:
        cap = fr.cap
        if all(cap[s] >= k for s, k in placement.servers):
            for s, k in placement.servers:
                fr.take(s, k)
            return True
        return False

    def _place_sharers(self, sharers: list[tuple[int, Grant]], placed: Placed) -> None:
        """Space sharing: each sharer runs on exactly its partner's GPUs."""
        for i, g in sharers:
            j = self.index.get(g.share_with or "", -1)
            if j not in placed:
                continue  # the partner did not get GPUs this time: neither does the sharer
            p, partner = placed[j]
            if partner >= 0 or p.gpu_type != g.gpu_type:
                raise PolicyError(
                    f"{self.policy.name}: {g.job!r} cannot share {g.share_with!r} "
                    "(already shared, or another GPU type)"
                )
            if self._need(i, g) != p.num_gpus:
                raise PolicyError(
                    f"{self.policy.name}: {g.job!r} and {g.share_with!r} differ in gang size"
                )
            if self._rate(i, p, j) <= 0 or self._rate(j, p, i) <= 0:
                raise PolicyError(
                    f"{self.policy.name}: {g.job!r} and {g.share_with!r} cannot share a GPU "
                    "(pair not measured or out of memory)"
                )
            placed[j] = (p, i)
            placed[i] = (p, j)
            self._changed += (j, i)

    def _fit(self, fr: FreeServers, gpu_type: str, n: int, mode: str) -> GrantPlacement | None:
        """The placement rule (:func:`~optsched.sim.engine.servers.fit`) on ``fr``."""
        return fit_rule(fr, gpu_type, self.types[gpu_type].gpus_per_server, n, mode)
