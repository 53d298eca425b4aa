r"""The free-server book and the placement rule on it (:mod:`optsched.sim.engine.placement`).

:class:`FreeServers` keeps one GPU type's free GPUs bucketed by count; :func:`fit` is the
placement rule on it, :func:`fit_reference` the same rule on plain free lists (its
specification, for tests).
"""

from __future__ import annotations

import bisect

from optsched.sim.engine.policy import GrantPlacement

__all__ = ["FreeServers", "fit", "fit_reference", "take"]


class FreeServers:
    r"""Free GPUs of one GPU type's servers, with the servers bucketed by their free count.

    ``cap[s]`` is server ``s``'s free GPUs; ``buckets[f]`` lists, in increasing order, the
    servers with exactly ``f`` free; ``total`` is their sum. The engine keeps one per type
    across decisions (the cluster as the running jobs leave it) instead of rebuilding the
    free lists from every running job at every decision. Taking or giving GPUs on a server
    moves it between two buckets, :math:`O(\log S + S)` with a small memmove constant for
    :math:`S` servers; the best-fit and most-free walks of placement read the buckets in
    :math:`O(g + \text{servers returned})` for ``g`` GPUs per server instead of scanning or
    sorting every server.
    """

    __slots__ = ("buckets", "cap", "total")

    def __init__(self, caps: list[int], gpus_per_server: int) -> None:
        self.cap = list(caps)
        self.total = sum(caps)
        self.buckets: list[list[int]] = [[] for _ in range(gpus_per_server + 1)]
        for s, f in enumerate(caps):
            self.buckets[f].append(s)

    def copy(self) -> FreeServers:
        """An independent copy."""
        new = FreeServers.__new__(FreeServers)
        new.cap = list(self.cap)
        new.total = self.total
        new.buckets = [list(b) for b in self.buckets]
        return new

    def take(self, s: int, k: int) -> None:
        """Take ``k`` free GPUs of server ``s``."""
        self._set(s, self.cap[s] - k)
        self.total -= k

    def give(self, s: int, k: int) -> None:
        """Give ``k`` GPUs of server ``s`` back."""
        self._set(s, self.cap[s] + k)
        self.total += k

    def _set(self, s: int, f: int) -> None:
        old = self.buckets[self.cap[s]]
        del old[bisect.bisect_left(old, s)]
        bisect.insort(self.buckets[f], s)
        self.cap[s] = f

    def best_fit(self, n: int) -> int:
        """The server with the fewest free GPUs that holds ``n`` (lowest index on ties), or -1."""
        buckets = self.buckets
        for f in range(n, len(buckets)):
            if buckets[f]:
                return buckets[f][0]
        return -1

    def most_free(self, count: int | None = None, gpus: int | None = None) -> list[int]:
        """Servers by decreasing free GPUs, lowest index on ties.

        The first ``count`` of them, or as many (with free GPUs) as hold ``gpus``.
        """
        order: list[int] = []
        held = 0
        for f in range(len(self.buckets) - 1, -1, -1):
            for s in self.buckets[f]:
                if count is not None and len(order) >= count:
                    return order
                if gpus is not None:
                    if held >= gpus or f == 0:
                        return order
                    held += f
                order.append(s)
        return order


def fit(fr: FreeServers, gpu_type: str, gps: int, n: int, mode: str) -> GrantPlacement | None:
    r""":func:`fit_reference` on the bucketed free servers (the same placement, taken from ``fr``).

    ``gps`` is the type's GPUs per server. :math:`O(g + \text{servers returned})` walks of the
    buckets, plus one bucket move per server taken.
    """
    k = -(-n // gps)
    if k == 1:
        best = fr.best_fit(n)
        if best >= 0:
            fr.take(best, n)
            return GrantPlacement(gpu_type, ((best, n),))
    else:
        order = fr.most_free(count=k)
        if sum(fr.cap[s] for s in order) >= n:
            return take(fr, gpu_type, order, n)
    if mode == "require":
        return None
    if fr.total < n:  # pragma: no cover - admission counted the GPUs
        return None
    return take(fr, gpu_type, fr.most_free(gpus=n), n)


def take(fr: FreeServers, gpu_type: str, order: list[int], n: int) -> GrantPlacement:
    """Take ``n`` GPUs from the servers of ``order``, in that order, each as much as it has."""
    servers: list[tuple[int, int]] = []
    left = n
    cap = fr.cap
    for s in order:
        if left == 0:
            break
        k = min(cap[s], left)
        if k > 0:
            servers.append((s, k))
            fr.take(s, k)
            left -= k
    return GrantPlacement(gpu_type, tuple(sorted(servers)))


def fit_reference(
    cap: list[int], gpus_per_server: int, gpu_type: str, n: int, mode: str
) -> GrantPlacement | None:
    """The placement rule, on plain free lists (``cap`` is taken from): the specification.

    A gang of ``n <= gpus_per_server`` GPUs goes on the server with the fewest free GPUs that
    holds it whole (lowest index on ties); a larger gang on the ``ceil(n / gpus_per_server)``
    servers with the most free GPUs (lowest index on ties) if they hold it. Otherwise, unless
    ``mode`` is ``"require"``, it is spread over the servers with the most free GPUs.
    """
    k = -(-n // gpus_per_server)
    if k == 1:
        best = -1
        for s, f in enumerate(cap):
            if f >= n and (best < 0 or f < cap[best]):
                best = s
        if best >= 0:
            cap[best] -= n
            return GrantPlacement(gpu_type, ((best, n),))
    else:
        order = sorted(range(len(cap)), key=lambda s: (-cap[s], s))[:k]
        if sum(cap[s] for s in order) >= n:
            return take_reference(cap, gpu_type, order, n)
    if mode == "require":
        return None
    order = sorted(range(len(cap)), key=lambda s: (-cap[s], s))
    if sum(cap) < n:
        return None
    return take_reference(cap, gpu_type, order, n)


def take_reference(cap: list[int], gpu_type: str, order: list[int], n: int) -> GrantPlacement:
    servers: list[tuple[int, int]] = []
    left = n
    for s in order:
        if left == 0:
            break
        k = min(cap[s], left)
        if k > 0:
            servers.append((s, k))
            cap[s] -= k
            left -= k
    return GrantPlacement(gpu_type, tuple(sorted(servers)))
