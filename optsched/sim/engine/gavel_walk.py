"""Gavel's mechanism, a round's choice: priorities, the walk of the per-type queues, the GPUs.

See :mod:`optsched.sim.engine.gavel`, "Priorities", "The walk" and "Placement".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from optsched.sim.engine.gavel_book import GavelBook, Key
from optsched.sim.engine.policy import GrantPlacement

__all__ = ["GavelWalk"]


class GavelWalk(GavelBook):
    """Which combinations run in a round, and on which GPUs (module notes)."""

    def _priority_table(self) -> NDArray[np.float64]:
        r"""Gavel's ``_update_priorities``: one column per type, one row per combination.

        Elementwise as Gavel: :math:`X / (t / T)` (:math:`X \cdot 10^9` where the fraction is
        0), 0 where :math:`X = 0` or the combination cannot run on the type. (The divisions
        skip the entries they would not keep, with the same values where they are kept.)
        """
        total = np.array([self.worker_time[name] for name in self.types])
        x = self.x
        fraction = np.divide(
            self.job_time, total, out=np.zeros_like(self.job_time), where=total != 0.0
        )
        p = np.divide(x, fraction, out=x * 1e9, where=fraction > 0.0)
        p[(x == 0.0) | ~self.can_run] = 0.0
        return p

    def priorities(self) -> dict[str, dict[Key, float]]:
        """Gavel's ``_update_priorities`` (module notes), for every combination and type."""
        table = self._priority_table()
        return {
            name: {key: float(table[r, j]) for key, r in self.row.items()}
            for j, name in enumerate(self.types)
        }

    def walk(self, order: list[str]) -> dict[str, list[Key]]:
        """The combinations counted on each type this round (module notes, "The walk")."""
        counted: dict[str, list[Key]] = {name: [] for name in order}
        keys = list(self.keys)
        table = self._priority_table()
        need = [self.jobs[key[0]].num_gpus for key in keys]
        # every type's ranking in one sort, by decreasing (p, deficit, X), ties in insertion
        # order: Gavel's stable sorted(reverse=True); lexsort is stable, its last key the
        # primary one, and sorts each row (type) of the transposed tables on its own
        ranks = np.lexsort((-self.x.T, -self.deficit.T, -table.T))
        runs_by_type = self.can_run.T.tolist()
        positive_by_type = (table.T > 0.0).tolist() if self.fifo else None
        done: set[int] = set()
        for name in order:
            j = self.col[name]
            ranked = ranks[j].tolist()
            runs = runs_by_type[j]
            positive = positive_by_type[j] if positive_by_type is not None else runs
            left = self.types[name].count
            here = counted[name]
            for r in ranked:
                if left == 0:
                    break  # the type's other entries are all skipped
                if not runs[r]:
                    continue
                key = keys[r]
                if key[0] in done or (len(key) == 2 and key[1] in done):
                    continue
                if not positive[r]:  # gavel-fifo only (runs otherwise, true here)
                    continue
                if need[r] > left:
                    continue
                left -= need[r]
                done.update(key)
                here.append(key)
        return counted

    def place(self, counted: dict[str, list[Key]]) -> dict[Key, tuple[str, tuple[int, ...]]]:
        """Gavel's worker assignment: keep previous GPUs when free, else first free in order."""
        placed: dict[Key, tuple[str, tuple[int, ...]]] = {}
        jobs, previous, alloc = self.jobs, self.prev, self.alloc
        for name, keys in counted.items():
            taken: set[int] = set()
            ptr = 0
            slots = self.slots[name]
            sizes = [jobs[key[0]].num_gpus for key in keys]
            distinct = sorted(set(sizes), reverse=True)
            for size in distinct:
                group = (
                    keys
                    if len(distinct) == 1
                    else [key for key, z in zip(keys, sizes, strict=True) if z == size]
                )
                fresh: list[Key] = []
                for key in group:
                    prev = previous.get(key)
                    if prev is not None and prev[0] == name and taken.isdisjoint(prev[1]):
                        placed[key] = prev
                        taken.update(prev[1])
                    else:
                        fresh.append(key)
                for key in fresh:
                    if key not in alloc:
                        continue  # new since the last reset: its GPUs stay idle
                    got: list[int] = []
                    while len(got) < size and ptr < len(slots):
                        if ptr not in taken:
                            got.append(ptr)
                            taken.add(ptr)
                        ptr += 1
                    if len(got) != size:  # pragma: no cover - the walk counted the GPUs
                        raise RuntimeError("could not place a counted gang")
                    placed[key] = (name, tuple(got))
        return placed

    def _placement(self, name: str, slots: tuple[int, ...]) -> GrantPlacement:
        memo = (name, slots)
        got = self._placement_memo.get(memo)
        if got is None:
            got = self._placement_memo[memo] = self._new_placement(name, slots)
        return got

    def _gang(self, name: str, slots: tuple[int, ...]) -> tuple[GrantPlacement, bool, int]:
        """The gang's placement, whether it is consolidated and its GPUs (kept per run)."""
        memo = (name, slots)
        got = self._gang_memo.get(memo)
        if got is None:
            placement = self._placement(name, slots)
            gps = self.types[name].gpus_per_server
            got = (placement, placement.consolidated(gps), placement.num_gpus)
            self._gang_memo[memo] = got
        return got

    def _new_placement(self, name: str, slots: tuple[int, ...]) -> GrantPlacement:
        per: dict[int, int] = {}
        for k in slots:
            s = self.slots[name][k][0]
            per[s] = per.get(s, 0) + 1
        return GrantPlacement(name, tuple(sorted(per.items())))
