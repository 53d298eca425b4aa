r"""One communication-scheduling instance: a profile, a cluster and a cost model.

A :class:`CommInstance` fixes everything that determines one training iteration: the DNN
profile (a shipped name, a profile file, or the profile inline), the number of data-parallel
workers, the per-link bandwidth (Gbit/s), the per-hop latency and per-call overhead (us), the
forward execution order, the optimizer update rate and PACE's fusion buffer. It is a frozen,
validated file format (``load``/``save``/``schema``) like every optsched instance.

Units: times in ms (latency and overhead in us, as quoted for links), bandwidths in Gbit/s
(:math:`10^9` bit/s), sizes in bytes with ``MB`` = :math:`10^6` bytes.

Limits (documented budgets, checked **before** any quadratic or cubic work):

* every field is finite and within the bounds of its declaration (bandwidth at least
  :data:`MIN_BANDWIDTH_GBPS`, times at most :data:`MAX_US`);
* the *horizon* :math:`H = \Phi_0 + n\,a + \beta\,B` (compute, one call per tensor, every byte
  once) bounds the iteration time of every policy's schedule; it must stay below
  :data:`MAX_HORIZON_MS`, so every derived time is finite and float64 keeps sub-microsecond
  resolution;
* the derived sizes of the fusion DP (:math:`(n+1)^2` cells, :math:`n(n+1)(n+2)/6` inner steps)
  and of the LP (:math:`2n^2` variables) are checked against
  :mod:`optsched.limits` budgets by :func:`check_budgets`.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, field_validator

from optsched._validation import Frozen, parse
from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import IterationDAG, build_dag
from optsched.errors import InvalidInstanceError
from optsched.limits import check_size
from optsched.profiles import Profile, load_profile

__all__ = [
    "MAX_HORIZON_MS",
    "MAX_US",
    "MIN_BANDWIDTH_GBPS",
    "CommInstance",
    "check_budgets",
    "instance_schema",
]

#: Smallest bandwidth accepted (Gbit/s): 1 kbit/s.
MIN_BANDWIDTH_GBPS = 1e-6
#: Largest bandwidth accepted (Gbit/s): 1 Pbit/s.
MAX_BANDWIDTH_GBPS = 1e6
#: Largest latency or per-call overhead (us): 10^9 us = 16.7 minutes per call.
MAX_US = 1e9
#: Largest horizon (ms) an instance may imply: 10^15 ms keeps float64 time resolution finer
#: than 0.25 ms at the horizon and every simulator tick count below 2^53.
MAX_HORIZON_MS = 1e15

Finite = Annotated[float, Field(allow_inf_nan=False)]


class CommInstance(Frozen):
    """One data-parallel training iteration to schedule.

    Attributes
    ----------
    kind : "comm-instance"
        File-format tag (what ``optsched validate`` dispatches on).
    profile : str or Profile
        A shipped profile name (``"resnet50"``), a path to a profile file (relative paths are
        resolved against the instance file when loaded from one), or the profile inline.
    workers : int
        Data-parallel workers (ring all-reduce), 1 to 10^6.
    bandwidth_gbps : float
        Per-link bandwidth in Gbit/s.
    latency_us : float
        Per-hop latency in microseconds.
    overhead_us : float
        Fixed overhead of every all-reduce call (the per-partition overhead), microseconds.
    reduce_gbps : float or None
        Throughput of the reduction arithmetic (Gbit/s); ``None`` ignores it.
    order : "profile", "kahn" or list of layer names
        Forward execution order (:func:`~optsched.comm.pace.dag.execution_order`).
    update_ms_per_mb : float
        Optimizer update time per MB (10^6 bytes) of parameters; 0 leaves updates out.
    max_group_mb : float or None
        PACE's fusion buffer (MB); ``None`` = unlimited.
    max_group_tensors : int or None
        Limit on tensors per fused group.
    """

    kind: Literal["comm-instance"] = "comm-instance"
    profile: str | Profile = Field(description="Shipped profile name, profile file, or inline.")
    workers: int = Field(default=8, ge=1, le=10**6, description="Data-parallel workers.")
    bandwidth_gbps: Finite = Field(
        default=10.0,
        ge=MIN_BANDWIDTH_GBPS,
        le=MAX_BANDWIDTH_GBPS,
        description="Per-link bandwidth (Gbit/s).",
    )
    latency_us: Finite = Field(default=5.0, ge=0, le=MAX_US, description="Per-hop latency (us).")
    overhead_us: Finite = Field(default=0.0, ge=0, le=MAX_US, description="Per-call overhead.")
    reduce_gbps: Finite | None = Field(default=None, ge=MIN_BANDWIDTH_GBPS, le=MAX_BANDWIDTH_GBPS)
    order: Literal["profile", "kahn"] | tuple[str, ...] = "profile"
    update_ms_per_mb: Finite = Field(default=0.0, ge=0, le=1e6)
    max_group_mb: Finite | None = Field(default=64.0, gt=0, le=1e12)
    max_group_tensors: int | None = Field(default=None, ge=1)

    @field_validator("profile", mode="before")
    @classmethod
    def _one_profile(cls, value: Any) -> Any:
        # Resolve the union here, so that an error names the profile's own field
        # (``profile.layers[0].backward_ms``), never a union branch.
        if isinstance(value, dict):
            return parse(Profile, value)
        if not isinstance(value, (str, Profile)):
            raise ValueError(
                f"must be a profile name, a profile file or a profile table, got "
                f"{type(value).__name__}"
            )
        return value

    @field_validator("order", mode="before")
    @classmethod
    def _one_order(cls, value: Any) -> Any:
        # As for the profile: one message on "order", not one per branch of the union.
        if isinstance(value, str):
            if value not in ("profile", "kahn"):
                raise ValueError(
                    f"must be 'profile', 'kahn' or a list of layer names, got {value!r}"
                )
            return value
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ValueError(f"must be 'profile', 'kahn' or a list of layer names, got {value!r}")

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read an instance file; a relative profile path is taken from the file's folder."""
        inst = super().load(path)
        if isinstance(inst.profile, str):
            candidate = Path(path).parent / inst.profile
            if not Path(inst.profile).is_absolute() and candidate.is_file():
                return inst.model_copy(update={"profile": str(candidate)})
        return inst

    # -- derived objects ------------------------------------------------------------------

    @cached_property
    def resolved_profile(self) -> Profile:
        """The profile (loaded through the guarded loader when given by name or path)."""
        if isinstance(self.profile, Profile):
            return self.profile
        try:
            return load_profile(self.profile)
        except InvalidInstanceError as exc:
            if exc.file is None and exc.field == "model":
                raise InvalidInstanceError("profile", exc.message) from None
            raise

    @cached_property
    def cost(self) -> CostModel:
        """The ring all-reduce cost model of these workers and links."""
        return CostModel.ring(
            self.workers,
            self.bandwidth_gbps,
            self.latency_us,
            overhead_us=self.overhead_us,
            reduce_gbps=self.reduce_gbps,
        )

    @cached_property
    def dag(self) -> IterationDAG:
        """The iteration DAG, after the horizon check."""
        order = None if self.order == "profile" else self.order
        dag = build_dag(
            self.resolved_profile,
            order=list(order) if isinstance(order, tuple) else order,
            update_ms_per_mb=self.update_ms_per_mb,
        )
        _check_horizon(dag, self.cost, self.update_ms_per_mb)
        return dag

    @property
    def horizon_ms(self) -> float:
        r"""Upper bound :math:`\Phi_0 + n\,a + \beta B` on every policy's iteration time (ms).

        Every schedule issues at most one call per piece; a policy that slices tensors pays
        more calls, which the slicing budget bounds separately.
        """
        dag = self.dag
        return (
            dag.compute_ms
            + dag.n_tensors * self.cost.alpha_ms
            + (self.cost.beta_ms_per_byte * dag.total_bytes)
        )

    def profile_digest(self) -> str:
        """SHA-256 of the resolved profile's canonical JSON (identifies file-given profiles)."""
        text = json.dumps(self.resolved_profile.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def summary(self) -> dict[str, Any]:
        """JSON-ready headline figures."""
        dag = self.dag
        return {
            "profile": self.resolved_profile.name,
            "workers": self.workers,
            "bandwidth_gbps": self.bandwidth_gbps,
            "latency_us": self.latency_us,
            "overhead_us": self.overhead_us,
            "tensors": dag.n_tensors,
            "layers": len(dag.layers),
            "total_bytes": dag.total_bytes,
            "compute_ms": dag.compute_ms,
            "horizon_ms": self.horizon_ms,
            "cost_model": self.cost.to_dict(),
        }

    def __repr__(self) -> str:
        name = self.profile.name if isinstance(self.profile, Profile) else self.profile
        return (
            f"CommInstance({name!r}, workers={self.workers}, "
            f"bandwidth_gbps={self.bandwidth_gbps:g}, latency_us={self.latency_us:g})"
        )

    __str__ = __repr__

    def _repr_html_(self) -> str:
        import html

        fields = {k: v for k, v in self.model_dump().items() if k != "profile"}
        rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in {"profile": repr(self).split("(")[1].split(",")[0], **fields}.items()
        )
        return f"<table><caption>CommInstance</caption>{rows}</table>"


