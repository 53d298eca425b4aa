r"""The TensorLights instance: hosts with NIC capacities and the parameter-server jobs on them.

Units: seconds, bytes and bytes per second (1 MB = :math:`10^6` bytes; the command line takes
bandwidths in Gbit/s and converts them).

Beyond the per-field bounds, an instance is accepted only if every time the simulator can
produce is representable: the horizon bound :math:`T`
(:meth:`TensorLightsInstance.horizon_bound`) is at most :data:`MAX_HORIZON`, every NIC's total
bytes and :math:`B_h T` are finite, and the shortest standalone broadcast is at least
:data:`MIN_DURATION` and at least :math:`T /` :data:`MAX_TIME_RANGE` (so a clock at :math:`T`
still resolves it to about :math:`10^{-7}` of its length). Whatever validates simulates without
overflow or NaN.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

__all__ = [
    "MAX_TIME_RANGE",
    "MIN_DURATION",
    "NicHost",
    "PSJob",
    "TensorLightsInstance",
    "instance_schema",
]

#: Largest ratio of the horizon bound to the shortest standalone broadcast (and, in the
#: simulator, to the rotation period). Float64 times carry 53 bits: at this ratio (about
#: :math:`2^{30}`) a clock reading near the horizon still resolves the shortest interval to
#: :math:`2^{-23} \approx 10^{-7}` of its length.
MAX_TIME_RANGE = 1e9

#: Largest horizon bound in seconds (about 31,700 years): far beyond any training run, and small
#: enough that sums of squared times (iteration-time deviations) cannot overflow.
MAX_HORIZON = 1e12
#: Shortest standalone broadcast (and rotation period) in seconds: the simulator treats instants
#: closer than :math:`10^{-12}` of the clock (at least :math:`10^{-12}` s) as one, so durations
#: must be far above that.
MIN_DURATION = 1e-9

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class NicHost(Frozen):
    """A host whose NIC carries the PS traffic of the jobs placed on it.

    Attributes
    ----------
    name : str
    bandwidth_bytes_per_s : float
        Egress capacity :math:`B_h` in bytes per second (> 0).
    """

    name: str = ""
    bandwidth_bytes_per_s: PositiveFloat = Field(
        description="NIC egress capacity in bytes per second."
    )


class PSJob(Frozen):
    r"""A parameter-server training job.

    Attributes
    ----------
    name : str
    workers : int
        :math:`n_j \ge 1` workers, each receiving the whole model update every iteration.
    message_bytes : float
        :math:`m_j > 0`: bytes of model update each worker receives per iteration, split evenly
        over the PS shards.
    compute_time_s : float
        :math:`c_j \ge 0`: seconds of the compute phase of one iteration (forward, backward,
        gradient push and PS update).
    iterations : int
        :math:`I_j \ge 1`.
    ps_hosts : tuple of int
        Indices of the hosts holding the job's PS shards (distinct, non-empty).
    start_s : float
        :math:`s_j \ge 0`: when the first compute phase starts (seconds).
    weight : float
        :math:`w_j \in [10^{-9}, 10^9]`, for the weighted JCT objective (bounded so that weighted
        sums neither overflow nor underflow).
    """

    name: str = ""
    workers: Annotated[int, Field(ge=1, le=100_000)] = Field(description="Number of workers.")
    message_bytes: PositiveFloat = Field(
        description="Bytes of model update each worker receives per iteration (all shards)."
    )
    compute_time_s: NonNegFloat = Field(description="Compute phase of one iteration (seconds).")
    iterations: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        description="Number of iterations."
    )
    ps_hosts: Annotated[tuple[Annotated[int, Field(ge=0)], ...], Field(min_length=1)] = Field(
        description="Hosts holding the job's PS shards."
    )
    start_s: NonNegFloat = Field(default=0.0, description="Start of the first compute phase (s).")
    weight: Annotated[float, Field(ge=1e-9, le=1e9, allow_inf_nan=False)] = Field(
        default=1.0, description="Weight in the weighted JCT."
    )

    @model_validator(mode="after")
    def _distinct_hosts(self) -> PSJob:
        if len(set(self.ps_hosts)) != len(self.ps_hosts):
            raise InvalidInstanceError("ps_hosts", f"must be distinct, got {list(self.ps_hosts)}")
        return self


class TensorLightsInstance(Frozen):
    """Hosts and the PS jobs whose shards they hold.

    Build one with :meth:`from_dict`, :meth:`load` (JSON/TOML through the guarded loader) or
    :func:`~optsched.comm.tensorlights.generate_instance`; write it with :meth:`save`; its JSON
    Schema is :meth:`schema`. Bad data raises :class:`~optsched.errors.InvalidInstanceError`
    naming the field.

    Examples
    --------
    >>> inst = TensorLightsInstance.from_dict({
    ...     "hosts": [{"bandwidth_bytes_per_s": 1.25e9}],
    ...     "jobs": [{"workers": 4, "message_bytes": 1e8, "compute_time_s": 0.1,
    ...               "iterations": 10, "ps_hosts": [0]}]})
    >>> inst
    TensorLightsInstance(1 jobs on 1 hosts)
    >>> float(inst.alone_comm_time()[0])
    0.32
    """

    kind: Literal["tensorlights-instance"] = "tensorlights-instance"
    hosts: Annotated[tuple[NicHost, ...], Field(min_length=1)]
    jobs: Annotated[tuple[PSJob, ...], Field(min_length=1)]

    @model_validator(mode="after")
    def _hosts_exist(self) -> TensorLightsInstance:
        for j, job in enumerate(self.jobs):
            for k, h in enumerate(job.ps_hosts):
                if h >= len(self.hosts):
                    raise InvalidInstanceError(
                        f"jobs[{j}].ps_hosts[{k}]",
                        f"must be a host index in [0, {len(self.hosts)}), got {h}",
                    )
        self._check_representable()
        return self

    def _check_representable(self) -> None:
        """Refuse instances whose times or byte counts overflow or lose their resolution."""
        host_bytes = self.host_bytes()
        for h, total in enumerate(host_bytes):
            if not math.isfinite(total):
                k = max(
                    (j for j, job in enumerate(self.jobs) if h in job.ps_hosts),
                    key=lambda j: self.jobs[j].message_bytes * self.jobs[j].workers,
                )
                raise InvalidInstanceError(
                    f"jobs[{k}].message_bytes",
                    f"host {h} would send more bytes than a float can hold",
                )
        ends = [job.start_s + job.iterations * job.compute_time_s for job in self.jobs]
        late = int(np.argmax(ends))
        if not math.isfinite(ends[late]):
            job = self.jobs[late]
            field = (
                "compute_time_s"
                if not math.isfinite(job.iterations * job.compute_time_s)
                else "start_s"
            )
            raise InvalidInstanceError(
                f"jobs[{late}].{field}", "start + iterations x compute time is not a finite number"
            )
        per_host = [
            w / host.bandwidth_bytes_per_s for w, host in zip(host_bytes, self.hosts, strict=True)
        ]
        if not all(math.isfinite(t) for t in per_host):
            h = int(np.argmax(per_host))
            raise InvalidInstanceError(
                f"hosts[{h}].bandwidth_bytes_per_s",
                f"{self.hosts[h].bandwidth_bytes_per_s:g} B/s is too small: sending the host's "
                f"{host_bytes[h]:g} bytes would take longer than a float can hold",
            )
        horizon = self.horizon_bound()
        if not math.isfinite(horizon):
            raise InvalidInstanceError(
                f"jobs[{late}].start_s", "the time to finish every job is not a finite number"
            )
        tau = self.alone_comm_time()
        short = int(np.argmin(tau))
        if tau[short] < MIN_DURATION:
            raise InvalidInstanceError(
                f"jobs[{short}].message_bytes",
                f"its broadcast alone takes {tau[short]:.6g} s, under the {MIN_DURATION:g} s "
                "the simulator resolves; rescale the instance (e.g. bytes and bandwidth)",
            )
        # Name the start (or compute phases) when they, not the traffic, set the horizon.
        busy = horizon - ends[late]
        field = (
            f"jobs[{late}].start_s"
            if ends[late] >= busy and self.jobs[late].start_s >= ends[late] / 2
            else f"jobs[{late}].compute_time_s"
            if ends[late] >= busy
            else f"jobs[{short}].message_bytes"
        )
        if horizon > MAX_HORIZON:
            raise InvalidInstanceError(
                field,
                f"the horizon bound {horizon:.6g} s (starts, compute phases and all traffic) "
                f"exceeds {MAX_HORIZON:g} s; rescale the instance",
            )
        if horizon / MAX_TIME_RANGE > float(tau[short]):
            raise InvalidInstanceError(
                field,
                f"the horizon bound {horizon:.6g} s (starts, compute phases and all traffic) "
                f"exceeds {MAX_TIME_RANGE:g} times the shortest broadcast alone "
                f"({tau[short]:.6g} s, jobs[{short}]): float64 times cannot resolve it; "
                "rescale the instance",
            )
        bandwidth = max(host.bandwidth_bytes_per_s for host in self.hosts)
        if not math.isfinite(bandwidth * horizon * 4.0):
            h = int(np.argmax([host.bandwidth_bytes_per_s for host in self.hosts]))
            raise InvalidInstanceError(
                f"hosts[{h}].bandwidth_bytes_per_s",
                f"bandwidth x horizon bound ({bandwidth:g} x {horizon:g} s) overflows",
            )

    def __repr__(self) -> str:
        return f"TensorLightsInstance({self.n_jobs} jobs on {self.n_hosts} hosts)"

    def _repr_html_(self) -> str:
        return (
            f"<p>TensorLightsInstance: <b>{self.n_jobs}</b> jobs on <b>{self.n_hosts}</b> hosts, "
            f"horizon bound {self.horizon_bound():.4g} s</p>"
        )

    @property
    def n_jobs(self) -> int:
        """Number of jobs :math:`J`."""
        return len(self.jobs)

    @property
    def n_hosts(self) -> int:
        """Number of hosts :math:`H`."""
        return len(self.hosts)

    def job_names(self) -> tuple[str, ...]:
        """Job names (``job{j}`` where empty)."""
        return tuple(job.name or f"job{j}" for j, job in enumerate(self.jobs))

    def host_names(self) -> tuple[str, ...]:
        """Host names (``host{h}`` where empty)."""
        return tuple(host.name or f"host{h}" for h, host in enumerate(self.hosts))

    def n_flows(self) -> int:
        r"""Number of PS-to-worker flows :math:`F = \sum_j |S_j| n_j`."""
        return sum(len(job.ps_hosts) * job.workers for job in self.jobs)

    def alone_comm_time(self) -> np.ndarray:
        r"""Broadcast time of each job alone (s).

        :math:`\tau_j = \max_{h \in S_j} m_j n_j / (|S_j| B_h)`.
        """
        return np.array(
            [
                max(
                    job.message_bytes
                    * job.workers
                    / (len(job.ps_hosts) * self.hosts[h].bandwidth_bytes_per_s)
                    for h in job.ps_hosts
                )
                for job in self.jobs
            ]
        )

    def alone_iteration_time(self) -> np.ndarray:
        r"""Iteration time of each job alone, :math:`c_j + \tau_j` (s)."""
        return np.array([job.compute_time_s for job in self.jobs]) + self.alone_comm_time()

    def host_bytes(self) -> list[float]:
        r"""Bytes each NIC sends over the whole run.

        :math:`W_h = \sum_{j: h \in S_j} I_j n_j m_j / |S_j|`.
        """
        total = [0.0] * self.n_hosts
        for job in self.jobs:
            share = job.iterations * job.workers * (job.message_bytes / len(job.ps_hosts))
            for h in job.ps_hosts:
                total[h] += share
        return total

    def horizon_bound(self) -> float:
        r"""An upper bound :math:`T` on every completion time under any work-conserving policy.

        .. math:: T = \max_j (s_j + I_j c_j) + \sum_h W_h / B_h.

        Proof: while job :math:`j` is broadcasting, one of its hosts has an unfinished flow and,
        being work conserving, sends at full rate; so :math:`j`'s broadcasting time is at most
        the total busy time :math:`\sum_h W_h / B_h` of all NICs, and its compute time is
        :math:`I_j c_j`. Hence :math:`C_j \le s_j + I_j c_j + \sum_h W_h / B_h \le T`.
        """
        busy = math.fsum(
            w / host.bandwidth_bytes_per_s
            for w, host in zip(self.host_bytes(), self.hosts, strict=True)
        )
        return max(job.start_s + job.iterations * job.compute_time_s for job in self.jobs) + busy


def instance_schema() -> dict[str, Any]:
    """JSON Schema of a TensorLights instance file (the ``optsched schema`` hook)."""
    return TensorLightsInstance.schema()
