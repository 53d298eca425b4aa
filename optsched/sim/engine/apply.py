"""Carrying a placed decision out: the running jobs that stop, those kept, those that start.

A decision's placement (:mod:`~optsched.sim.engine.placement`) says what every job holds after
it. Each running job whose placement changes is stopped (its record segment closed, counted as a
preemption); one whose partner changes gets its new rate in a new segment; every placed job
receives a round; the jobs not running start a run (with the restore cost if they ran before, or
on every first start under ``restore_on_first_start``), and every changed run's next event is
scheduled. A ``keep_running`` decision is carried out at the cost of its changes
(:meth:`Apply._apply_changes`) unless :data:`INCREMENTAL_APPLY` is off.
"""

from __future__ import annotations

import math

from optsched.errors import PolicyError
from optsched.sim.engine.jobstate import Run
from optsched.sim.engine.placement import Placed, Placement
from optsched.sim.engine.policy import GrantPlacement, PolicyDecision
from optsched.tolerances import TIME_TOL

__all__ = ["INCREMENTAL_APPLY", "Apply"]

#: Carry out ``keep_running`` decisions at the cost of their changes (the running jobs that stop,
#: move, change partner or start), not of the running jobs; ``False`` runs every decision
#: through the full pass over the running jobs (the specification, for tests).
INCREMENTAL_APPLY = True