def _check_horizon(dag: IterationDAG, cost: CostModel, update_ms_per_mb: float) -> None:
    comm = dag.n_tensors * cost.alpha_ms + cost.beta_ms_per_byte * dag.total_bytes
    total = dag.compute_ms + comm
    if total <= MAX_HORIZON_MS:
        return
    if dag.compute_ms > MAX_HORIZON_MS / 2:
        field = "update_ms_per_mb" if update_ms_per_mb > 0 else "profile"
    elif cost.beta_ms_per_byte * dag.total_bytes >= dag.n_tensors * cost.alpha_ms:
        field = "bandwidth_gbps"
    else:
        field = "latency_us"
    raise InvalidInstanceError(
        field,
        f"implies an iteration horizon of {total:.6g} ms (compute {dag.compute_ms:.6g} ms, "
        f"communication {comm:.6g} ms), over the limit {MAX_HORIZON_MS:g} ms",
    )


def check_budgets(n_tensors: int, *, lp: bool = False, field: str = "profile") -> None:
    r"""Refuse a fusion DP (and LP) too large for the size budgets, before allocating it.

    The fusion DP allocates two :math:`(n+1) \times (n+1)` tables and runs
    :math:`n(n+1)(n+2)/6` inner steps (``max_array_cells`` and ``max_events``); the LP has at
    most :math:`2n^2` variables (``max_model_variables``). With the default budgets the DP
    takes up to about 1,060 tensors (every shipped profile has fewer than 500).

    Raises
    ------
    InvalidInstanceError
        Naming ``field`` and the budget to raise.
    """
    n = float(n_tensors)
    check_size(field, 2 * (n + 1) ** 2, "max_array_cells", "fusion-DP table cells")
    check_size(field, n * (n + 1) * (n + 2) / 6, "max_events", "fusion-DP steps")
    if lp:
        check_size(field, 2 * n * n, "max_model_variables", "LP variables")


def instance_schema() -> dict[str, Any]:
    """JSON Schema of a communication-scheduling instance file."""
    return CommInstance.schema()
