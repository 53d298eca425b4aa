"""The colocation mode's part of the engine (:mod:`optsched.sim.world.colocation`).

In the colocation mode every job's workers run on GPUs as usual and its parameter servers on
servers' CPUs; a job's speed depends on the jobs with tasks on the same servers. This part keeps
the jobs on each server, chooses and checks parameter servers and CPUs at each decision, and
refreshes the rates of the jobs a start or a stop slows down or speeds up.
"""

from __future__ import annotations

from optsched.errors import PolicyError
from optsched.sim.engine.jobstate import Run
from optsched.sim.engine.policy import Grant, GrantPlacement, PolicyDecision
from optsched.sim.engine.progress import Progress
from optsched.tolerances import CAPACITY_TOL

__all__ = ["Colocation"]


class Colocation(Progress):
    """The engine's colocation part (module notes)."""

    def _coloc_servers(self, run: Run) -> set[int]:
        """The servers holding any task of a run: its workers' and its parameter servers'."""
        return {s for s, _ in run.placement.servers} | set(run.ps)

    def _coloc_join(self, i: int, run: Run) -> None:
        for h in self._coloc_servers(run):
            self.on_server[h][i] = None

    def _coloc_leave(self, i: int, run: Run) -> None:
        for h in self._coloc_servers(run):
            self.on_server[h].pop(i, None)

    def _coloc_rate(self, i: int, run: Run) -> float:
        """The consolidated rate times the speed factor of the jobs on the run's servers."""
        coloc = self.coloc
        assert coloc is not None
        types = coloc.job_types
        neighbours = [
            [types[self.jobs[k].job_id] for k in self.on_server[h] if k != i]
            for h in sorted(self._coloc_servers(run))
        ]
        job = self.jobs[i]
        base = self.world.rate(job, run.placement.gpu_type, True, num_gpus=run.placement.num_gpus)
        return base * coloc.speed_factor(types[job.job_id], neighbours)

    def _coloc_refresh(self, t: float, stopped: list[Run], fresh: list[int]) -> list[int]:
        """New rates of the jobs sharing a server with the ones stopped or started at ``t``.

        Every started job (``fresh``) gets its rate; every other affected job whose rate
        changes is synced, its record segment closed at ``t`` (each segment keeps one rate),
        and returned, to have its completion rescheduled.
        """
        touched: set[int] = set()
        for run in stopped:
            touched |= self._coloc_servers(run)
        for i in fresh:
            touched |= self._coloc_servers(self.running[i])
        affected: set[int] = set()
        for h in touched:
            affected.update(self.on_server[h])
        started = set(fresh)
        out: list[int] = []
        for j in sorted(affected):
            run = self.running[j]
            rate = self._coloc_rate(j, run)
            if j in started:
                run.rate = rate
            elif rate != run.rate:
                self._sync(j, t)
                self._close(j, t)
                run.rate = rate
                out.append(j)
        return out

    def _coloc_place(
        self, alloc: PolicyDecision, placed: dict[int, tuple[GrantPlacement, int]]
    ) -> dict[int, tuple[int, ...]]:
        """Parameter servers and CPUs of every placed job (colocation mode).

        Jobs keeping their placement keep their PSs and are counted first; a grant's
        ``ps_servers`` are checked, and a job without them gets each PS on the server with
        the most free CPUs (lowest index first). A job whose tasks do not fit the CPUs waits
        (dropped from ``placed``, counted) unless the policy placed it explicitly, which is
        a :class:`PolicyError` naming the job and the server.
        """
        coloc = self.coloc
        assert coloc is not None
        name = self.policy.name
        n_servers = len(self.on_server)
        cap = coloc.cpus_per_server
        used = [0.0] * n_servers
        grants: dict[int, Grant] = {}
        for given in alloc.grants:
            k = self.index.get(given.job, -1)
            if k >= 0:
                grants[k] = given

        def kept(k: int) -> bool:
            run = self.running.get(k)
            return run is not None and (
                placed[k][0] is run.placement or placed[k][0] == run.placement
            )

        order = [k for k in placed if kept(k)] + [k for k in placed if not kept(k)]
        out: dict[int, tuple[int, ...]] = {}
        for i in order:
            placement, partner = placed[i]
            jid = self.jobs[i].job_id
            if partner >= 0:
                raise PolicyError(
                    f"{name}: job {jid!r} shares GPUs; the colocation mode models no space sharing"
                )
            g = grants.get(i)
            ps = self._coloc_ps(i, g, placement, used, kept(i))
            use = coloc.cpu_use(placement.servers, ps)
            over = [s for s, c in sorted(use.items()) if used[s] + c > cap + CAPACITY_TOL]
            if over:
                s = over[0]
                explicit = g is not None and (g.placement is not None or bool(g.ps_servers))
                if explicit:
                    raise PolicyError(
                        f"{name}: job {jid!r} needs {use[s]:g} CPUs on server {s}, which has "
                        f"{max(0.0, cap - used[s]):g} free"
                    )
                del placed[i]  # the job waits: its tasks do not fit the CPUs
                self.cpu_dropped += 1
                continue
            for s, c in use.items():
                used[s] += c
            out[i] = ps
        return out

    def _coloc_ps(
        self, i: int, g: Grant | None, placement: GrantPlacement, used: list[float], kept: bool
    ) -> tuple[int, ...]:
        """Job ``i``'s parameter servers: the grant's (checked), its run's, or the freest CPUs.

        ``used`` is the CPUs taken on each server by the jobs counted before it; ``kept``
        whether the decision keeps its run.
        """
        coloc = self.coloc
        assert coloc is not None
        name = self.policy.name
        jid = self.jobs[i].job_id
        n_servers = len(self.on_server)
        n_ps = coloc.ps[jid]
        if g is not None and g.ps_servers:
            ps = tuple(g.ps_servers)
            if len(ps) != n_ps or any(
                isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n_servers for h in ps
            ):
                raise PolicyError(
                    f"{name}: ps_servers of {jid!r} must be {n_ps} servers in "
                    f"0..{n_servers - 1}, got {ps!r}"
                )
            if kept and ps != self.running[i].ps:
                raise PolicyError(
                    f"{name}: job {jid!r} runs with its PSs on {self.running[i].ps}; "
                    f"a running job's PSs do not move (got {ps!r})"
                )
            return ps
        if kept:
            return self.running[i].ps
        workers = coloc.cpu_use(placement.servers, ())
        free = list(used)
        for s, c in workers.items():
            free[s] += c
        chosen: list[int] = []
        for _ in range(n_ps):
            h = min(range(n_servers), key=lambda s: (free[s], s))
            chosen.append(h)
            free[h] += coloc.ps_cpus
        return tuple(chosen)