class Apply(Placement):
    """The engine's apply part (module notes)."""

    def _apply(self, t: float, alloc: PolicyDecision) -> None:
        """Carry out the decision taken at ``t`` on the state :meth:`_decide` gave."""
        if not isinstance(alloc, PolicyDecision):
            raise PolicyError(f"{self.policy.name}: allocate must return a PolicyDecision")
        if (
            INCREMENTAL_APPLY
            and alloc.keep_running
            and not alloc.grants
            and not alloc.stop
            and not self.spread
            and self.coloc is None
        ):
            self._keep_all(t, alloc)
            return
        placed = self._place(alloc, INCREMENTAL_APPLY)
        if self._fast:
            self._apply_changes(t, placed)
            self._set_wake(t, alloc)
            return
        if self._kept:
            for i, run in self.running.items():
                self._credit(i, run, self._kept)
        ps_of = self._coloc_place(alloc, placed) if self.coloc is not None else {}
        stopped: list[Run] = []
        # stop or change what no longer runs as before
        changed: list[int] = []
        for i, run in list(self.running.items()):
            if self._keep_or_stop(i, run, placed.get(i), t, changed):
                continue
            if self.coloc is not None:
                stopped.append(run)
                self._coloc_leave(i, run)
        for i, (placement, partner) in placed.items():
            self._give_round(i, placement, partner)
            if i not in self.running:
                self._start(i, t, placement, partner, ps_of.get(i, ()), self._kept)
                changed.append(i)
        if self.coloc is not None:
            changed.extend(self._coloc_refresh(t, stopped, changed))
        for i in changed:
            self._schedule_completion(i)
        self._set_wake(t, alloc)

    def _keep_all(self, t: float, alloc: PolicyDecision) -> None:
        """Carry out a decision that keeps every running job and starts none, in O(1).

        A ``keep_running`` decision with no grant and no ``stop`` when no kept gang is spread
        (none to move onto fewer servers): what :meth:`_place` and :meth:`_apply_changes` do
        with it, without their passes over empty lists: the GPUs of the jobs completed since
        the last decision go back to the free picture and every running job receives a round
        (counted when read, :meth:`_credit`). It is most of a wake-up at which nothing changes.
        """
        if self._gone:
            self._release_gone()
        self._changed = []
        self._released = []
        self._fast = True
        self._kept += 1
        self._set_wake(t, alloc)

    def _keep_or_stop(
        self,
        i: int,
        run: Run,
        new: tuple[GrantPlacement, int] | None,
        t: float,
        changed: list[int],
    ) -> bool:
        """Keep running job ``i`` where the decision leaves it (``True``), or stop it.

        A kept job whose partner changes gets its new rate and is added to ``changed``; a
        stopped one is closed, counted as preempted and leaves ``running``.
        """
        if new is not None and (new[0] is run.placement or new[0] == run.placement):
            if new[1] != run.partner:
                self._close(i, t)
                run.partner = new[1]
                run.rate = self._rate(i, run.placement, new[1])
                changed.append(i)
            return True
        self._close(i, t)
        del self.running[i]
        del self._running_states[i]
        self._running_view = None
        self.spread.discard(i)
        st = self.states[i]
        st.preemptions += 1
        st.last_stop = t
        st.placement = None
        st.partner = None
        st.ps_servers = ()
        return False

    def _apply_changes(self, t: float, placed: Placed) -> None:
        """:meth:`_apply`'s passes for a ``keep_running`` decision, over its changes only.

        ``placed`` is every running job's holding as the decision leaves it; only the jobs
        released (``stop`` form) and those the placement set (started, moved, paired) can
        differ from their run. They are stopped in the order of the running jobs and started
        in the order of ``placed``, as the full pass does, so the record is the same; every
        other running job is left alone (its round received is counted when its state's
        ``rounds_received`` is read, see :meth:`_credit`).
        """
        running = self.running
        # the candidates, in the order the placement inserted them into ``placed``
        cands = dict.fromkeys(self._changed)
        for i in self._released:
            cands.setdefault(i, None)
        changed: list[int] = []
        touched = [i for i in cands if i in running]
        if len(touched) > 1:
            touched.sort(key=lambda i: running[i].seq)
        self._kept += 1  # every running job not touched here receives a round (when read)
        kept = self._kept
        for i in touched:
            run = running[i]
            # the rounds of the run up to the last decision; this one's is counted below
            self._credit(i, run, kept - 1)
            run.credit = kept
            self._keep_or_stop(i, run, placed.get(i), t, changed)
        for i in cands:
            held = placed.get(i)
            if held is None:
                continue  # stopped
            placement, partner = held
            self._give_round(i, placement, partner)
            if i not in running:
                self._start(i, t, placement, partner, (), kept)
                changed.append(i)
        for i in changed:
            self._schedule_completion(i)

    def _set_wake(self, t: float, alloc: PolicyDecision) -> None:
        self.wake_at = math.inf
        if alloc.wake_at is not None:
            w = float(alloc.wake_at)
            if math.isnan(w) or not (w > t + TIME_TOL):
                raise PolicyError(f"{self.policy.name}: wake_at {w} is not after now ({t})")
            self.wake_at = w

    def _give_round(self, i: int, placement: GrantPlacement, partner: int) -> None:
        """Job ``i`` receives this decision's round on ``placement``, with ``partner``."""
        st = self.states[i]
        st.rounds_received[placement.gpu_type] = st.rounds_received.get(placement.gpu_type, 0) + 1
        st.partner = self.jobs[partner].job_id if partner >= 0 else None

    def _start(
        self,
        i: int,
        t: float,
        placement: GrantPlacement,
        partner: int,
        ps: tuple[int, ...],
        credit: int,
    ) -> None:
        """Start job ``i``'s run at ``t`` (its restore cost charged if it ran before)."""
        overhead = self.restore if (self.ever_ran[i] or self.first_restore) else 0.0
        fitted = self._fit_rates.pop(i, None)
        if fitted is not None and fitted[0] is placement and partner < 0:
            rate = fitted[1]
        else:
            rate = self._rate(i, placement, partner)
        self._seq += 1
        self._running_view = None
        self._running_states[i] = self.states[i]
        run = self.running[i] = Run(
            placement=placement,
            partner=partner,
            seg_start=t,
            synced=t,
            overhead=overhead,
            rate=rate,
            version=0,
            gpus=placement.num_gpus,
            ps=ps,
            seq=self._seq,
            credit=credit,
        )
        if self.coloc is not None:
            self._coloc_join(i, run)
        elif not placement.consolidated(self.types[placement.gpu_type].gpus_per_server):
            # (a colocation placement is spread on purpose: never moved by Gavel's rule)
            self.spread.add(i)
        st = self.states[i]
        st.placement = placement
        st.ps_servers = ps
        st.last_start = t
        if math.isnan(self.first_start[i]):
            self.first_start[i] = t
